"""The session's language: the sidebar's picker, kept in the share link (``?lang=ja``) and so across reloads,
its default taken from the browser's ``Accept-Language`` when that asks for one of the four; the pages' words
in it (:func:`words`, from :mod:`app.i18n`); and the font stack that gives Japanese and Chinese their own
glyph forms (Noto Sans CJK JP or SC, Debian's ``fonts-noto-cjk``) and Cyrillic a face that has it."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app import i18n
from app.ui import widgets

KEY = "lang"  # the session, widget and share-link key

# Latin and Cyrillic from Streamlit's Source Sans (it has Cyrillic), then the CJK face of the language first.
CJK = ("ja", "zh")  # the languages whose page text takes its own font stack (:func:`style`)
_CJK = {"ja": ('"Noto Sans CJK JP"', '"Noto Sans CJK SC"'), "zh": ('"Noto Sans CJK SC"', '"Noto Sans CJK JP"')}


def restore() -> str:
    """Set the session's language once: the link's ``lang``, else the browser's Accept-Language, else English;
    returns it (call before the navigation is built: its page titles are in it)."""
    widgets.restore_from_url({KEY: widgets.one_of(i18n.LANGUAGES)})
    if i18n.known(st.session_state.get(KEY)) is None:
        st.session_state[KEY] = i18n.from_accept_language(_accept_language()) or i18n.DEFAULT
    return st.session_state[KEY]


def _accept_language() -> str | None:
    """The browser's Accept-Language header (None where there is no request, as under AppTest)."""
    try:
        return st.context.headers.get("Accept-Language")
    except (AttributeError, RuntimeError):
        return None


def current() -> str:
    """The session's language code (``en``, ``ja``, ``ru``, ``zh``)."""
    return i18n.known(st.session_state.get(KEY)) or i18n.DEFAULT


def words(page: str) -> Callable[..., str]:
    """The messages of ``page`` in the session's language: ``t = words("masks"); t("s1.title", n=6)``."""
    lang = current()
    return lambda key, **values: i18n.text(lang, page, key, **values)


def picker() -> None:
    """The sidebar's language picker (each language named in itself); a choice reruns the app in it."""
    t = words("sidebar")
    st.selectbox(t("language.label"), list(i18n.LANGUAGES), key=KEY, format_func=i18n.LANGUAGES.get,
                 help=t("language.help"))
    widgets.write_to_url([KEY])


def font_family(lang: str) -> str:
    """The CSS font stack for ``lang`` (Japanese and Chinese take their own CJK glyph forms first)."""
    return ", ".join(('"Source Sans"', '"Source Sans Pro"', *_CJK.get(lang, _CJK["ja"]), "sans-serif"))


def style() -> str:
    """The page's font stack for the session's language, on the app and its text elements (not on icons, code or
    formulas, which keep their own fonts; the Plotly charts' stack is :data:`app.charts.look.FONT`)."""
    family = font_family(current())
    text = ":is(p, li, label, h1, h2, h3, h4, h5, h6, a, summary, input, textarea, button)"
    # CJK faces rise higher above the baseline than Source Sans: the title moves clear of the app's header bar
    return (f"<style>.stApp, .stApp {text}:not(.katex *):not(code *) {{ font-family: {family}; }}"
            " .stApp [data-testid='stMain'] h1 { line-height: 1.35; padding-top: 0.4em; }</style>")
