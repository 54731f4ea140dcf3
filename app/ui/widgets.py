"""Widgets and conventions every page shares: shareable links, the chosen checkpoint and the chart text's scale,
clear error messages, user text shown as text, index and kind pickers, and drawing a chart at its own size.
"""

from __future__ import annotations

import base64
import functools
import html
import logging
import math
import re
from typing import Any, Callable, TypeVar

import altair as alt
import streamlit as st

from app.services import catalog
from app import resources
from app.charts import attention as charts
from app.charts import maps
from app.charts import diagram as diagrams
from app.ui import canvas, class_follow, vega
from core import Checkpoint, CheckpointError, KIND_LABELS, ModelFacts, PretrainedModel, training

log = logging.getLogger(__name__)
T = TypeVar("T")
DIAGRAM_CLASS = "attnscope-diagram"  # a block diagram's image in the page (the browser tests find it by it)
_MARKDOWN = re.compile(r"([\\`*_\[\]<>#|~$])")
_RESTORERS: dict[str, tuple] = {}  # restore_from_url's marker → its arguments (the same for every session)
_LINKED = "_link_values"  # key → the value a share link gave it, until the page has checked it against its range


# ----------------------------------------------------------------------------- share links
def restore_from_url(keys: dict[str, Callable[[str], Any]], defaults: dict[str, Any] | None = None,
                     from_one: dict[str, str] | None = None) -> None:
    """Seed ``st.session_state`` from the URL's query parameters, once per page visit, then
    give every key of ``defaults`` still unset its default value.

    ``keys`` maps a widget key to a parser (``int``, ``str``, ``float``, ``parse_bool``, ``bounded(…)``).
    ``from_one`` maps a 0-based key to the parameter that carries it counted from 1, as every screen counts
    (``{"lesson_stage": "stage"}``: ``?stage=2`` is index 1); the key's own name, 0-based, is still read when that
    parameter is absent (older links).
    Unparseable, non-finite or out-of-range values are ignored with a notice, so a hand-edited
    link never breaks the page; a value that parses but lies outside what the page can show (a head the model
    does not have) is clamped where the page knows its range, with a notice too (:func:`clamped`, :func:`choose`).
    """
    marker = "_restored_" + ",".join(sorted(keys))
    _RESTORERS[marker] = (keys, defaults, from_one)
    if not st.session_state.get(marker):
        st.session_state[marker] = True
        ignored, linked = [], st.session_state.setdefault(_LINKED, {})
        for key, parse in keys.items():
            name = (from_one or {}).get(key)
            param, shift = (name, 1) if name is not None and name in st.query_params else (key, 0)
            if param in st.query_params:
                try:
                    value = parse(st.query_params[param])
                    if isinstance(value, float) and not math.isfinite(value):  # nan, 1e400
                        raise ValueError(value)
                    st.session_state[key] = linked[key] = value - shift if shift else value
                except (TypeError, ValueError, OverflowError):
                    log.info("ignoring query parameter %s=%r", param, st.query_params[param])
                    ignored.append(param)
        if ignored:
            st.toast(f"The link's {', '.join(ignored)} could not be used; the defaults are shown instead.")
    for key, default in (defaults or {}).items():
        st.session_state.setdefault(key, default)


def restore_again(params: set[str]) -> None:
    """Seed the session again from the URL for every page whose share link holds one of ``params`` (a fragment's
    run, after a followed teacher's screen became the URL: the page's top, where it restores, does not run)."""
    for keys, defaults, from_one in list(_RESTORERS.values()):
        names = set(keys) | set((from_one or {}).values())
        if names & params:
            restore_from_url(keys, defaults, from_one)


def page_fragment(key: str) -> Callable:
    """``st.fragment(key=key)`` for a page's body that writes its share link: its own run first applies a followed
    teacher's new screen (:func:`app.ui.class_follow.fragment_started`)."""
    def wrap(body: Callable[[], None]) -> Callable[[], None]:
        @functools.wraps(body)
        def run() -> None:
            class_follow.fragment_started()
            body()
        return st.fragment(run, key=key)
    return wrap


