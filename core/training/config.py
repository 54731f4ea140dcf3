"""`TrainConfig`: everything a training run needs (every field is a ``--flag`` of :mod:`core.cli.train`).

The model's own settings are not restated here: the size fields (``d_model``, ``n_heads``,
``d_ff``; ``None`` = the preset's) and the flags (``dropout``, ``norm``, ``positional``, ``score``,
``tie_embeddings``) are taken from :class:`ModelConfig`'s fields, with its types and defaults.
``n_layers`` sets the depth of both stacks.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, fields
from typing import Any

from core.config import ModelConfig
from core.budget import check_budget
from core.device import resolve_device
from core.tasks import TRAINABLE, get_task
from core.training.setup import PRESETS
from core.training.step import SCHEDULES, StepRecipe

PRESET_SIZES = ("d_model", "n_heads", "d_ff")  # ModelConfig fields a preset sets (with n_layers)
MODEL_FLAGS = ("dropout", "norm", "positional", "score", "tie_embeddings")  # ModelConfig fields set as they are
MODEL_HELP = {
    "d_model": "model width; none = the preset's", "n_heads": "attention heads per layer; none = the preset's",
    "d_ff": "feed-forward hidden width; none = the preset's", "dropout": "dropout probability",
    "norm": "post (Add & Norm after each sublayer, the paper) or pre (LayerNorm before it)",
    "positional": "sinusoidal (the paper), learned or none",
    "score": "attention score: scaled_dot (the paper), dot, general or additive",
    "tie_embeddings": "share the decoder's input embedding with its output projection",
}


def _flag(default: Any, help: str) -> Any:
    """A field with its ``--help`` line in its metadata (the CLI adds the default)."""
    return field(default=default, metadata={"help": help})


def _with_model_fields(cls: type) -> type:
    """Insert :data:`PRESET_SIZES` (``int | None``, default None) and :data:`MODEL_FLAGS` (ModelConfig's
    type and default, help from :data:`MODEL_HELP`) as fields right after ``n_layers``."""
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
        setattr(cls, name, _flag(None if name in PRESET_SIZES else model[name].default, MODEL_HELP[name]))
    return cls


@dataclass(frozen=True)
@_with_model_fields
class TrainConfig:
    """Everything a training run needs; every field is a ``--flag`` of the CLI."""

    task: str = _flag("reverse", f"the built-in task: {', '.join(TRAINABLE)}")
    out: str = _flag("runs/reverse.safetensors", "where the checkpoint is written")
    seed: int = _flag(0, "seed of the data split, the initial weights and the batches")
    steps: int = _flag(2000, "optimizer steps to take")
    batch_size: int = _flag(64, "examples per micro-batch (per process under torchrun)")
    grad_accum: int = _flag(1, "micro-batches whose gradients add up to one step")
    schedule: str = _flag("noam", "learning-rate schedule: noam (the paper's warm-up) or constant")
    lr: float = _flag(1.0, "the Noam factor, or the constant learning rate")
    warmup: int = _flag(400, "Noam warm-up steps before the rate starts to fall")
    label_smoothing: float = _flag(0.1, "probability spread over the other tokens (the paper: 0.1)")
    clip_norm: float = _flag(1.0, "largest gradient norm; larger gradients are scaled down")
    eval_every: int = _flag(250, "steps between validations")
    save_every: int = _flag(500, "steps between resume states")
    snapshot_every: int = _flag(100, "steps between attention snapshots of the probe input")
    patience: int = _flag(0, "validations without improvement before stopping; 0 = never")
    stop_at: float | None = _flag(None, "stop once the validation metric reaches this; none = never")
    preset: str = _flag("small", "model size: tiny, small, medium or base (the paper's base model)")
    n_layers: int | None = _flag(None, "layers in each stack; none = the preset's")
    train_size: int | None = _flag(None, "training examples; none = the task's default split sizes")
    device: str = _flag("auto", "auto, cpu, cuda, cuda:N or mps")
    compile: bool = _flag(False, "run the step through torch.compile")
    progress: bool = _flag(True, "show a progress bar")

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
