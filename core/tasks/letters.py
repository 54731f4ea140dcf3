"""Random letter strings shared by the copy, reverse and sort tasks.

Training, validation and test strings have ``MIN_LENGTH``..``MAX_LENGTH`` letters (the task's
``trained_lengths``). The "longer" extra test set holds ``LONGER_PER_LENGTH`` strings of every
length from ``MAX_LENGTH + 1`` to ``2 * MAX_LENGTH``, to measure how far a model generalises
beyond what it was trained on (sinusoidal positions alone do not: expect failures there).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from core.tasks.base import Example, Task, TaskData, disjoint_split

ALPHABET = "abcdefghijkl"
MIN_LENGTH = 3
MAX_LENGTH = 12
LONGER_PER_LENGTH = 40


def random_letters(rng: random.Random) -> str:
    """A string of ``MIN_LENGTH``..``MAX_LENGTH`` letters drawn from ``ALPHABET``, no separators."""
    length = rng.randint(MIN_LENGTH, MAX_LENGTH)
    return "".join(rng.choice(ALPHABET) for _ in range(length))


def _make(transform: Callable[[str], str], rng: random.Random, n: int) -> list[Example]:
    sources = [random_letters(rng) for _ in range(n)]
    return [Example(source, transform(source)) for source in sources]


def _split(transform: Callable[[str], str], rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    data = disjoint_split(partial(_make, transform), rng, sizes)
    longer = []
    for length in range(MAX_LENGTH + 1, 2 * MAX_LENGTH + 1):
        sources: dict[str, None] = {}
        while len(sources) < LONGER_PER_LENGTH:
            sources["".join(rng.choice(ALPHABET) for _ in range(length))] = None
        longer += [Example(source, transform(source)) for source in sources]
    return TaskData(data.train, data.validation, data.test, extra_tests={"longer": longer})


def letter_task(
    name: str,
    description: str,
    transform: Callable[[str], str],
    examples: tuple[str, ...],
    probe: str,
) -> Task:
    """A sequence-to-sequence task mapping a random letter string to ``transform(string)``.

    ``transform`` should be a module-level function so that the task stays picklable.
    """
    return Task(
        name=name,
        description=description,
        architecture="encoder-decoder",
        tokenizer_kind="char",
        metric="exact_match",
        examples=examples,
        probe=probe,
        probe_target=transform(probe),
        make=partial(_make, transform),
        default_sizes=(8000, 500, 500),
        split=partial(_split, transform),
        trained_lengths=(MIN_LENGTH, MAX_LENGTH),
    )
