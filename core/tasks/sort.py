"""Sort task: output the input letters in alphabetical order."""

from __future__ import annotations

from core.tasks.letters import letter_task

#: Only 12 one-letter and 144 two-letter strings exist: among 60,000 training strings each appears once,
#: too rarely for sort to learn that a single letter is its own answer ("b" became "bb"). Repeating them
#: in the training split fixes that; the held-out splits are unchanged.
SHORT_REPEATS = {1: 30, 2: 15, 3: 3}


def sort_letters(text: str) -> str:
    """The target of the sort task: the letters of the text in alphabetical order."""
    return "".join(sorted(text))


TASK = letter_task(
    name="sort",
    description="Sort the letters of a string: each output letter attends to where it sits in the input.",
    transform=sort_letters,
    examples=("gbdka", "lkjihgfedcba", "cacbab", "hea", "fjdlbkaegc"),
    probe="gbdkajc",
    short_repeats=SHORT_REPEATS,
)
