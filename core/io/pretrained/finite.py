"""Non-finite weights (NaN, ±Inf) refused at the model's first use, not at its load.

A loaded folder's weights are views of the safetensors memory maps: reading every one of them to check it is
finite would read the whole file at load (a 1 B model's 2 GB), where ``transformers`` reads nothing until the
first forward. :func:`check_on_first_use` defers that check: the first call of any of the model's modules
(its forward, or a part of it called alone) checks every weight first, and a model holding a NaN or an
infinity raises the loader's own one-line :class:`~core.io.checkpoint.CheckpointError`, naming the tensors,
before anything is computed: no map, logit or hidden state of such a model is ever returned. A model that
passes is checked once; its hooks are removed and cost nothing afterwards. :func:`ensure_finite` runs the
check now (an upload's worker process does, so that the upload itself is refused).
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from core.io.checkpoint import CheckpointError

log = logging.getLogger(__name__)
_CHECK = "_attnscope_finite_check"  # the attribute holding a model's pending check


def non_finite(weights: dict[str, Tensor]) -> list[str]:
    """Names of the tensors holding NaN or ±Inf, sorted.

    A sum is NaN or ±Inf whenever an element is, and it reads the memory once without the
    bool copy ``isfinite`` makes; only tensors whose sum is not finite are checked element-wise.
    """
    suspects = [k for k, v in weights.items() if v.is_floating_point() and not torch.isfinite(v.sum())]
    return sorted(k for k in suspects if not torch.isfinite(weights[k]).all())


def refusal(name: str, bad: list[str]) -> str:
    """The loader's one line for a model ``name`` whose tensors ``bad`` are not finite."""
    return f"{name} has non-finite weights (NaN or Inf) in {', '.join(bad[:5])}"


class _FirstUseCheck:
    """A forward pre-hook on every module of one model: the first call checks all its weights."""

    def __init__(self, model: nn.Module, name: str) -> None:
        self.model = weakref.ref(model)  # the hooks live in the model's modules: no reference cycle
        self.name = name
        self.bad: list[str] | None = None  # None: not checked yet
        self.handles: list[RemovableHandle] = []

    def __call__(self, module: nn.Module, args: Any) -> None:
        self.run()

    def run(self) -> None:
        """Check now unless done; raise the refusal for a model found non-finite (every time it is called)."""
        model = self.model()
        if self.bad is None and model is not None:
            self.bad = non_finite(model.state_dict(keep_vars=True))
            if not self.bad:
                for handle in self.handles:
                    handle.remove()
                model.__dict__.pop(_CHECK, None)
                log.debug("%s: every weight is finite", self.name)
        if self.bad:
            raise CheckpointError(refusal(self.name, self.bad))


def check_on_first_use(model: nn.Module, name: str) -> None:
    """Check ``model``'s weights for NaN and ±Inf the first time any of its modules is called; a model that
    holds one raises ``CheckpointError`` (:func:`refusal`: ``name`` and the tensors) from that call and every
    later one, before the module computes anything."""
    check = _FirstUseCheck(model, name)
    check.handles = [module.register_forward_pre_hook(check) for module in model.modules()]
    model.__dict__[_CHECK] = check  # not a submodule, not a parameter: invisible to state_dict and .to()


def ensure_finite(model: nn.Module) -> None:
    """Run ``model``'s pending check now (nothing when it has none or has passed it).

    Raises:
        CheckpointError: a weight is NaN or ±Inf (the loader's one line, naming the tensors).
    """
    check = model.__dict__.get(_CHECK)
    if check is not None:
        check.run()
