"""``python -m core train --task=reverse --steps=2000 …``: every field of :class:`TrainConfig` is a flag."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from dataclasses import Field, fields, replace
from typing import Any, Callable

from core.io.checkpoint import CheckpointError
from core.training.config import TrainConfig
from core.training.trainer import train

log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None) -> tuple[TrainConfig, bool]:
    """(the config, whether to resume) from ``--field=value`` flags, each coerced by its field's type."""
    parser = argparse.ArgumentParser(prog="python -m core train",
                                     description="Train a Transformer on a built-in task.")
    parser.add_argument("--resume", action="store_true", help="continue from the run's saved state")
    for f in fields(TrainConfig):
        parser.add_argument(f"--{f.name}", type=_coercer(str(f.type)), default=f.default, metavar=_metavar(f),
                            help=f"{f.metadata['help']} (default: {f.default})")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    return replace(TrainConfig(), **args), resume


def _metavar(f: Field) -> str:
    """What the flag takes, as its type names it (``INT``, ``FLOAT|NONE``, ``TRUE|FALSE``)."""
    return str(f.type).replace("bool", "true|false").replace(" | ", "|").upper()


def _coercer(annotation: str) -> Callable[[str], Any]:
    base = annotation.replace(" | None", "")
    convert = {"int": int, "float": float, "str": str,
               "bool": lambda s: {"true": True, "false": False}[s.lower()]}[base]

    def parse(text: str) -> Any:
        if "None" in annotation and text.lower() == "none":
            return None
        try:
            return convert(text)
        except (KeyError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {base}, got {text!r}") from None

    return parse


def stop_on_signals() -> Callable[[], bool]:
    """Make the first Ctrl-C (SIGINT) or SIGTERM ask the run to stop after its current step, so it validates and
    writes its checkpoint as a finished run does; a second signal ends the process at once."""
    asked = threading.Event()

    def ask(signum: int, _frame: object) -> None:
        log.warning("stopping after this step (%s): the checkpoint will be written; again to end at once",
                    signal.Signals(signum).name)
        asked.set()
        for name in (signal.SIGINT, signal.SIGTERM):
            signal.signal(name, signal.SIG_DFL)

    for name in (signal.SIGINT, signal.SIGTERM):
        signal.signal(name, ask)
    return asked.is_set


def main(argv: list[str] | None = None) -> int:
    """CLI entry point: ``python -m core train --task=reverse --steps=2000 …`` (``--help`` lists every flag)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        config, resume = parse_args(argv)
        result = train(config, resume=resume, should_stop=stop_on_signals())
    except (ValueError, CheckpointError) as error:
        log.error("error: %s", error)
        return 2
    if result.main:  # under torchrun the other ranks have no metrics: the line is written once
        log.info("%s after %d steps (%s): %s", result.checkpoint, result.step, result.stopped, result.metrics)
    return 0
