"""Resume state: everything needed to continue a run exactly, saved beside its checkpoint.

The file is an ordinary Attnscope checkpoint (safetensors, checksummed, no pickle)
whose extra tensors hold the optimizer's moments and the torch RNG state, and whose
metadata holds the step, the history and the run's settings. Only the trainer's own
``<run>.train-state.safetensors`` next to the run's checkpoint is ever read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from core.io.checkpoint import Checkpoint, CheckpointError, load, save
from core.model.transformer import Transformer
from core.text.tokenizer import Tokenizer

_OPTIM = "optim/"
_RNG = "rng/torch"
CHECKPOINT_SUFFIX = ".safetensors"  # one safetensors file per checkpoint
_SUFFIX = ".train-state.safetensors"


def resume_state_path(checkpoint_path: str | Path) -> Path:
    """Where the resume state of the run writing ``checkpoint_path`` lives (beside it)."""
    path = Path(checkpoint_path)
    return path.with_name(path.stem + _SUFFIX)


def is_resume_state(path: str | Path) -> bool:
    """Whether ``path`` names a run's resume state rather than a checkpoint to explore."""
    return Path(path).name.endswith(_SUFFIX)


def run_checkpoint_path(folder: str | Path, name: str) -> Path:
    """Where the checkpoint of the run called ``name`` lives in ``folder``."""
    return Path(folder) / f"{name}{CHECKPOINT_SUFFIX}"


def run_checkpoints(folder: str | Path) -> list[Path]:
    """The checkpoint files in ``folder`` (resume states left out), sorted by name."""
    return [p for p in sorted(Path(folder).glob(f"*{CHECKPOINT_SUFFIX}")) if not is_resume_state(p)]


@dataclass(frozen=True)
class ResumeState:
    """A loaded resume state."""

    checkpoint: Checkpoint
    step: int
    run: dict[str, Any]
    optimizer: dict[str, Any]


def save_state(
    path: Path, model: Transformer, tokenizers: dict[str, Tokenizer], optimizer: torch.optim.Optimizer,
    *, task: str, step: int, run: dict[str, Any], extra_tensors: dict[str, Tensor],
) -> None:
    """Write the resume state atomically (model, optimizer, RNG, step, run record)."""
    opt = optimizer.state_dict()
    tensors = dict(extra_tensors)
    for index, slots in opt["state"].items():
        for name, value in slots.items():
            tensors[f"{_OPTIM}{index}/{name}"] = value
    tensors[_RNG] = torch.get_rng_state()
    save(path, model, tokenizers, task=task,
         extra={"train_state": {"step": step, "param_groups": opt["param_groups"]}, **run},
         extra_tensors=tensors)


def load_state(path: Path, device: torch.device) -> ResumeState:
    """Read a resume state written by :func:`save_state`.

    Everything is parsed and checked before the global RNG is touched.

    Raises:
        CheckpointError: missing, damaged, or not a resume state (one clear line, naming the file).
    """
    ckpt = load(path, device)
    try:
        state: dict[int, dict[str, Tensor]] = {}
        for key, value in ckpt.extra_tensors.items():
            if key.startswith(_OPTIM):
                index, name = key[len(_OPTIM):].split("/", 1)
                state.setdefault(int(index), {})[name] = value.to(device) if name != "step" else value
        record = ckpt.info.extra["train_state"]
        groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in record["param_groups"]]
        step, rng = int(record["step"]), ckpt.extra_tensors[_RNG]
        if step < 0 or rng.dtype != torch.uint8 or rng.dim() != 1:
            raise ValueError("bad step or RNG state")
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as error:
        cause = f"{type(error).__name__}: {str(error)[:200]}"
        raise CheckpointError(f"{Path(path).name} is not a usable resume state ({cause}); "
                              "delete it to start the run afresh") from None
    try:
        torch.set_rng_state(rng)
    except RuntimeError as error:
        raise CheckpointError(f"{Path(path).name} has an invalid RNG state ({error})") from None
    run = {k: v for k, v in ckpt.info.extra.items() if k != "train_state"}
    return ResumeState(ckpt, step, run, {"state": state, "param_groups": groups})
