"""Every page of the app: its script (relative to ``app/``), title, icon and URL path.

Pages link to each other through these names (``st.switch_page(routes.EXPLORE)``), so moving
a page means changing one line here.
"""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from app import i18n


class Route(NamedTuple):
    """A page; ``preload``: the Streamlit chart modules its controls bring in although its first screen draws no
    such chart (loaded while the page is idle, :func:`app.ui.presentation.script`)."""

    script: str
    title: str
    icon: str
    url_path: str
    preload: tuple[str, ...] = ()


EXPLORE = "views/explore.py"
CHECKPOINTS = "views/checkpoints.py"
TRAIN = "views/train.py"
LESSON = "views/lesson.py"
LEARNING = "views/learning.py"
POSITIONAL = "views/positional.py"
PLAYGROUND = "views/playground.py"
MASKS = "views/masks.py"
ARCHITECTURE = "views/architecture.py"
SELF_ATTENTION = "views/self_attention.py"
MINILM = "views/minilm.py"
SMOLLM = "views/smollm2.py"
SPEECH = "views/whisper.py"
RESEARCH = "views/research.py"

SECTION_KEYS = {"Explore": "explore", "Learn": "learn", "Pretrained models": "pretrained"}  # → their messages
SECTIONS: dict[str, list[Route]] = {
    "Explore": [
        Route(EXPLORE, "Explore attention", ":material/visibility:", "explore"),  # the default page
        Route(CHECKPOINTS, "Checkpoints", ":material/inventory_2:", "checkpoints"),
        Route(TRAIN, "Train", ":material/model_training:", "train"),
        Route(RESEARCH, "Research: layers and heads", ":material/biotech:", "research"),
    ],
    "Learn": [
        Route(LESSON, "Lesson: one sentence, every stage", ":material/school:", "lesson",
              preload=("ArrowVegaLiteChart", "PlotlyChart")),  # stage 0 draws neither kind; Next brings both
        Route(LEARNING, "Lesson: how it learns", ":material/trending_down:", "how-it-learns"),
        Route(POSITIONAL, "Positional encoding", ":material/waves:", "positional"),
        Route(PLAYGROUND, "Attention playground", ":material/science:", "playground"),
        Route(MASKS, "Masks", ":material/grid_on:", "masks"),
        Route(ARCHITECTURE, "Architecture", ":material/account_tree:", "architecture"),
        Route(SELF_ATTENTION, "Self-attention: strengths and limits", ":material/balance:", "self-attention"),
    ],
    "Pretrained models": [
        Route(MINILM, "MiniLM: sentence meaning", ":material/hub:", "minilm"),
        Route(SMOLLM, "SmolLM2: next words", ":material/edit_note:", "smollm2"),
        Route(SPEECH, "Whisper: speech to text", ":material/mic:", "whisper"),
    ],
}


def preloads(url_path: str) -> tuple[str, ...]:
    """The chart modules the page at ``url_path`` has its browser load ahead (see :class:`Route`)."""
    return next((r.preload for pages in SECTIONS.values() for r in pages if r.url_path == url_path), ())


DEFAULT_PATH = "start"  # reserved by the default page (served at "/"), never shown


def navigation(lang: str = i18n.DEFAULT) -> dict[str, list[st.Page]]:
    """Every page for ``st.navigation``, by section, its section names and page titles in ``lang`` (the ``nav``
    messages). Explore is the default page, served at ``/`` (Streamlit still reserves a default page's own
    ``url_path``, so it gets :data:`DEFAULT_PATH`); a hidden twin at ``/explore`` makes that address open it too
    instead of "Page not found"."""
    def title(route: Route) -> str:
        return i18n.text(lang, "nav", f"pages.{route.url_path}")

    sections = {i18n.text(lang, "nav", f"sections.{SECTION_KEYS[section]}"):
                [st.Page(r.script, title=title(r), icon=r.icon, default=r.script == EXPLORE,
                         url_path=DEFAULT_PATH if r.script == EXPLORE else r.url_path) for r in pages]
                for section, pages in SECTIONS.items()}
    explore = next(r for pages in SECTIONS.values() for r in pages if r.script == EXPLORE)
    next(iter(sections.values())).append(st.Page(explore.script, title=title(explore), icon=explore.icon,
                                                 url_path=explore.url_path, visibility="hidden"))
    return sections
