"""Check an untrusted ``tokenizer.json`` before the native ``tokenizers`` library sees it.

An uploaded tokenizer is code the server runs on every input: a ``Split`` or ``Replace`` regex
such as ``(a+)+$`` backtracks for minutes on 20,000 characters inside native code, where no
Python time limit can stop it, and a regex over the engine's own limits panics (a pyo3
``PanicException``, a ``BaseException``). :func:`check_tokenizer_spec` accepts only normalizer
and pre-tokenizer types on an allow-list, at most so many vocabulary entries, merges and added tokens
(what the native library would build), and refuses regexes that are too long, that nest one
unbounded quantifier inside another or that repeat alternatives able to match the same text;
:func:`native` turns any exception out of native code,
``BaseException`` included, into one ``ValueError`` line. :func:`read_capped` reads an untrusted file
no further than a byte cap (every tokenizer and description file of a pretrained model is read so).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, TypeVar

try:  # the standard library's regex parser, used only to read a pattern's structure
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse as _sre_parse

T = TypeVar("T")

NORMALIZERS = frozenset({"BertNormalizer", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents",
                         "Prepend", "Replace", "Nmt", "Precompiled", "ByteLevel", "Sequence"})
PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "ByteLevel", "Whitespace", "WhitespaceSplit", "Punctuation",
                            "Metaspace", "Split", "Digits", "UnicodeScripts", "CharDelimiterSplit", "Sequence"})
MAX_PATTERN_CHARS = 1_000
MAX_DEPTH = 8  # nested Sequences
#: The most entries of a tokenizer model's table (Gemma's vocabulary has 256,000) and of its added tokens.
MAX_ENTRIES = {"vocab": 2**19, "merges": 2**20, "added_tokens": 2**16}
_REPEATS = {_sre_parse.MAX_REPEAT, _sre_parse.MIN_REPEAT, getattr(_sre_parse, "POSSESSIVE_REPEAT", None)} - {None}
_PROPERTY = re.compile(r"\\[pP]\{[^}]{1,40}\}|\\[pP][A-Za-z]")  # Oniguruma's \p{L}: a class for Python's parser


def check_tokenizer_spec(spec: Any) -> None:
    """Refuse a tokenizer description that could hold the server (see the module docstring).

    Raises:
        ValueError: one line naming the component and what is wrong with it.
    """
    if not isinstance(spec, dict):
        raise ValueError("tokenizer.json must hold a JSON object")
    model = spec.get("model") if isinstance(spec.get("model"), dict) else {}
    for key, most in MAX_ENTRIES.items():
        items = spec.get(key) if key == "added_tokens" else model.get(key)
        if isinstance(items, (list, dict)) and len(items) > most:
            raise ValueError(f"tokenizer {key.replace('_', ' ')} has {len(items):,} entries (at most {most:,})")
    _check_component(spec.get("normalizer"), "normalizers", NORMALIZERS, "normalizer", 0)
    _check_component(spec.get("pre_tokenizer"), "pretokenizers", PRE_TOKENIZERS, "pre-tokenizer", 0)


def _check_component(part: Any, children: str, allowed: frozenset[str], what: str, depth: int) -> None:
    if part is None:
        return
    kind = part.get("type") if isinstance(part, dict) else None
    if kind not in allowed:
        raise ValueError(f"tokenizer {what} type {str(kind)[:40]!r} is not accepted; accepted: {', '.join(sorted(allowed))}")
    if kind == "Sequence":
        items = part.get(children)
        if depth >= MAX_DEPTH or not isinstance(items, list):
            raise ValueError(f"tokenizer {what} Sequence is malformed or nested more than {MAX_DEPTH} deep")
        for item in items:
            _check_component(item, children, allowed, what, depth + 1)
    pattern = part.get("pattern")
    if pattern is not None:
        if not isinstance(pattern, dict) or len(pattern) != 1 or not isinstance(next(iter(pattern.values())), str):
            raise ValueError(f"tokenizer {what} {kind} has a malformed pattern")
        if "Regex" in pattern:
            check_regex(pattern["Regex"], f"tokenizer {what} {kind}")


def check_regex(pattern: str, where: str = "the") -> None:
    """Refuse a regex longer than :data:`MAX_PATTERN_CHARS`, with nested unbounded quantifiers
    (``(a+)+``, ``(\\w*\\s?)*``) or with an unbounded repeat of alternatives that can match the same
    text (``(a|aa)+``, ``(?:x|y|xy)*``): the shapes that backtrack exponentially.

    Raises:
        ValueError: one line naming ``where``.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"{where} regex is {len(pattern):,} characters long (at most {MAX_PATTERN_CHARS:,})")
    try:
        parsed = _sre_parse.parse(_PROPERTY.sub("w", pattern))
    except (re.error, RecursionError, OverflowError) as error:
        raise ValueError(f"{where} regex cannot be checked ({error})") from None
    risk = _risky(parsed, inside=False)
    if risk is not None:
        raise ValueError(f"{where} regex {pattern[:60]!r} {risk}, which can backtrack for minutes; it is refused")


