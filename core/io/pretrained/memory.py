"""How much memory a pretrained model may take: what this machine has available now, less a reserve.

The budget is read when a model is opened (``MemAvailable`` of ``/proc/meminfo``, else the free physical
pages; ``$ATTNSCOPE_MEMORY_BYTES`` sets the available figure instead, for a server that shares its machine
or for tests), and every reader checks a model's weights against it from the headers alone, before any
tensor is read: a model that does not fit is refused with both figures.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.io.checkpoint import CheckpointError

#: Kept free for the interpreter, the tokenizer, activations and the maps of one explanation.
RESERVE_BYTES = 2 * 2**30
_FALLBACK_BYTES = 8 * 2**30  # when the machine says nothing


def available_bytes() -> int:
    """Bytes of memory this machine can give a new model now (``$ATTNSCOPE_MEMORY_BYTES`` when set)."""
    given = os.environ.get("ATTNSCOPE_MEMORY_BYTES")
    if given:
        try:
            return max(0, int(given))
        except ValueError:
            pass
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return _FALLBACK_BYTES


def budget_bytes() -> int:
    """The most bytes one pretrained model's weights may take: :func:`available_bytes` less the reserve."""
    return max(0, available_bytes() - RESERVE_BYTES)


def gib(count: int) -> str:
    """``count`` bytes in GiB, one decimal."""
    return f"{count / 2**30:.1f} GiB"


def check_fits(name: str, need: int, what: str, budget: int | None = None) -> None:
    """Refuse a model whose weights take ``need`` bytes (``what`` says how they are stored) when they are
    over ``budget`` (default :func:`budget_bytes`).

    Raises:
        CheckpointError: one line with both figures.
    """
    limit = f"the {gib(budget)} limit" if budget is not None else (
        f"the {gib(budget := budget_bytes())} this machine can give a model now ({gib(available_bytes())} "
        f"available less {gib(RESERVE_BYTES)} kept free)")
    if need > budget:
        raise CheckpointError(f"{name}: {gib(need)} of weights {what} is over {limit}")
