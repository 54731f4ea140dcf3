"""Random letter strings shared by the copy, reverse and sort tasks.

Training, validation and test strings have ``MIN_LENGTH``..``MAX_LENGTH`` letters (the task's
``trained_lengths``). :func:`longer_examples` draws ``LONGER_PER_LENGTH`` strings of every length
from ``MAX_LENGTH + 1`` to ``2 * MAX_LENGTH``, to measure how far a model generalises beyond what
it was trained on (sinusoidal positions alone do not: expect failures there). They are kept out of
the task's splits, so training runs (and their ``max_len``) are unchanged.

Lengths are drawn uniformly, so a word, a name or a short alphabet run is inside the training
distribution. Only 12 one-letter and 144 two-letter strings exist: drawn many times, they are seen
first by :func:`~core.tasks.base.disjoint_split` and land in the training split, so the splits stay
disjoint and the held-out test split is (almost) all 3–24 letters.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from core.tasks.base import Example, Task, TaskData, disjoint_split

ALPHABET = "abcdefghijkl"
MIN_LENGTH = 1
MAX_LENGTH = 24
LONGER_PER_LENGTH = 40


def random_letters(rng: random.Random) -> str:
    """A string of ``MIN_LENGTH``..``MAX_LENGTH`` letters drawn from ``ALPHABET``, no separators."""
    length = rng.randint(MIN_LENGTH, MAX_LENGTH)
    return "".join(rng.choice(ALPHABET) for _ in range(length))


def _make(transform: Callable[[str], str], rng: random.Random, n: int) -> list[Example]:
    sources = [random_letters(rng) for _ in range(n)]
    return [Example(source, transform(source)) for source in sources]


def longer_examples(task: Task, seed: int = 0) -> list[Example]:
    """``LONGER_PER_LENGTH`` distinct strings of every length from ``MAX_LENGTH + 1`` to
    ``2 * MAX_LENGTH`` with ``task``'s targets (none can occur in its splits: they are longer)."""
    transform = task.make.args[0]  # the partial(_make, transform) built by letter_task
    rng = random.Random(f"longer/{task.name}/{seed}")
    examples = []
    for length in range(MAX_LENGTH + 1, 2 * MAX_LENGTH + 1):
        sources: dict[str, None] = {}
        while len(sources) < LONGER_PER_LENGTH:
            sources["".join(rng.choice(ALPHABET) for _ in range(length))] = None
        examples += [Example(source, transform(source)) for source in sources]
    return examples


def repeat_short(make: Callable[[random.Random, int], list[Example]], repeats: dict[int, int],
                 rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    """The disjoint splits, with every training string of a length in ``repeats`` appearing that many
    times in the training split (the held-out splits are unchanged and stay disjoint from it)."""
    data = disjoint_split(make, rng, sizes)
    extra = [e for e in data.train for _ in range(repeats.get(len(e.source), 1) - 1)]
    return TaskData(data.train + extra, data.validation, data.test)


def letter_task(
    name: str,
    description: str,
    transform: Callable[[str], str],
    examples: tuple[str, ...],
    probe: str,
    short_repeats: dict[int, int] | None = None,
) -> Task:
    """A sequence-to-sequence task mapping a random letter string to ``transform(string)``.

    ``transform`` should be a module-level function so that the task stays picklable.
    ``short_repeats``: length → copies of each training string that short (see :func:`repeat_short`).
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
        split=partial(repeat_short, partial(_make, transform), short_repeats) if short_repeats else None,
        default_sizes=(8000, 500, 500),
        trained_lengths=(MIN_LENGTH, MAX_LENGTH),
    )