def link_checked(key: str, shown: Any) -> None:
    """Once per value a share link gave ``key``: when the page shows ``shown`` instead (the link's value was out
    of range for this model or page), say so in a notice; a value in range is taken silently."""
    linked = st.session_state.get(_LINKED) or {}
    if key not in linked:
        return
    given = linked.pop(key)
    if given != shown:
        st.toast(f"The link's {key} {plain(str(given)[:40])} cannot be shown here; "
                 f"{plain(str(shown)[:40])} is shown instead.")


def clamped(key: str, low: int, high: int) -> int:
    """``st.session_state[key]`` as a whole number clamped into [low, high] and stored back (a share link's value
    out of range is said with :func:`link_checked`)."""
    try:
        value = int(st.session_state.get(key, low))
    except (TypeError, ValueError, OverflowError):
        value = low
    st.session_state[key] = min(max(value, low), max(high, low))
    link_checked(key, st.session_state[key])
    return st.session_state[key]


def write_to_url(keys: list[str], from_one: dict[str, str] | None = None) -> None:
    """Mirror these session values into the URL so the address bar is a shareable link (and, in a fragment's own
    run of a teacher's session, the class's screen: :func:`app.ui.class_follow.url_written`). A key of
    ``from_one`` (0-based) is written under its parameter there, counted from 1 (:func:`restore_from_url`)."""
    from_one = from_one or {}
    values = {from_one.get(k, k): _url_value(st.session_state[k] + 1 if k in from_one else st.session_state[k])
              for k in keys if k in st.session_state}
    for key in from_one:
        st.query_params.pop(key, None)  # an older link's 0-based name
    for key, value in values.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value
    class_follow.url_written([from_one.get(k, k) for k in keys])


def _url_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def parse_bool(text: str) -> bool:
    if text not in ("0", "1", "true", "false"):
        raise ValueError(text)
    return text in ("1", "true")


def bounded(low: float, high: float, cast=int) -> Callable[[str], Any]:
    """A share-link parser: ``cast(text)`` if it lies in [low, high], else ValueError (the link is ignored)."""
    def parse(text: str):
        try:
            value = cast(float(text))
        except OverflowError:  # int(float("inf"))
            raise ValueError(text) from None
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(text)
        return value
    return parse


