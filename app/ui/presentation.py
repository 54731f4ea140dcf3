"""Presentation mode (the sidebar's toggle; ``?projector=1`` in a share link): what a class sees on a projector.

- Large type: :data:`PROJECTOR_CSS` (prose 1.25 rem on a 135 % root), and chart text scaled
  with it (``widgets.font_scale()``: ticks, labels and colour-bar numbers 1.5 × larger).
- The first screen holds the chart: turning the mode on folds the sidebar away (the header's » button opens
  it again) and the page's padding and title are compact, so on a 1280 × 720 projector the first chart starts
  on the first screen (Explore keeps its controls beside the chart; the Learn and pretrained pages fold their
  opening prose into a popover, :func:`folded`).
- Next / Back stay on screen: a row holding a button keyed ``…_next`` sticks to the bottom of the screen until
  it is reached and then below the app's header (the Lesson's stage content is always on the same screen as
  its Next button).
- Clicker keys: → / PageDown / Space press the page's Next button, ← / PageUp its Back button, without
  focusing them (``app/ui/presentation.js``, shipped here, run in the page; nothing comes from a CDN).

On every page, in both modes, the same script keeps the theme chosen in the ⋮ menu when any page is
reloaded (Streamlit remembers it per first-opened path only).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st

from app import routes
from app.charts import look
from app.ui import language
from app.ui.widgets import DIAGRAM_CLASS

SCRIPT = Path(__file__).with_name("presentation.js")
KEY = "projector"  # the session and share-link key (kept from "projector mode": old links still work)

# Enlarging the root scales everything sized in rem (headings, spacing); body text, widgets and tables get
# an explicit size. Nothing may be clipped: labels and outputs wrap, and a chart wider than its column is
# scaled down to fit it (Plotly charts are drawn 1.5× larger by widgets.font_scale()).
BASE_CSS = """<style>
:root { --attnscope-styled: 1; }  /* tests/helpers/browser.overflowing waits for this: the page's style is in */
[data-testid="stMainBlockContainer"] { padding-top: 3rem; padding-left: 3rem; padding-right: 3rem; }
[data-testid="stButtonGroup"] > [role] { flex-wrap: wrap !important; overflow-x: visible !important; mask-image: none !important; }
[data-testid="stSidebar"][data-collapsed="false"] { min-width: 336px; }
[data-testid="stSelectbox"] input[role="combobox"] { padding-right: 0; }
[data-testid="stSelectbox"] input[role="combobox"] + button { padding-left: 0; padding-right: 4px; }
[data-testid="stHorizontalBlock"]:has([data-testid="stSelectbox"]) { flex-wrap: wrap; }
[data-testid="stColumn"]:has([data-testid="stSelectbox"]):not(:has([data-testid="stHorizontalBlock"])) { min-width: min(100%, 30rem); }
/* the Lesson's pickers hold short values: two and three to a row, so its stage starts on the first screen */
.st-key-lesson_pickers [data-testid="stHorizontalBlock"] > [data-testid="stColumn"]:has([data-testid="stSelectbox"]) { min-width: min(100%, 13rem); }
[data-testid="stSidebarNav"] a :is(span, div, p) { white-space: normal !important; text-overflow: clip !important; overflow: visible !important; }
[data-testid="stSidebarNav"] a > span:last-child { min-width: 0; flex: 1 1 auto; }
[data-testid="stSidebarNav"] a { height: auto !important; }
</style>"""
PROJECTOR_CSS = """<style>
html { font-size: 135% !important; }
:is([data-testid="stMain"], [data-testid="stSidebar"]) :is(p, li, label, input, textarea, code, td, th, button) {
  font-size: 1.25rem !important;
}
[data-testid="stMain"] :is(button, [data-testid="stMarkdownContainer"]) p { white-space: normal !important; overflow-wrap: anywhere; }
[data-testid="stMain"] button { height: auto !important; min-height: 2.5rem; }
[data-testid="stMain"] :is([data-testid="stCode"] pre, [data-testid="stCode"] code) { white-space: pre-wrap !important; overflow-wrap: anywhere; }
[data-testid="stMain"] .katex-display { font-size: 0.9em; }
[data-testid="stMain"] table :is(td, th) { white-space: nowrap; }
[data-testid="stSliderThumbValue"], [data-testid="stSliderThumbValue"] *,
[data-testid="stMain"] :is([data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"]) [data-testid="stMarkdownContainer"] p {
  white-space: nowrap !important; overflow-wrap: normal !important; }
[data-testid="stSidebar"][data-collapsed="false"] { min-width: 420px; }
[data-testid="stSidebar"] input[role="combobox"] { font-size: 0.9rem !important; }
[data-testid="stMain"] input[role="combobox"] { font-size: 1rem !important; }
[data-testid="stColumn"]:has([data-testid="stSelectbox"]):not(:has([data-testid="stHorizontalBlock"])) { min-width: 100%; }
.st-key-explore_layout { container-type: inline-size; }
@container (max-width: 1160px) {
  .st-key-explore_layout > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"] { flex-wrap: wrap; }
  .st-key-explore_layout > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] {
    flex: 1 1 100% !important; width: 100% !important; min-width: 100% !important;
  }
}
</style>"""

PRESENTATION_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding: 3.25rem 1.5rem 2rem 1.5rem !important; }
[data-testid="stMain"] h1 { font-size: 1.9rem; padding: 0 0 0.25rem 0; }
[data-testid="stMain"] h2 { font-size: 1.5rem; padding: 0.25rem 0; }
.st-key-page_heading { margin-top: 0.5rem; column-gap: 1.5rem; }  /* its popovers clear the app's header */
[data-testid="stMain"] [data-testid="stLayoutWrapper"]:has(> [data-testid="stHorizontalBlock"] > [data-testid="stColumn"] [class*="st-key-"][class*="_next"]) {
  position: sticky; top: 2.75rem; bottom: 0; z-index: 100; background-color: var(--attnscope-background, transparent);
  padding: 0.25rem 0;
}
</style>"""

