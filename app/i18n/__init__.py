"""The app's words in four languages: one TOML message file per language and page
(``messages/<lang>/<page>.toml``), read with the standard library's ``tomllib``.

Why TOML and not gettext: the pages' text is long, multi-line teaching prose keyed by page and section, and
TOML holds it readably (multi-line strings, ``[section]`` tables) with no new dependency and no compile step
(gettext needs ``.po`` → ``.mo`` compilation and keys its messages by the English sentence, so a change of the
English wording orphans every translation). A message's live numbers are ``str.format`` named placeholders
(``{n_zero}``, ``{future:.0%}``) filled by the code, so every language shows the same numbers; a literal brace
is written ``{{`` / ``}}``.

A key missing from a language falls back to English with a logged warning (``tests/unit/test_i18n.py`` makes
sure none is missing and that every language has the same placeholders). This module knows nothing of
Streamlit: :mod:`app.ui.language` holds the session's choice.
"""

from __future__ import annotations

import logging
import string
import tomllib
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

MESSAGES = Path(__file__).with_name("messages")
# The languages a reader can pick, in the picker's order, each named in itself.
LANGUAGES = {"en": "English", "ja": "日本語", "ru": "Русский", "zh": "中文 (简体)"}
DEFAULT = "en"


def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    """``{"s1": {"title": …}}`` → ``{"s1.title": …}``."""
    flat: dict[str, str] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = str(value)
    return flat


@lru_cache(maxsize=None)
def catalog(lang: str, page: str) -> dict[str, str]:
    """Every message of ``page`` in ``lang``, keyed ``section.key`` (empty when the file does not exist)."""
    path = MESSAGES / lang / f"{page}.toml"
    if not path.is_file():
        return {}
    with path.open("rb") as handle:
        return _flatten(tomllib.load(handle))


def pages() -> list[str]:
    """The pages that have messages (the English files: English is complete by definition)."""
    return sorted(p.stem for p in (MESSAGES / DEFAULT).glob("*.toml"))


def raw(lang: str, page: str, key: str) -> str:
    """The message ``page``/``key`` in ``lang`` as written (English, with a warning, when ``lang`` lacks it);
    KeyError when English lacks it too (a programming error)."""
    found = catalog(lang, page).get(key)
    if found is None:
        if lang != DEFAULT:
            log.warning("message %s/%s missing in %s: English shown", page, key, lang)
        found = catalog(DEFAULT, page)[key]
    return found


def text(lang: str, page: str, key: str, **values: object) -> str:
    """The message ``page``/``key`` in ``lang`` with its placeholders filled from ``values``."""
    return raw(lang, page, key).format(**values)


def placeholders(message: str) -> set[str]:
    """The names of a message's ``str.format`` placeholders."""
    return {name for _, name, _, _ in string.Formatter().parse(message) if name}


def known(lang: str | None) -> str | None:
    """``lang`` when it is one of :data:`LANGUAGES`, else None."""
    return lang if lang in LANGUAGES else None


def from_accept_language(header: str | None) -> str | None:
    """The first of the four languages that an HTTP ``Accept-Language`` header asks for, by its q weights
    (``"ja-JP,ja;q=0.9,en;q=0.8"`` → ``"ja"``); None when it asks for none of them."""
    ranked: list[tuple[float, int, str]] = []
    for order, part in enumerate((header or "").split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                continue
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and weight > 0:
            ranked.append((-weight, order, primary))
    return min(ranked)[2] if ranked else None
