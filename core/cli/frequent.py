"""English's commonest words (the ``wordfreq`` package's list, whose data ships with it) and how many of them a
vocabulary knows.

``wordfreq`` is a test and build-time dependency (``requirements-dev.txt``): it is imported when a count is
asked for, never by the app or the library at run time.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from core.tasks.wordlist import FRAGMENTS

_PIECES = re.compile(r"\w+")  # the word pieces of "didn't" as the word tokenizer splits it: didn, t


@dataclass(frozen=True)
class Known:
    """How many of ``words`` a vocabulary knows, and the ones it does not (in frequency order)."""

    words: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def share(self) -> float:
        return 1 - len(self.missing) / len(self.words)


def frequent_english(n: int) -> tuple[str, ...]:
    """English's ``n`` most frequent words (``wordfreq``), fragments ("s", "t"), digits and one-letter words other
    than "a" and "i" skipped."""
    import wordfreq  # build-time only

    words: list[str] = []
    for word in wordfreq.top_n_list("en", 4 * n):
        if word.isalpha() and word not in FRAGMENTS and (len(word) > 1 or word in ("a", "i")) or "'" in word:
            words.append(word)
        if len(words) == n:
            break
    return tuple(words)


def known(words: tuple[str, ...], vocabulary: Collection[str]) -> Known:
    """Which of ``words`` the ``vocabulary`` holds: a word with an apostrophe ("don't") when it holds every word
    piece the word tokenizer splits it into ("don", "t")."""
    return Known(words, tuple(w for w in words if not all(p in vocabulary for p in _PIECES.findall(w))))
