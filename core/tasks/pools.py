"""Helpers for tasks with a custom split: fixed held-out pairs and keyed pools of examples."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from core.tasks.base import Example

K = TypeVar("K", bound=Hashable)


def held_out_pairs(
    firsts: Sequence[str], seconds: Sequence[str], one_in: int = 7
) -> frozenset[tuple[str, str]]:
    """A fixed, balanced ~``1/one_in`` of all ``(first, second)`` pairs.

    Pair ``(firsts[i], seconds[j])`` is held out when ``(i + 3 * j) % one_in == 3``, so
    every item keeps most of its partners (``one_in`` must not be a multiple of 3).
    The choice depends only on the two lists, never on a seed.
    """
    return frozenset(
        (first, second)
        for i, first in enumerate(firsts)
        for j, second in enumerate(seconds)
        if (i + 3 * j) % one_in == 3
    )


def draw_pools(
    draw: Callable[[random.Random], tuple[K, Example]],
    rng: random.Random,
    wanted: dict[K, int],
    max_draws: int,
) -> dict[K, list[Example]]:
    """Call ``draw(rng) -> (key, example)`` until each key holds ``wanted[key]`` distinct examples.

    Sources are unique across all pools; examples whose key is not wanted, or whose
    pool is already full, are dropped. Pools keep the order of drawing.

    Raises:
        ValueError: when ``max_draws`` draws do not fill every pool.
    """
    pools: dict[K, dict[str, Example]] = {key: {} for key in wanted}
    missing = sum(wanted.values())
    for _ in range(max_draws):
        if missing == 0:
            break
        key, example = draw(rng)
        pool = pools.get(key)
        if pool is None or len(pool) >= wanted[key] or any(example.source in p for p in pools.values()):
            continue
        pool[example.source] = example
        missing -= 1
    if missing:
        counts = {key: len(pool) for key, pool in pools.items()}
        raise ValueError(f"could not draw enough distinct examples: got {counts}, wanted {wanted}")
    return {key: list(pool.values()) for key, pool in pools.items()}
