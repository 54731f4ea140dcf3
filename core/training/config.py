"""`TrainConfig`: everything a training run needs, and its command line (every field is a ``--flag``).

The model's own settings are not restated here: the size fields (``d_model``, ``n_heads``,
``d_ff``; ``None`` = the preset's) and the flags (``dropout``, ``norm``, ``positional``, ``score``,
``tie_embeddings``) are taken from :class:`ModelConfig`'s fields, with its types and defaults.
``n_layers`` sets the depth of both stacks.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, fields, replace
from typing import Any, Callable

from core.config import ModelConfig
from core.budget import check_budget
from core.device import resolve_device
from core.tasks import get_task
from core.training.setup import PRESETS
from core.training.step import SCHEDULES, StepRecipe

PRESET_SIZES = ("d_model", "n_heads", "d_ff")  # ModelConfig fields a preset sets (with n_layers)
MODEL_FLAGS = ("dropout", "norm", "positional", "score", "tie_embeddings")  # ModelConfig fields set as they are


def _with_model_fields(cls: type) -> type:
    """Insert :data:`PRESET_SIZES` (``int | None``, default None) and :data:`MODEL_FLAGS` (ModelConfig's
    type and default) as fields right after ``n_layers``."""
    model = {f.name: f for f in fields(ModelConfig)}
    derived = {name: f"{model[name].type} | None" for name in PRESET_SIZES}
    derived.update({name: model[name].type for name in MODEL_FLAGS})
    annotations: dict[str, Any] = {}
    for name, annotation in cls.__annotations__.items():
        annotations[name] = annotation
        if name == "n_layers":
            annotations.update(derived)
    cls.__annotations__ = annotations
    for name in derived:
        setattr(cls, name, None if name in PRESET_SIZES else model[name].default)
    return cls


@dataclass(frozen=True)
@_with_model_fields
class TrainConfig:
    """Everything a training run needs; every field is a ``--flag`` of the CLI."""

    task: str = "reverse"
    out: str = "runs/reverse.safetensors"
    seed: int = 0
    steps: int = 2000
    batch_size: int = 64
    grad_accum: int = 1
    schedule: str = "noam"  # "noam" (the paper's warm-up) or "constant"
    lr: float = 1.0  # the Noam factor, or the constant learning rate
    warmup: int = 400
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    eval_every: int = 250
    save_every: int = 500
    snapshot_every: int = 100
    patience: int = 0  # evaluations without improvement before stopping; 0 = never
    stop_at: float | None = None  # stop once the validation metric reaches this
    preset: str = "small"
    n_layers: int | None = None  # None = the preset's; then ModelConfig's sizes and flags (see above)
    train_size: int | None = None  # None = the task's default split sizes
    device: str = "auto"
    compile: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        get_task(self.task)
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}; got {self.preset!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be 'noam' or 'constant'; got {self.schedule!r}")
        for name in ("steps", "batch_size", "grad_accum", "warmup", "eval_every", "save_every", "snapshot_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("label_smoothing must be in [0, 1)")

    def architecture(self) -> dict[str, int]:
        """The preset's sizes (``n_layers``, ``d_model``, ``n_heads``, ``d_ff``) with any explicit overrides."""
        sizes = dict(PRESETS[self.preset])
        sizes.update({k: getattr(self, k) for k in sizes if getattr(self, k) is not None})
        return sizes

    def model_options(self) -> dict[str, Any]:
        """The :class:`ModelConfig` fields this run sets (``n_layers`` as both stacks' depth)."""
        sizes = self.architecture()
        layers = sizes.pop("n_layers")
        return {"n_encoder_layers": layers, "n_decoder_layers": layers, **sizes,
                **{name: getattr(self, name) for name in MODEL_FLAGS}}

    def recipe(self, d_model: int, pad_id: int | None) -> StepRecipe:
        """How this run takes each optimizer step, for a model of width ``d_model``."""
        return StepRecipe(d_model=d_model, schedule=self.schedule, lr=self.lr, warmup=self.warmup,
                          label_smoothing=self.label_smoothing, clip_norm=self.clip_norm, pad_id=pad_id)

    def check(self) -> None:
        """Refuse, before anything runs, a model the task cannot build or a device this machine lacks.

        Raises:
            ValueError: with a message for the user.
        """
        task = get_task(self.task)
        for name, value in self.architecture().items():
            if value < 1:
                raise ValueError(f"{name} must be at least 1")
        vocab = {"src_vocab_size": 8 if task.architecture != "decoder" else 0,
                 "tgt_vocab_size": 8 if task.architecture != "encoder" else 0}
        model = ModelConfig(architecture=task.architecture, n_classes=len(task.labels or ()), **vocab,
                            **self.model_options())
        check_budget(model)  # never train a model the app would refuse to open
        resolve_device(self.device)

    def command(self) -> str:
        """The CLI command that reproduces this run."""
        default = TrainConfig()
        flags = [f"--{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if getattr(self, f.name) != getattr(default, f.name) or f.name in ("task", "out")]
        return "python -m core train " + " ".join(shlex.quote(f) for f in flags)


def parse_args(argv: list[str] | None) -> tuple[TrainConfig, bool]:
    """(the config, whether to resume) from ``--field=value`` flags, each coerced by its field's type."""
    parser = argparse.ArgumentParser(prog="python -m core train",
                                     description="Train a Transformer on a built-in task.")
    parser.add_argument("--resume", action="store_true", help="continue from the run's saved state")
    for f in fields(TrainConfig):
        parser.add_argument(f"--{f.name}", type=_coercer(str(f.type)), default=f.default,
                            help=f"default: {f.default}")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    return replace(TrainConfig(), **args), resume


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
