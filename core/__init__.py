"""Attnscope core: a Transformer that returns every head's attention alongside its predictions.

The public API (the app uses nothing else)::

    from core import ModelConfig, Transformer, explain, load_checkpoint

Names are imported lazily, so ``import core.tasks`` stays light and
``python -m core.explain`` / ``python -m core.train`` run their module only once.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_EXPORTS = {
    "core.analysis": ("difference", "head_entropy", "head_statistics", "knockout_mask", "max_weight",
                      "mean_distance", "mean_over_heads", "rollout", "rollout_by_layer"),
    "core.attention": ("MultiHeadAttention", "attention", "attention_weights"),
    "core.checkpoint": ("Checkpoint", "CheckpointError", "CheckpointInfo", "read_info"),
    "core.config": ("ModelConfig",),
    "core.decode": ("Generation", "beam_search", "greedy", "sample"),
    "core.device": ("available_devices", "resolve_device"),
    "core.evaluate": ("evaluate",),
    "core.explain": ("ExplainOptions", "explain", "explain_batch"),
    "core.masks": ("combine_masks", "padding_mask", "subsequent_mask"),
    "core.model": ("KINDS", "AttentionControls", "ModelOutput", "Transformer"),
    "core.objectives": ("noam_lr", "smoothed_targets", "smoothed_loss"),
    "core.positional": ("sinusoidal_encoding",),
    "core.records": ("KIND_LABELS", "Explanation", "Prediction"),
    "core.snapshots": ("snapshot_maps",),
    "core.tasks": ("TASKS", "get_task"),
    "core.tokenizer": ("SPECIAL_TOKENS", "Encoding", "Tokenizer"),
    "core.train": ("StepInfo", "TrainConfig", "TrainResult", "train"),
    "core.train_setup": ("PRESETS",),
}
_ALIASES = {"load_checkpoint": ("core.checkpoint", "load"), "save_checkpoint": ("core.checkpoint", "save")}
_WHERE = {name: (module, name) for module, names in _EXPORTS.items() for name in names} | _ALIASES

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    module, attribute = _WHERE[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


class _CoreModule(types.ModuleType):
    """Keeps ``core.explain`` / ``core.train`` / ``core.evaluate`` the functions: importing the
    submodule of the same name must not replace the exported function on the package."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CoreModule
