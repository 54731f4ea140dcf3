"""Altair charts drawn from cached Vega-Lite specs: a chart is built and validated once per input, not on
every rerun.

``st.altair_chart`` turns its chart into a Vega-Lite spec on every run, and Altair validates the whole spec
against its JSON schema each time (tens of ms per chart, a page of Learn charts pays it for every one of its
charts on every widget move). :func:`draw` caches the spec by the chart function's name and its inputs
(``st.cache_data``), then sends it with ``st.vega_lite_chart``: a rerun whose inputs did not change costs a
cache look-up. The spec is the one ``st.altair_chart`` would send (the same conversion: its data as Arrow
datasets, Altair's default theme off), so the page looks the same. Altair's schema validation (three quarters
of the conversion) runs the first time each chart function draws in this server; its later inputs only change
the data and the sizes, so they are converted without it.

The chart function must be a named module-level function (its ``module.qualname`` is part of the cache key)
taking plain data: numpy arrays, lists, numbers, strings, small DataFrames.

A chart whose numbers move with a control (a slider's every step) is drawn by :func:`draw_rows`: its rows travel
apart from its spec, as the named dataset :data:`ROWS`, so a new step costs no Altair build at all (the spec is
cached by everything but the rows), and as the spec sent is then the same, the page keeps the chart's Vega view
and changes its data in place (Streamlit builds a new view only when the spec changes).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import altair as alt
import streamlit as st
# What st.altair_chart's own conversion uses: its Arrow data transformer, and its lock around Altair's
# process-wide theme and transformer settings (tests/app/test_app_learn_fragments.py checks that a chart drawn
# here is sent exactly as st.altair_chart sends it).
from streamlit.elements.vega_charts import _altair_globals_lock, _to_arrow_dataset

ROWS = "rows"  # the dataset a chart drawn by draw_rows reads (alt.NamedData(ROWS))
ACROSS = {"type": "fit-x", "contains": "padding"}  # a chart as wide as its column, its height kept
MAX_SPECS = 256  # specs kept per server (a big one, a 100 × 512 encoding table, is about 1 MB of Arrow)
_validated: set[str] = set()  # the chart functions whose spec Altair has validated once in this server


@dataclass(frozen=True)
class Drawn:
    """A chart drawn from its cached spec: how to build it again as an Altair chart (for the exports,
    :mod:`app.ui.export`, which build it only when a download is clicked)."""

    build: Callable[..., Any]
    args: tuple = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def chart(self) -> Any:
        """The Altair chart, built now."""
        return self.build(*self.args, **self.kwargs)


@st.cache_data(max_entries=MAX_SPECS, show_spinner=False)
def _spec(name: str, _build: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``_build(*args, **kwargs)`` (``name`` identifies ``_build`` in the cache key)."""
    chart = _build(*args, **kwargs)
    validate = name not in _validated
    datasets: dict[str, Any] = {}
    alt.data_transformers.register("to_arrow_dataset", _to_arrow_dataset)
    with _altair_globals_lock:  # as st.altair_chart converts: no default theme, the data as Arrow datasets
        theme = alt.theme.enable("none") if alt.theme.active == "default" else nullcontext()
        with theme, alt.data_transformers.enable("to_arrow_dataset", datasets=datasets):
            converted = chart.to_dict(validate=validate)
    _validated.add(name)
    converted["datasets"] = {**converted.get("datasets", {}), **datasets}
    return converted


def spec(build: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The cached Vega-Lite spec of the chart ``build(*args, **kwargs)`` (built and validated once per input)."""
    return _spec(f"{build.__module__}.{build.__qualname__}", build, args, kwargs)


def draw(build: Callable[..., Any], *args: Any, **kwargs: Any) -> Drawn:
    """Draw the chart ``build(*args, **kwargs)`` at its own size from its cached spec; returns what the
    chart's exports need."""
    st.vega_lite_chart(spec=spec(build, *args, **kwargs), width="content")
    return Drawn(build, args, kwargs)


def draw_rows(build: Callable[..., Any], rows: Any, *args: Any, across: bool = False, **kwargs: Any) -> Drawn:
    """Draw the chart ``build(rows, *args, **kwargs)``, its spec that of ``build(ROWS, *args, **kwargs)`` (the
    chart reading the named dataset :data:`ROWS`: ``build`` takes the dataset's name in place of its rows), cached
    by ``args`` and ``kwargs`` alone, and ``rows`` (a DataFrame) sent as that dataset; ``across``: as wide as its
    column, its height kept (as :func:`app.ui.widgets.bars` draws an Altair chart). Returns what the chart's
    exports need (built with the rows inline)."""
    cached = spec(build, ROWS, *args, **kwargs)
    sent = {**cached, "datasets": {**cached.get("datasets", {}), ROWS: rows}}
    if across:
        sent["autosize"] = ACROSS
    st.vega_lite_chart(spec=sent, width="stretch" if across else "content")
    return Drawn(build, (rows, *args), kwargs)