# Every mode: an Altair chart wider than its column (a wide map beside the open sidebar, three maps side by
# side at 1280 px) is scaled down to fit instead of being cut.
FIT_CSS = """<style>
[data-testid="stMain"] [data-testid="stVegaLiteChart"] :is(canvas, svg) { max-width: 100% !important; height: auto !important; }
[data-testid="stMain"] [class*="st-key-section-"] > [data-testid="stExpander"] > details > summary p { font-size: 1.45rem; font-weight: 600; line-height: 1.3; }
</style>"""


@lru_cache(maxsize=1)
def _script_source() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def enabled() -> bool:
    """Whether presentation mode is on in this session."""
    return bool(st.session_state.get(KEY))


def folded(label: str | None = None, icon: str = ":material/menu_book:"):
    """A container for a page's opening prose, formulas or secondary controls: in presentation mode a popover
    button (``label``, by default "About this page" in the session's language; ``icon``) that opens it, so the
    first chart and its main controls are on the first screen; otherwise the page itself."""
    if not enabled():
        return st.container()
    return st.popover(label or language.words("common")("presentation.about"), icon=icon)


def heading(title: str):
    """A page's title. In presentation mode it heads a row that the page's popovers join (``with heading(…):``),
    so they take no line of their own on the first screen; otherwise the title stands alone and the returned
    container is the page itself."""
    if not enabled():
        st.title(title)
        return st.container()
    row = st.container(horizontal=True, vertical_alignment="bottom", key="page_heading")
    row.title(title, width="content")
    return row


def opening(title: str, intro: str):
    """A page's title and its introduction (Markdown), folded into a popover beside the title in presentation mode.
    Returns the folded container, for whatever else the introduction holds (``with presentation.opening(…):``)."""
    with heading(title):
        box = folded()
    box.markdown(intro)
    return box


def beside(spec: tuple[float, float] = (3, 2)):
    """The containers ``(controls, chart)`` of a page's first view: in presentation mode two columns (``spec``), the
    chart on the left and its controls and text on its right, so both are on the first screen; otherwise two
    containers one above the other, the controls first (the page as it reads on a laptop)."""
    if not enabled():
        return st.container(), st.container()
    chart, controls = st.columns(spec, gap="medium")
    return controls, chart


T = TypeVar("T")
SECTION_PREFIX = "section-"  # a section's expander key (and share-link parameter) starts with this
ALL_SECTIONS = "all_sections"  # the sidebar's "Open every section" (and its share-link parameter)


def section(title: str, key: str, draw: Callable[..., T], *args: Any, first: bool = False, **kwargs: Any) -> T | None:
    """One numbered section of a Learn page: ``title`` on an expander that runs ``draw(*args, **kwargs)`` only
    while it is open. The page's ``first`` section starts open; the others cost the page nothing (no chart is
    built, sent or laid out) until they are opened, or until the sidebar's "Open every section" is on.
    Opening one reruns only the fragment it sits in, and the share link keeps which sections are open
    (``?section-<key>=…``, through the expander's own binding). Returns what ``draw`` returned, None when closed."""
    if st.session_state.get(ALL_SECTIONS):
        st.session_state[SECTION_PREFIX + key] = True
    box = st.expander(title, expanded=first, key=SECTION_PREFIX + key, bind="query-params")
    if not box.open:
        return None
    with box:
        return draw(*args, **kwargs)


def opened(label: str, key: str, **kwargs: Any) -> Any | None:
    """An expander whose content is built only while it is open: the expander to draw into, or None while it is
    closed (nothing inside is built, sent or laid out; opening or closing it reruns the fragment it sits in, or the
    page). ``kwargs`` go to ``st.expander`` (``icon``, ``expanded``)."""
    box = st.expander(label, key=key, on_change="rerun", **kwargs)
    return box if box.open else None


def style(on: bool) -> str:
    """Every page's style (page names wrap instead of being cut), with presentation mode's large type and
    compact layout when ``on``."""
    return BASE_CSS + (PROJECTOR_CSS if on else "") + FIT_CSS + look.DARK_CSS + (PRESENTATION_CSS if on else "")


@lru_cache(maxsize=None)
def chart_modules(names: tuple[str, ...]) -> tuple[str, ...]:
    """The file names of the Streamlit frontend modules called ``names`` (``ArrowVegaLiteChart``: its Vega-Lite
    charts), as this Streamlit serves them beside its ``index`` module; a name it does not ship is left out."""
    served = Path(st.__file__).parent / "static" / "static" / "js"
    return tuple(found.name for name in names for found in sorted(served.glob(f"{name}.*.js"))[:1])


def script(on: bool, preload: tuple[str, ...] = ()) -> str:
    """The page script (clicker keys when ``on``; the theme kept on reload always; the chart modules named in
    ``preload`` loaded once the page is idle), as a <script> element."""
    paths = [r.url_path for pages in routes.SECTIONS.values() for r in pages]
    config = json.dumps({"clicker": on, "paths": paths, "preload": chart_modules(preload)})
    source = _script_source().replace("__CONFIG__", config).replace("__DIAGRAM__", DIAGRAM_CLASS)
    return "<script>" + source + "</script>"


def apply(page: str = "") -> None:
    """Style this page (``page``: its URL path) for the current mode and run the page script (call once per run,
    from the sidebar)."""
    on = enabled()
    st.html(style(on))
    with st.sidebar:
        st.html(script(on, routes.preloads(page)), unsafe_allow_javascript=True)
