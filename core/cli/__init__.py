"""``python -m core COMMAND …``: every command-line tool in one place.

- ``train``    train a model on a built-in task (:mod:`core.cli.train`)
- ``evaluate`` re-measure checkpoints on their held-out split (:mod:`core.cli.evaluate`)
- ``report``   a checkpoint's accuracy per input length, greedy and beam (:mod:`core.cli.report`)
- ``coverage`` set and score the translation's "not translated?" flag (:mod:`core.cli.coverage`)
- ``explain``  print a model's prediction and each head's most-attended key (below)
- ``import``   turn a PyTorch ``nn.Transformer`` state dict into a checkpoint (:mod:`core.cli.import_command`)

Layers and heads are numbered from 1, as on every page of the app.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from tqdm import tqdm

from core.inspect.explainer import explain
from core.io.pretrained.progress import loading_progress
from core.inspect.options import DECODINGS
from core.inspect.records import Explanation
from core.io.checkpoint import CheckpointError
from core.cli import coverage, evaluate, import_command, report, train


def summary(explanation: Explanation) -> str:
    """The prediction, the notes, and for every layer and head each query's most-attended key."""
    lines = [f"prediction: {explanation.prediction.text!r}"]
    for label, prob in zip(explanation.prediction.labels, explanation.prediction.probabilities):
        lines.append(f"  {label!r}: {prob:.3f}")
    lines.extend(f"note: {n}" for n in explanation.notes)
    for kind in explanation.kinds:
        queries, keys = explanation.axis_tokens(kind)
        maps = explanation.attention[kind]  # (L, H, Tq, Tk)
        lines.append(f"{kind} attention — each query token → the key it attends to most:")
        for layer in range(maps.shape[0]):
            for head in range(maps.shape[1]):
                best = maps[layer, head].argmax(-1)  # (Tq,)
                pairs = " ".join(f"{q}→{keys[k]}" for q, k in zip(queries, best))
                lines.append(f"  layer {layer + 1} head {head + 1}: {pairs}")
    return "\n".join(lines)


def explain_main(argv: list[str] | None = None) -> int:
    """``python -m core explain MODEL TEXT``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m core explain",
                                     description="Print a model's prediction and each head's most-attended key.")
    parser.add_argument("model", help="a .safetensors checkpoint, a Hugging Face model folder or a .gguf file")
    parser.add_argument("text", help="the input sentence")
    parser.add_argument("--decoding", choices=DECODINGS, default="greedy",
                        help="how the decoder picks each output token (default: greedy)")
    parser.add_argument("--continuation", type=int, default=0, metavar="N",
                        help="tokens a language model adds after the text (default: 0)")
    args = parser.parse_args(argv)
    bar = _LoadingBar()
    try:
        with loading_progress(bar.update):
            result = explain(args.model, args.text, decoding=args.decoding, continuation=args.continuation)
    except (CheckpointError, ValueError) as error:
        bar.close()  # the bar's line ended first: the error is a line of its own
        sys.stderr.write(f"error: {error}\n")
        return 2
    finally:
        bar.close()
    sys.stdout.write(summary(result) + "\n")
    return 0


class _LoadingBar:
    """A ``tqdm`` bar on stderr for a pretrained model's weights, drawn from the first bytes read."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = tqdm(total=total, unit="B", unit_scale=True, desc="loading weights", file=sys.stderr)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


COMMANDS: dict[str, Callable[[list[str] | None], int]] = {
    "train": train.main,
    "evaluate": evaluate.main,
    "report": report.main,
    "coverage": coverage.main,
    "explain": explain_main,
    "import": import_command.main,
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to its command; print the list of commands otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(__doc__.split("\n\n", 1)[1] if args and args[0] in ("-h", "--help") else
                         f"usage: python -m core {{{','.join(COMMANDS)}}} …\n")
        return 0 if args and args[0] in ("-h", "--help") else 2
    return COMMANDS[args[0]](args[1:])
