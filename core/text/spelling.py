"""Spelling out the words a word-level vocabulary does not know, so that a model can copy them.

A word tokenizer with a spelling alphabet reads a word it does not know, made only of that
alphabet's characters, character by character, in the WordPiece convention ("##" marks a piece
that continues the word before it): "maria" -> ``m ##a ##r ##i ##a``, "2024" -> ``2 ##0 ##2 ##4``.
Decoding joins the pieces back ("maria", "2024"). The vocabulary of such a tokenizer never holds
the words its task marks as spelled (names, digit strings: ``Task.spelled``), so a model trained on
them learns to copy letters and digits, and copies names and numbers it has never seen. A word with
a character outside the alphabet ("ñandú") stays one ``<unk>``.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

__all__ = ["SPELL_ALPHABET", "CONTINUE", "spelling_pieces", "spell_unknown", "join_words"]

SPELL_ALPHABET = string.ascii_lowercase + string.digits
CONTINUE = "##"


def spelling_pieces(alphabet: str, known: Sequence[str]) -> list[str]:
    """The pieces a spelling vocabulary adds to ``known``: each character that is not already a word
    (a first piece, "m") and each character continuing a word ("##a")."""
    have = set(known)
    return [ch for ch in alphabet if ch not in have] + [CONTINUE + ch for ch in alphabet]


def spell_unknown(
    text: str, ids: Sequence[int], offsets: Sequence[tuple[int, int]], alphabet: str, unk_id: int,
    lookup: Callable[[str], int | None],
) -> tuple[list[int], list[tuple[int, int]]]:
    """Replace each unknown word of ``text`` made only of ``alphabet`` by its spelled pieces.

    ``ids``/``offsets`` are a word tokenizer's encoding of ``text``; ``lookup(piece)`` gives a piece's
    id. Each spelled piece's offsets cover its one character, so ``text[s:e]`` stays the token's text.
    """
    out_ids: list[int] = []
    out_offsets: list[tuple[int, int]] = []
    for i, (start, end) in zip(ids, offsets):
        word = text[start:end]
        if i != unk_id or not word or any(ch not in alphabet for ch in word):
            out_ids.append(i)
            out_offsets.append((start, end))
            continue
        for k, ch in enumerate(word):
            piece = lookup(ch if k == 0 else CONTINUE + ch)
            out_ids.append(unk_id if piece is None else piece)
            out_offsets.append((start + k, start + k + 1))
    return out_ids, out_offsets


def join_words(tokens: Sequence[str]) -> str:
    """Word tokens joined with single spaces, spelled pieces back into their word:
    ``["maria", "tiene", "3", "##0", "gatos"]`` -> ``"maria tiene 30 gatos"``."""
    parts: list[str] = []
    for token in tokens:
        if parts and len(token) == len(CONTINUE) + 1 and token.startswith(CONTINUE):
            parts[-1] += token[len(CONTINUE):]
        else:
            parts.append(token)
    return " ".join(parts)
