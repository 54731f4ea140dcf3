"""Sort task: output the input letters in alphabetical order."""

from __future__ import annotations

from core.tasks.letters import letter_task


def sort_letters(text: str) -> str:
    """The target of the sort task: the letters of the text in alphabetical order."""
    return "".join(sorted(text))


TASK = letter_task(
    name="sort",
    description="Sort the letters of a string: each output letter attends to where it sits in the input.",
    transform=sort_letters,
    examples=("gbdka", "lkjihgfedcba", "cacbab", "hea", "fjdlbkaegc"),
    probe="gbdkajc",
)
