"""Every export of the app: PNG, SVG and standalone HTML of a chart; CSV, JSON and NPZ of its numbers.

Files are built only when their button is clicked; nothing is fetched from the internet
(the HTML inlines Vega).
"""

from __future__ import annotations

import functools
import io
import json

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
import vl_convert

alt.data_transformers.disable_max_rows()  # exports of large heatmaps (e.g. 128 × 128) must not fail
MAX_CELLS = 5000  # larger charts are too slow to serialise for export: the numbers are offered instead


@functools.lru_cache(maxsize=64)
def _render(spec_json: str, fmt: str, scale: float) -> bytes:
    if fmt == "svg":
        return vl_convert.vegalite_to_svg(spec_json).encode()
    return vl_convert.vegalite_to_png(spec_json, scale=scale)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def export_chart(chart: alt.TopLevelMixin, name: str, key: str, cells: int | None = None) -> None:
    """PNG, SVG and standalone interactive HTML (no CDN) downloads of one chart, rendered on click.

    ``cells``: how many data rows the chart draws; above :data:`MAX_CELLS` only a hint is shown.
    """
    if cells is not None and cells > MAX_CELLS:
        st.caption(f"Chart export works up to {MAX_CELLS:,} cells (this chart has {cells:,}): "
                   "make it smaller, or export the numbers.")
        return
    spec = chart.to_json()
    with st.popover("Export chart", icon=":material/download:"):
        st.download_button("PNG", functools.partial(_render, spec, "png", 2.0), f"{name}.png", "image/png",
                           key=f"{key}-png", on_click="ignore")
        st.download_button("SVG", functools.partial(_render, spec, "svg", 1.0), f"{name}.svg", "image/svg+xml",
                           key=f"{key}-svg", on_click="ignore")
        st.download_button("HTML", functools.partial(chart.to_html, inline=True), f"{name}.html", "text/html",
                           key=f"{key}-html", on_click="ignore")


def export_data(arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str, key: str) -> None:
    """CSV (tidy table), JSON and NPZ downloads of the numbers behind a view."""
    with st.popover("Export data", icon=":material/table:"):
        st.download_button("CSV", lambda: table.to_csv(index=False), f"{name}.csv", "text/csv",
                           key=f"{key}-csv", on_click="ignore")
        st.download_button("JSON", lambda: json.dumps({k: np.asarray(v).tolist() for k, v in arrays.items()}),
                           f"{name}.json", "application/json", key=f"{key}-json", on_click="ignore")
        st.download_button("NPZ", functools.partial(_npz, arrays), f"{name}.npz", "application/octet-stream",
                           key=f"{key}-npz", on_click="ignore")


def exports(chart: alt.TopLevelMixin | None, arrays: dict[str, np.ndarray] | None, table: pd.DataFrame | None,
            name: str, key: str) -> None:
    """The chart and data export buttons side by side (either may be None)."""
    with st.container(horizontal=True):
        if chart is not None:
            export_chart(chart, name, key)
        if arrays is not None and table is not None:
            export_data(arrays, table, name, f"{key}-data")
