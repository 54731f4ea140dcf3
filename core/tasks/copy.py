"""Copy task: output the input letters unchanged."""

from __future__ import annotations

from core.tasks.letters import letter_task


def copy_letters(text: str) -> str:
    """The target of the copy task: the text itself."""
    return text


TASK = letter_task(
    name="copy",
    description="Copy a string of letters: cross-attention forms a clean diagonal.",
    transform=copy_letters,
    examples=("gbdka", "abcdefghijkl", "llkkjj", "hea", "dacbfgiek"),
    probe="gbdkajc",
)
