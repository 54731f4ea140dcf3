"""Words the teaching pages share, defined once so every page says the same thing.

β is only ever the inverse temperature; the LayerNorm's learned shift is called "shift b". The words are the
``glossary`` messages (:mod:`app.i18n`), shown in the session's language.
"""

from __future__ import annotations

import inspect
from typing import Callable

import streamlit as st

from app import i18n
from app.ui import language, presentation

# One definition of β, used on every page that offers it (Playground, Explore's experiments, Concepts): the
# English text here (tests and help texts read it), the session's language on the page (:func:`beta_note`).
BETA_TEXT = i18n.text(i18n.DEFAULT, "glossary", "beta.text")
BETA_LATEX = r"a = \mathrm{softmax}\!\left(\beta\cdot\frac{q\cdot k}{\sqrt{d_k}}\right)"
LAYERNORM_LATEX = r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b"
# One translation direction everywhere: the encoder reads English, the decoder writes Spanish.
SOURCE_SENTENCE = "i have cats"
TARGET_SENTENCE = "yo tengo gatos"
DIRECTION = i18n.text(i18n.DEFAULT, "glossary", "words.direction")


def _word(key: str, **values: object) -> str:
    return language.words("glossary")(key, **values)


def direction() -> str:
    """The translation direction, in the session's language."""
    return _word("words.direction")


def beta_note(where: str) -> None:
    """Show the one definition of β and, in ``where``, which scores it multiplies on this page."""
    st.markdown(_word("beta.text"))
    st.latex(BETA_LATEX)
    st.caption(_word("beta.where", where=where))


def _notes(section: str) -> dict[str, str]:
    """The English notes of ``section`` (``errata`` or ``conflicts``), by key."""
    prefix = section + "."
    return {key[len(prefix):]: i18n.text(i18n.DEFAULT, "glossary", key)
            for key in i18n.catalog(i18n.DEFAULT, "glossary") if key.startswith(prefix)}


# Where the lecture notes (shared/seeds) print a formula with a typo, the page using the correct form says so.
NOTES_ERRATA = _notes("errata")
# Where the notes contradict themselves or the paper (not a typo): the page teaching it says so.
NOTES_CONFLICTS = _notes("conflicts")


def erratum(key: str) -> None:
    """Flag a typo in the lecture notes beside the app's (correct) formula, or a place where the notes
    contradict themselves (:data:`NOTES_CONFLICTS`), in the session's language."""
    if key in NOTES_CONFLICTS:
        st.caption(_word("notes.conflict", text=_word(f"conflicts.{key}")))
    else:
        st.caption(_word("notes.typo", text=_word(f"errata.{key}")))


def code_key(function: Callable) -> str:
    """The key of :func:`show_code`'s expander for ``function`` (its open state in the session)."""
    return f"code-{function.__module__}.{function.__qualname__}"


def show_code(function: Callable, label: str | None = None) -> None:
    """An expander quoting the source of the public ``core`` function that computes this formula; the source
    is sent only once it is opened (a closed one costs the page no code highlighter)."""
    name = f"{function.__module__}.{function.__qualname__}"
    if box := presentation.opened(label or _word("words.code", name=name), code_key(function), icon=":material/code:"):
        with box:
            st.code(inspect.getsource(function), language="python")
