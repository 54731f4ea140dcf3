"""Put converted pretrained weights into a freshly built model, checking their names and shapes first (and
their values at the model's first use: :mod:`core.io.pretrained.finite`)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import torch
from torch import Tensor, nn
from torch.nn.modules.module import register_module_module_registration_hook

from core.io.checkpoint import CheckpointError
from core.io.pretrained.finite import check_on_first_use

M = TypeVar("M", bound=nn.Module)


def assign_weights(build: Callable[[], M], weights: dict[str, Tensor], name: str) -> M:
    """``build()`` on the meta device, then ``weights`` assigned to it (strict), in eval mode.

    The model is built without memory or random initialisation; tensors shared in the
    built model (tied embeddings) stay shared when ``weights`` gives both names one tensor.

    A config claiming far more layers than the weights hold (100,000 layers beside one) is
    refused while it is being built: at most four submodules per weight tensor may be created.

    Its weights are checked for NaN and ±Inf at its first call (:func:`~core.io.pretrained.finite.check_on_first_use`):
    a model holding one raises ``CheckpointError`` from that call, before computing anything.

    Raises:
        CheckpointError: too many modules for the weights, or names or shapes that differ from the model's.
    """
    with torch.device("meta"), _module_limit(4 * len(weights) + 64, name):
        model = build()
    expected = {k: tuple(v.shape) for k, v in model.state_dict(keep_vars=True).items()}
    found = {k: tuple(v.shape) for k, v in weights.items()}
    if expected != found:
        missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
        wrong = [(k, found[k], expected[k]) for k in expected if k in found and found[k] != expected[k]]
        raise CheckpointError(f"{name} does not match its configuration: missing {missing[:4]}, "
                              f"unexpected {extra[:4]}, wrong shapes {wrong[:3]}")
    tied = _tied_names(model)
    model.load_state_dict(weights, strict=True, assign=True)
    for first, other in tied:  # assign=True gave each name its own parameter: share them again
        owner, attr = _owner(model, other)
        setattr(owner, attr, _owner_param(model, first))
    check_on_first_use(model, name)  # a full read of the weights now would read the whole memory-mapped file
    return model.eval()


def _tied_names(model: nn.Module) -> list[tuple[str, str]]:
    """(name kept, name that shares it) for every parameter registered under two names."""
    seen: dict[int, str] = {}
    pairs = []
    for name, param in model.named_parameters(remove_duplicate=False):
        if id(param) in seen:
            pairs.append((seen[id(param)], name))
        else:
            seen[id(param)] = name
    return pairs


def _owner(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    path, _, attr = name.rpartition(".")
    return (model.get_submodule(path) if path else model), attr


def _owner_param(model: nn.Module, name: str) -> nn.Parameter:
    owner, attr = _owner(model, name)
    return getattr(owner, attr)


class _TooManyModules(Exception):
    """Raised inside a model's constructor: the build is stopped at once."""


@contextmanager
def _module_limit(limit: int, name: str) -> Iterator[None]:
    """Stop a build in this thread once it has registered more than ``limit`` submodules."""
    thread, count = threading.get_ident(), [0]

    def hook(module: nn.Module, child_name: str, child: nn.Module | None) -> None:
        if threading.get_ident() == thread:  # other threads build their own models meanwhile
            count[0] += 1
            if count[0] > limit:
                raise _TooManyModules

    handle = register_module_module_registration_hook(hook)
    try:
        yield
    except _TooManyModules:
        raise CheckpointError(f"{name}: its configuration builds more than {limit:,} modules for "
                              "the weights it holds (a layer count larger than the weights)") from None
    finally:
        handle.remove()