_NESTED = "nests one repeated part inside another"
_AMBIGUOUS = "repeats alternatives that can match the same text"


def _risky(items: Any, inside: bool) -> str | None:
    """Why the parsed ``items`` can backtrack exponentially (``inside``: within an unbounded repeat), or None."""
    for op, arg in items:
        parts: list[Any] = []
        ambiguous = False
        if op in _REPEATS:
            low, high, sub = arg
            repeats = high == _sre_parse.MAXREPEAT or high > 16
            if repeats and inside:
                return _NESTED
            found = _risky(sub, inside or repeats)
            if found:
                return found
        elif op == _sre_parse.SUBPATTERN:
            parts = [arg[-1]]
        elif op == _sre_parse.BRANCH:
            parts, ambiguous = arg[1], inside and _ambiguous(arg[1])
        elif op in (_sre_parse.ASSERT, _sre_parse.ASSERT_NOT):
            parts = [arg[1]]
        elif op == getattr(_sre_parse, "ATOMIC_GROUP", None):
            parts = [arg]
        for part in parts:
            found = _risky(part, inside)
            if found:
                return found
        if ambiguous:  # after the alternatives' own nesting, the more telling message
            return _AMBIGUOUS
    return None


def _ambiguous(branches: list[Any]) -> bool:
    """Whether two alternatives may match the same text: one can match nothing, one does not start with a
    plain character (its overlap cannot be told cheaply), or two start with the same character. The
    parser has already merged single characters into a class and factored common prefixes out."""
    firsts = []
    for branch in branches:
        if not branch or branch[0][0] != _sre_parse.LITERAL:
            return True
        firsts.append(branch[0][1])
    return len(set(firsts)) < len(firsts)


def native(call: Callable[[], T], what: str) -> T:
    """``call()``, any exception out of native tokenizer code (a pyo3 ``PanicException`` is a
    ``BaseException``) raised again as one ``ValueError`` line; interrupts pass through.

    Raises:
        ValueError: ``what`` failed, with the first line of the native message.
    """
    try:
        return call()
    except (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError):
        raise
    except BaseException as error:  # noqa: B036 - PanicException derives from BaseException
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"{what} failed in the tokenizers library: {first[:200]}") from None


def read_capped(path: str | os.PathLike, cap: int) -> bytes:
    """The bytes of the file at ``path``, refused from its size before more than ``cap`` bytes are read.

    Raises:
        ValueError: the file holds more than ``cap`` bytes (one line naming it).
        OSError: it cannot be opened or read.
    """
    with open(path, "rb") as handle:
        too_big = os.fstat(handle.fileno()).st_size > cap
        data = b"" if too_big else handle.read(cap + 1)  # a file that grows while it is read stops at cap + 1
    if too_big or len(data) > cap:
        raise ValueError(f"{Path(path).name} is larger than {cap / 2**20:g} MiB, the most read of such a file")
    return data
