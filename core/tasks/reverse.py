"""Reverse task: output the input letters in reverse order."""

from __future__ import annotations

from core.tasks.letters import letter_task


def reverse_letters(text: str) -> str:
    """The target of the reverse task: the text backwards."""
    return text[::-1]


TASK = letter_task(
    name="reverse",
    description="Reverse a string of letters: cross-attention forms an anti-diagonal.",
    transform=reverse_letters,
    examples=("gbdka", "abcdefghijkl", "aabbcc", "hel", "kjicfbdae"),
    probe="gbdkajc",
)