def read_at_most(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` a box took, with a one-line notice when it holds more (the box
    takes any paste: a text box's own ``max_chars`` drops a longer paste without a word)."""
    if len(text) <= limit:
        return text
    st.warning(f"Only the first {limit:,} characters are read: this text has {len(text):,}.",
               icon=":material/content_cut:")
    return text[:limit]


def clipped_text(limit: int) -> Callable[[str], str]:
    """A share-link parser for text: at most ``limit`` characters, as the text widget allows."""
    return lambda text: str(text)[:limit]


def one_of(options: Any) -> Callable[[str], str]:
    """A share-link parser accepting only the given choices."""
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(text)
        return text
    return parse


# ----------------------------------------------------------------------------- the chosen checkpoint
def current_entry() -> catalog.Entry | None:
    """The checkpoint chosen in the sidebar."""
    key = st.session_state.get("ckpt")
    return resources.entry(key) if key else None


def current_checkpoint(pretrained: bool = False
                       ) -> tuple[catalog.Entry, Checkpoint | PretrainedModel | ModelFacts] | None:
    """The sidebar's checkpoint, loaded (an upload's or a models folder's: the facts its worker process reports,
    never loaded here: :func:`app.resources.checkpoint`); None when none is chosen or it cannot be opened, or
    when it is a pretrained model and the caller does not take one (``pretrained``: then a clear message has
    been shown)."""
    entry = current_entry()
    if entry is None:
        return None
    if entry.pretrained and not pretrained:  # the Learn pages read an Attnscope checkpoint's config and task
        st.info(f"{plain(entry.name)} is a pretrained model: this part of the page reads Attnscope checkpoints "
                "(shipped, trained or uploaded). Explore shows the pretrained model.", icon=":material/info:")
        return None
    ckpt = attempt(f"open {entry.name}", resources.checkpoint, entry)
    return None if ckpt is None else (entry, ckpt)


def parameter_counts(ckpt: Checkpoint | ModelFacts) -> dict[str, int]:
    """A checkpoint's parameters per top-level block: counted by the loaded model, or by an upload's worker
    process (its facts)."""
    return dict(ckpt.parameter_counts) if isinstance(ckpt, ModelFacts) else ckpt.model.parameter_counts()


def font_scale() -> float:
    """Chart text scale: larger in projector mode."""
    return 1.5 if st.session_state.get("projector") else 1.0


# ----------------------------------------------------------------------------- safety
def attempt(what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Run ``fn``; on failure show a clear message (never a traceback) and return None."""
    try:
        return fn(*args, **kwargs)
    except (ValueError, CheckpointError) as error:
        st.error(f"Could not {what}: {error}")
    except Exception:  # last line of defence: log for the operator, explain to the user
        log.exception("failed to %s", what)
        st.error(f"Something went wrong while trying to {what}. The details are in the server log.")
    return None


def show_user_text(text: str, label: str | None = None) -> None:
    """User text is shown as text, never interpreted as Markdown or HTML."""
    if label:
        st.caption(label)
    st.text(text)


def output_text(text: str, key: str | None = None) -> None:
    """A model's output in a bordered box (its ``key`` names the box), shown as text (never Markdown or HTML;
    unlike ``st.code`` it needs no syntax highlighter, 1.5 MB of scripts, in the browser). Streamlit trims the
    text's two ends."""
    with st.container(border=True, key=key):
        st.text(text)


def plain(text: str) -> str:
    """``text`` with Markdown/HTML characters escaped, for captions and alerts."""
    return _MARKDOWN.sub(r"\\\1", text)


def code(name: str) -> str:
    """A name as inline code, so Markdown never interprets it."""
    return "`" + name.replace("`", "'") + "`"


# ----------------------------------------------------------------------------- pickers
def choose(key: str, options: list[Any], default: Any = None) -> None:
    """Reset a single-choice widget's session value when it is not one of ``options`` (a share link's value
    that is not is said with :func:`link_checked`)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]
    link_checked(key, st.session_state[key])


def index_slider(label: str, count: int, key: str, help: str | None = None, first: int = 0,
                 on_change: Callable[[], None] | None = None) -> int:
    """A slider over ``count`` items numbered from ``first`` (0 or 1); returns the 0-based index
    (``on_change`` runs when it moves).

    A stale value (from another checkpoint or a hand-edited link) is clamped into range; with one
    item there is no slider, only a caption.
    """
    clamped(key, first, max(count - 1, 0) + first)
    if count > 1:
        return st.slider(label, first, count - 1 + first, key=key, help=help, on_change=on_change) - first
    st.caption(f"{label}: 0 (the only one)" if first == 0 else f"{label}: 1 of 1")
    return st.session_state[key] - first


def kind_picker(kinds: list[str], key: str, default: str | None = None) -> str:
    """Which attention (encoder, decoder, cross) to draw, as a select box."""
    choose(key, kinds, default if default is not None else kinds[-1])
    return st.selectbox("Attention", kinds, key=key, format_func=lambda k: KIND_LABELS.get(k, k))


def map_controls(shapes: dict[str, tuple[int, int]], prefix: str) -> tuple[str, int, int]:
    """Kind, layer and head pickers in a row (keys ``{prefix}_kind``, ``_layer``, ``_head``; 1-based sliders).

    ``shapes`` maps each kind to its (layers, heads). The kind defaults to the last one
    (cross-attention when there is one: the clearest to watch).
    """
    a, b, c = st.columns(3)
    with a:
        kind = kind_picker(list(shapes), f"{prefix}_kind")
    layers, heads = shapes[kind]
    with b:
        layer = index_slider("Layer", layers, f"{prefix}_layer", first=1)
    with c:
        head = index_slider("Head", heads, f"{prefix}_head", first=1)
    return kind, layer, head


# ----------------------------------------------------------------------------- drawing
def snapshot_map(tl: training.SnapshotTimeline, step: int, prefix: str) -> None:
    """A kind picker and every head of that kind at ``step`` of a run's timeline (or its live snapshot) on the
    attention canvas: layer and head are chosen in the browser and stay as the step moves (key
    ``{prefix}_canvas_{kind}``; a pinned head is the one each new step opens on)."""
    kinds = list(tl.kinds)
    kind = kind_picker(kinds, f"{prefix}_kind") if len(kinds) > 1 else kinds[0]
    key = f"{prefix}_canvas_{kind}"
    pinned = canvas.pinned(key) or {}
    queries, keys = tl.axes(kind)
    look = canvas.Look(title=f"{KIND_LABELS.get(kind, kind)} · step {step:,}", presentation=font_scale() > 1,
                       theme=canvas.theme(), extra={"name": f"{prefix}-{kind}-step{step}"})
    data = canvas.maps_payload(tl.maps(step, kind), charts.token_labels(queries), charts.token_labels(keys),
                               kind=kind, layer=int(pinned.get("layer", 0)), head=int(pinned.get("head", 0)),
                               view=str(pinned.get("view", "head")), look=look)  # (L, H, Tq, Tk), every head
    canvas.maps(data, key=key)


def plot(figure: Any, *, name: str, key: str | None = None, stretch: bool = False, toolbar: bool = True,
         **kwargs: Any) -> Any:
    """Draw a Plotly figure built with its look (:mod:`app.charts.look`: drawn once: no Streamlit theme): a notice
    above it when it does not show everything, Plotly's own client-side "download as SVG" (vector, for slides) in
    its toolbar (named ``name``; no toolbar without ``toolbar``), and no logo or network calls."""
    note = maps.note(figure)
    if note:
        st.info(note, icon=":material/zoom_out_map:")
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "svg", "filename": name},
              "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
    if not toolbar:
        config = {"displayModeBar": False}
    return st.plotly_chart(figure, width="stretch" if stretch else "content", config=config, key=key, theme=None,
                           **kwargs)


def chart(figure: Any, **kwargs: Any) -> Any:
    """Draw an Altair chart at its own size (``pad``: Streamlit would otherwise squeeze a single view,
    legend and axis labels included, into the plot's width)."""
    if isinstance(figure, (alt.Chart, alt.LayerChart)):
        figure = figure.properties(autosize=alt.AutoSizeParams(type="pad"))
    return st.altair_chart(figure, width="content", **kwargs)


def candidate_bars(labels: Any, probabilities: Any, *, title: str, x_title: str, font_scale: float = 1.0) -> None:
    """A prediction's candidates and their probabilities as bars across the column, most likely first. A new text
    sends new rows only: the chart's spec is cached by its title, axis and number of bars, so nothing is built and
    the page keeps its Vega view (:func:`app.ui.vega.draw_rows`)."""
    vega.draw_rows(charts.probability_bars, charts.candidate_rows(labels, probabilities), across=True,
                   count=len(labels), title=title, x_title=x_title, font_scale=font_scale)


def bars(figure: Any) -> Any:
    """Draw a bar chart across its column (its height kept: ``fit-x``)."""
    figure = figure.properties(autosize=alt.AutoSizeParams(**vega.ACROSS))
    return st.altair_chart(figure, width="stretch")


def diagram(drawing: diagrams.Diagram, *, key: str, font_scale: float = 1.0) -> None:
    """Draw a block diagram as one SVG image the server laid out (no script
    in the page): its natural size, or its column's width where that is narrower; in a container keyed ``key``."""
    data = base64.b64encode(diagrams.svg(drawing, font_scale).encode()).decode()
    with st.container(key=key):
        st.html(f'<img class="{DIAGRAM_CLASS}" src="data:image/svg+xml;base64,{data}" style="max-width: 100%" '
                f'alt="{html.escape(diagrams.describe(drawing))}">')
