"""Every export of the app: PNG, SVG and standalone HTML of a chart; CSV, JSON and NPZ of its numbers.

Files are built only when their button is clicked; nothing is fetched from the internet (the HTML
inlines Vega or plotly.js). A Plotly chart's PNG and SVG are drawn in the browser, by Plotly itself: the menu's
picture buttons ask the page script (``app/ui/presentation.js``) to save the chart whose toolbar's file name is
the export's name. Each button says what its file holds; each file is named after what it shows.
"""

from __future__ import annotations

import functools
import html
import io
import json
from collections.abc import Callable
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import vl_convert

from app.ui import language
from app.ui.vega import Drawn

alt.data_transformers.disable_max_rows()  # exports of large heatmaps (e.g. 128 × 128) must not fail
MAX_CELLS = 5000  # larger charts are too slow to serialise for export: the numbers are offered instead
IMAGE_ATTRIBUTE = "data-attnscope-image"  # a picture button of a Plotly chart: the format it saves
CHART_ATTRIBUTE = "data-attnscope-chart"  # … and the chart's name (its toolbar's file name)
IMAGE_BUTTON_CSS = """<style>
button.attnscope-image { border: 1px solid rgba(128, 128, 128, 0.4); border-radius: 0.5rem; padding: 0.25rem 0.75rem;
  background: transparent; color: inherit; font: inherit; cursor: pointer; margin: 0 0.5rem 0.25rem 0; }
button.attnscope-image:hover { border-color: #ff4b4b; color: #ff4b4b; }
</style>"""


@functools.lru_cache(maxsize=64)
def _render(spec_json: str, fmt: str, scale: float) -> bytes:
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec_json).encode()
    return vl_convert.vegalite_to_png(spec_json, scale=scale)


def _altair(chart: Any) -> Any:
    """The Altair chart itself (a chart drawn from its cached spec, :class:`app.ui.vega.Drawn`, is built now)."""
    return chart.chart() if isinstance(chart, Drawn) else chart


def _rendered(chart: Any, fmt: str, scale: float) -> bytes:
    """``chart`` as PNG or SVG; its spec is written only now, on the click (Altair's ``to_json`` validates the
    whole spec: tens of ms per chart, which every rerun of a page of charts would otherwise pay)."""
    return _render(_altair(chart).to_json(), fmt, scale)


def _html(chart: Any) -> str:
    return _altair(chart).to_html(inline=True)  # Vega inlined: works offline


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _plotly_html(figure: go.Figure) -> str:
    """A standalone page of ``figure`` (plotly.js inlined: works offline). The app's figures carry their look
    and no template (:mod:`app.charts.look`), which ``Figure.to_html`` cannot read: the page is written from the
    figure's plain dictionary, its empty template left out."""
    spec = figure.to_plotly_json()
    layout = {key: value for key, value in spec.get("layout", {}).items() if key != "template"}
    return pio.to_html({"data": spec.get("data", []), "layout": layout}, include_plotlyjs=True, full_html=True,
                       validate=False)


def image_buttons(name: str) -> str:
    """The PNG and SVG buttons of the Plotly chart drawn with the name ``name`` (``widgets.plot``): the page script
    saves that chart as ``name.png`` / ``name.svg`` through Plotly's own download, in the browser."""
    chart = html.escape(name, quote=True)
    return IMAGE_BUTTON_CSS + "".join(
        f'<button type="button" class="attnscope-image" {IMAGE_ATTRIBUTE}="{fmt}" {CHART_ATTRIBUTE}="{chart}">'
        f'{fmt.upper()}</button>' for fmt in ("png", "svg"))


def export_plotly(figure: go.Figure, name: str, key: str) -> None:
    """PNG and SVG (drawn in the browser) and a standalone interactive HTML download of the Plotly chart drawn
    with the name ``name``."""
    t = language.words("common")
    with st.popover(t("export.chart"), icon=":material/download:"):
        st.caption(t("export.plotly_help", png=t("export.png"), svg=t("export.svg"), name=name))
        st.html(image_buttons(name))
        st.caption(t("export.plotly_html", html=t("export.html")))
        st.download_button("HTML", functools.partial(_plotly_html, figure), f"{name}.html", "text/html",
                           key=f"{key}-html", on_click="ignore")


def export_chart(chart: Any, name: str, key: str, cells: int | None = None) -> None:
    """PNG, SVG and standalone interactive HTML (no CDN) downloads of one chart, rendered on click.

    ``chart``: an Altair chart, or one drawn from its cached spec (:class:`app.ui.vega.Drawn`, built again
    only on the click). ``cells``: how many data rows the chart draws; above :data:`MAX_CELLS` only a hint is
    shown. A Plotly figure (drawn with the name ``name``) gets its HTML here and its PNG and SVG from the
    browser (:func:`export_plotly`).
    """
    if isinstance(chart, go.Figure):
        export_plotly(chart, name, key)
        return
    t = language.words("common")
    if cells is not None and cells > MAX_CELLS:
        st.caption(t("export.too_big", limit=MAX_CELLS, cells=cells))
        return
    with st.popover(t("export.chart"), icon=":material/download:"):
        st.caption(t("export.chart_help", png=t("export.png"), svg=t("export.svg"), html=t("export.html")))
        st.download_button("PNG", functools.partial(_rendered, chart, "png", 2.0), f"{name}.png", "image/png",
                           key=f"{key}-png", on_click="ignore")
        st.download_button("SVG", functools.partial(_rendered, chart, "svg", 1.0), f"{name}.svg", "image/svg+xml",
                           key=f"{key}-svg", on_click="ignore")
        st.download_button("HTML", functools.partial(_html, chart), f"{name}.html", "text/html",
                           key=f"{key}-html", on_click="ignore")


def export_data(arrays: dict[str, np.ndarray], table: pd.DataFrame | Callable[[], pd.DataFrame], name: str,
                key: str) -> None:
    """CSV (tidy table), JSON and NPZ downloads of the numbers behind a view.

    ``table`` may be a function: it is then built only when the CSV is asked for.
    """
    def csv() -> str:
        return (table() if callable(table) else table).to_csv(index=False)

    t = language.words("common")
    with st.popover(t("export.data"), icon=":material/table:"):
        st.caption(t("export.data_help", csv=t("export.csv"), json=t("export.json"), npz=t("export.npz")))
        st.download_button("CSV", csv, f"{name}.csv", "text/csv",
                           key=f"{key}-csv", on_click="ignore")
        st.download_button("JSON", lambda: json.dumps({k: np.asarray(v).tolist() for k, v in arrays.items()}),
                           f"{name}.json", "application/json", key=f"{key}-json", on_click="ignore")
        st.download_button("NPZ", functools.partial(_npz, arrays), f"{name}.npz", "application/octet-stream",
                           key=f"{key}-npz", on_click="ignore")


def exports(chart: Any, arrays: dict[str, np.ndarray] | None,
            table: pd.DataFrame | Callable[[], pd.DataFrame] | None, name: str, key: str) -> None:
    """The chart and data export buttons side by side (either may be None)."""
    with st.container(horizontal=True):
        if chart is not None:
            export_chart(chart, name, key)
        if arrays is not None and table is not None:
            export_data(arrays, table, name, f"{key}-data")
