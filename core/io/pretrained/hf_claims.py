"""What a Hugging Face ``config.json`` claims, checked against the safetensors headers before anything is built.

A config is untrusted text: ``num_hidden_layers: 100000`` or ``num_attention_heads: 2**31`` would make
a reader build 100,000 layers, or a 2³¹-item list of heads, before the tensors told it otherwise. So
every family reader states its config's claims as :class:`Claims` — each stack's layer count, the head
counts that must split a width, and the shapes the config implies for tensors every model of the family
holds — and calls :func:`check_folder` before it builds a config object, a module or a buffer. Only the
headers are read (names, dtypes, shapes; no tensor data). The first difference is refused in one line
naming the folder and the weights file; then the parameter count the claims imply, at 2 bytes each (the
least a kept weight takes), is held to the machine's memory budget (:mod:`~core.io.pretrained.memory`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_files import read_headers, renamed, TensorHeader
from core.io.pretrained.memory import budget_bytes, gib

#: One claimed size: (what config.json calls it, the value it claims).
Dim = tuple[str, int]
#: The most layers a family that shares layer weights (ALBERT) may run.
MAX_SHARED_RUNS = 1_024


@dataclass(frozen=True)
class Stack:
    """One stack of layers, under our tensor names ``{prefix}{index}.{name}``.

    Attributes:
        prefix: our names of its layers start with it (``layers.``, ``encoder.layers.``).
        count: the layer count config.json claims.
        tensors: name inside one layer → the shape config.json implies for it.
    """

    prefix: str
    count: Dim
    tensors: dict[str, tuple[Dim, ...]]


@dataclass(frozen=True)
class Claims:
    """Everything a config.json claims that the headers can confirm.

    Attributes:
        stacks: the model's stacks of layers.
        tensors: our name of a tensor outside the layers → the shape config.json implies.
        splits: (heads, width) pairs: the heads must split the width into equal whole parts.
        runs: layer counts with no weights of their own (ALBERT runs its shared layers this many times).
    """

    stacks: tuple[Stack, ...]
    tensors: dict[str, tuple[Dim, ...]] = field(default_factory=dict)
    splits: tuple[tuple[Dim, Dim], ...] = ()
    runs: tuple[Dim, ...] = ()

    @property
    def parameters(self) -> int:
        """The parameters the claimed tensors alone hold (a lower bound of the model's count)."""
        total = sum(_size(shape) for shape in self.tensors.values())
        return total + sum(s.count[1] * sum(_size(shape) for shape in s.tensors.values()) for s in self.stacks)


def _size(shape: tuple[Dim, ...]) -> int:
    """The number of values in a claimed shape."""
    return math.prod(value for _, value in shape)


def count(raw: dict[str, Any], folder: Path, key: str, default: int | None = None) -> int:
    """config.json's ``key`` as a whole number of at least 1 (``default`` when absent or null).

    Raises:
        CheckpointError: absent without a default, or not a whole number of at least 1.
    """
    value = raw.get(key)
    if value is None:
        if default is None:
            raise CheckpointError(f"{folder.name}: config.json has no {key!r}")
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CheckpointError(f"{folder.name}: config.json's {key!r} must be a whole number of at least 1, "
                              f"got {value!r}")
    return value


def check_folder(folder: Path, rename: Callable[[str], str | None], claims: Claims,
                 budget: int | None = None) -> dict[str, TensorHeader]:
    """:func:`check_claims` on ``folder``'s headers (each stored name → ours by ``rename``; None skips it).

    Returns:
        the headers, stored name → :class:`TensorHeader`.
    """
    headers = read_headers(folder)
    ours = renamed(folder, headers, rename)
    check_claims(folder, headers, ours, claims, budget)
    return headers


def check_claims(folder: Path, headers: dict[str, TensorHeader], ours: dict[str, str], claims: Claims,
                 budget: int | None = None) -> None:
    """Every claim against the headers, in order: layer counts, head splits, runs, sizes, shapes, then the budget.

    Args:
        headers: stored name → header; ``ours``: stored name → our name, for the tensors the model uses.
        budget: the most parameters (default: the machine's memory budget at 2 bytes a parameter).

    Raises:
        CheckpointError: one line naming the folder, the weights file and the first difference.
    """
    found = {mine: name for name, mine in ours.items()}
    for stack in claims.stacks:
        held = _held_layers(found, stack.prefix)
        if held != stack.count[1]:
            raise CheckpointError(f"{folder.name}: config.json claims {stack.count[1]:,} layers ({stack.count[0]}) "
                                  f"but {_holding(headers)} {held:,}")
    for (heads_key, heads), (width_key, width) in claims.splits:
        if heads < 1 or heads > width or width % heads:
            raise CheckpointError(f"{folder.name}: config.json claims {heads:,} heads ({heads_key}), which do not "
                                  f"split {width_key} {width:,} evenly")
    for run_key, runs in claims.runs:
        if runs > MAX_SHARED_RUNS:
            raise CheckpointError(f"{folder.name}: config.json claims {runs:,} layers ({run_key}); at most "
                                  f"{MAX_SHARED_RUNS:,} are supported")
    for key, value in _dims(claims):
        if value < 1:
            raise CheckpointError(f"{folder.name}: config.json's {key} must be at least 1, got {value:,}")
    expected = dict(claims.tensors)
    for stack in claims.stacks:
        expected.update({f"{stack.prefix}{i}.{name}": shape for i in range(stack.count[1])
                         for name, shape in stack.tensors.items()})
    for mine, shape in expected.items():
        _check_shape(folder, mine, shape, found, headers)
    limit = budget_bytes() // 2 if budget is None else budget
    if claims.parameters > limit:
        raise CheckpointError(f"{folder.name}: config.json claims at least {claims.parameters:,} parameters "
                              f"({gib(2 * claims.parameters)} at 2 bytes each), over the limit of {limit:,} "
                              f"({gib(2 * limit)}{' this machine can give a model now' if budget is None else ''})")


def _dims(claims: Claims) -> list[Dim]:
    """Every size the claims name."""
    shapes = [*claims.tensors.values(), *(shape for s in claims.stacks for shape in s.tensors.values())]
    return [*(s.count for s in claims.stacks), *(d for pair in claims.splits for d in pair), *claims.runs,
            *(dim for shape in shapes for dim in shape)]


def _holding(headers: dict[str, TensorHeader]) -> str:
    """"model.safetensors holds", or "its N safetensors shards hold"."""
    files = sorted({header.path.name for header in headers.values()})
    return f"{files[0]} holds" if len(files) == 1 else f"its {len(files)} safetensors shards hold"


def _held_layers(found: dict[str, str], prefix: str) -> int:
    """How many distinct layer indices our tensor names hold under ``prefix``."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)\.")
    return len({m.group(1) for name in found if (m := pattern.match(name))})


def _check_shape(folder: Path, mine: str, shape: tuple[Dim, ...], found: dict[str, str],
                 headers: dict[str, TensorHeader]) -> None:
    """One claimed tensor against its header: present, and every dimension as claimed."""
    claimed = tuple(value for _, value in shape)
    keys = " and ".join(dict.fromkeys(key for key, _ in shape))
    if mine not in found:
        raise CheckpointError(f"{folder.name}: the weights hold no tensor for {mine} (config.json's {keys} "
                              f"describe one of shape {claimed})")
    header = headers[found[mine]]
    if header.shape == claimed:
        return
    if len(header.shape) == len(claimed):
        key, value = next((k, v) for (k, v), held in zip(shape, header.shape) if v != held)
        raise CheckpointError(f"{folder.name}: config.json claims {key} {value:,} but {header.path.name} holds "
                              f"{found[mine]} with shape {header.shape}")
    raise CheckpointError(f"{folder.name}: config.json's {keys} describe {found[mine]} of shape {claimed} but "
                          f"{header.path.name} holds it with shape {header.shape}")
