"""Text the tokenizers accept: a ``str`` that is valid Unicode (no lone surrogates)."""

from __future__ import annotations

from typing import Any


def check_text(text: Any, what: str = "text") -> str:
    """Return ``text`` if it is a str encodable as UTF-8, else raise."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, got {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} contains a lone surrogate {text[exc.start]!r} at index {exc.start}; "
            "it is not valid Unicode text"
        ) from None
    return text
