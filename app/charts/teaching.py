"""Small teaching charts for the Learn pages: positional curves, toy attention, scores and schedules (their
matrices are heatmaps of :mod:`app.charts.grids`).

Pure functions: data in, Altair chart out; no Streamlit calls.
Every chart has a title, axis titles and tooltips with the numbers; ``font_scale`` enlarges
text for a projector. The playground's charts take ``lang``: their words come from the ``charts`` messages
(:mod:`app.i18n`) in that language.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import numpy as np
import pandas as pd

from app import i18n
from app.charts.base import CATEGORY, SEQUENTIAL, matrix_frame, rows_or_named
from app.charts.base import axis as _axis
from app.charts.base import legend as _legend
from app.charts.base import pad as _pad
from app.charts.base import title as _base_title
from app.charts.grids import MASKED, MAY_ATTEND, cell_text


def _title(text: str, font_scale: float, subtitle: str | None = None) -> alt.Title:
    return _base_title(text, font_scale, subtitle, anchor="start")


def _words(lang: str, section: str):
    """The ``charts`` messages of ``section`` in ``lang``: ``w("title")``."""
    return lambda key: i18n.text(lang, "charts", f"{section}.{key}")


def _named(names: dict[str, str]) -> str:
    """A Vega label expression showing each legend value under its name in ``names`` (the data keep the English
    values the chart filters on)."""
    pairs = ", ".join(f"{k!r}: {v!r}" for k, v in names.items())
    return f"{{{pairs}}}[datum.label] || datum.label"


# ----------------------------------------------------------------------------- positional encoding
def pe_curve_chart(frame: pd.DataFrame, *, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.LayerChart:
    """Chosen PE dimensions as smooth curves over position, with dots where tokens actually sit (words in
    ``lang``)."""
    w = _words(lang, "pe_curves")
    colour = alt.Color("dimension:N", scale=alt.Scale(scheme=CATEGORY), legend=_legend(w("dimension"), font_scale))
    base = alt.Chart(frame, title=_title(w("title"), font_scale, w("subtitle")))
    line = base.mark_line().encode(
        x=alt.X("position:Q", title=w("position"), axis=_axis(font_scale)),
        y=alt.Y("value:Q", title=w("value"), scale=alt.Scale(domain=[-1.05, 1.05]), axis=_axis(font_scale)),
        color=colour)
    dots = base.transform_filter("datum.at_token").mark_point(filled=True, size=40 * font_scale).encode(
        x="position:Q", y="value:Q", color=colour,
        tooltip=[alt.Tooltip("dimension:N", title=w("dimension")),
                 alt.Tooltip("position:Q", format=".0f", title=w("position")),
                 alt.Tooltip("value:Q", format=".4f", title=w("value"))])
    return _pad(alt.layer(line, dots).properties(width=620, height=300))


def rotation_chart(table: pd.DataFrame, k: int, i: int, *, font_scale: float = 1.0,
                   lang: str = i18n.DEFAULT) -> alt.HConcatChart:
    """PE(pos + k) (line) against R_k·PE(pos) (dots) for both dimensions of pair i: they coincide (words in
    ``lang``)."""
    w = _words(lang, "rotation")
    panels = []
    for j, fn in ((2 * i, "sin"), (2 * i + 1, "cos")):
        frame = pd.concat([
            pd.DataFrame({"pos": table["pos"], "value": table[f"PE(pos+{k})[{j}]"], "series": f"PE(pos+{k})"}),
            pd.DataFrame({"pos": table["pos"], "value": table[f"R·PE(pos)[{j}]"], "series": "R·PE(pos)"}),
        ], ignore_index=True)
        colour = alt.Color("series:N", scale=alt.Scale(domain=[f"PE(pos+{k})", "R·PE(pos)"],
                                                       range=[MAY_ATTEND, MASKED]),
                           legend=_legend("", font_scale))
        base = alt.Chart(frame, title=_title(i18n.text(lang, "charts", "rotation.panel", j=j, fn=fn), font_scale))
        tooltip = [alt.Tooltip("series:N", title=""), alt.Tooltip("pos:Q"),
                   alt.Tooltip("value:Q", format=".6f", title=w("value"))]
        line = base.transform_filter(f"datum.series == 'PE(pos+{k})'").mark_line(strokeWidth=3).encode(
            x=alt.X("pos:Q", title="pos", axis=_axis(font_scale)),
            y=alt.Y("value:Q", title=w("value"), scale=alt.Scale(domain=[-1.05, 1.05]), axis=_axis(font_scale)),
            color=colour, tooltip=tooltip)
        dots = base.transform_filter("datum.series == 'R·PE(pos)'").mark_point(size=70 * font_scale,
                                                                               filled=True).encode(
            x="pos:Q", y="value:Q", color=colour, tooltip=tooltip)
        panels.append(alt.layer(line, dots).properties(width=300, height=220))
    return _pad(alt.hconcat(*panels).properties(title=_title(
        i18n.text(lang, "charts", "rotation.title", k=k, i=i), font_scale)))


# ----------------------------------------------------------------------------- attention playground
def vectors_rows(vectors: np.ndarray, labels: Sequence[str], query: np.ndarray, weights: np.ndarray,
                 output: np.ndarray) -> pd.DataFrame:
    """The points of :func:`vectors_plot`: the vectors with their weights, the query q and the output h."""
    return pd.DataFrame({
        "x": np.r_[vectors[:, 0], query[0], output[0]], "y": np.r_[vectors[:, 1], query[1], output[1]],
        "name": [*labels, "q", "h"], "role": ["vector"] * len(labels) + ["query", "output h"],
        "weight": np.r_[weights, np.nan, np.nan],
    })


def vectors_bound(rows: pd.DataFrame) -> float:
    """The half-width of :func:`vectors_plot`'s square axes: every point inside, with a margin. h is a
    weighted mean of the vectors, so β moves it without moving the bound."""
    return float(np.abs(rows[["x", "y"]].to_numpy()).max()) * 1.15 or 1.0


def vectors_plot(rows: pd.DataFrame | str, *, bound: float, font_scale: float = 1.0,
                 lang: str = i18n.DEFAULT) -> alt.LayerChart:
    """2-D picture: the vectors (dot area ∝ attention weight), the query and the output h = Σ aᵢ xᵢ, from the
    rows of :func:`vectors_rows` (or the name of the dataset holding them: :func:`app.ui.vega.draw_rows`) on axes
    from −``bound`` to ``bound``."""
    w = _words(lang, "vectors")
    scale = alt.Scale(domain=[-bound, bound])
    base = alt.Chart(rows_or_named(rows), title=_title(w("title"), font_scale, w("subtitle")))
    roles = {"vector": w("vector"), "query": w("query"), "output h": w("output")}
    colour = alt.Color("role:N", scale=alt.Scale(domain=list(roles), range=[MAY_ATTEND, MASKED, "#009E73"]),
                       legend=_legend("", font_scale, labelExpr=_named(roles)))
    tooltip = [alt.Tooltip("name:N"), alt.Tooltip("x:Q", format=".3f"), alt.Tooltip("y:Q", format=".3f"),
               alt.Tooltip("weight:Q", format=".3f", title=i18n.text(lang, "charts", "weights.weight"))]
    x = alt.X("x:Q", scale=scale, title=w("x"), axis=_axis(font_scale))
    y = alt.Y("y:Q", scale=scale, title=w("y"), axis=_axis(font_scale))
    dots = base.transform_filter("datum.role == 'vector'").mark_circle(opacity=0.85).encode(
        x=x, y=y, color=colour, tooltip=tooltip,
        size=alt.Size("weight:Q", scale=alt.Scale(domain=[0, 1], range=[20, 900]), legend=None))
    marks = base.transform_filter("datum.role != 'vector'").mark_point(filled=True, size=260, opacity=0.9).encode(
        x=x, y=y, color=colour, tooltip=tooltip[:3],
        shape=alt.Shape("role:N", scale=alt.Scale(domain=["query", "output h"], range=["diamond", "square"]),
                        legend=None))
    names = base.mark_text(dx=12 * font_scale, dy=-10 * font_scale, fontSize=12 * font_scale).encode(
        x="x:Q", y="y:Q", text="name:N")
    origin = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#999", strokeDash=[3, 3])
    return _pad(alt.layer(origin.encode(x="zero:Q"), origin.encode(y="zero:Q"), dots, marks, names).properties(
        width=360, height=360))


def weight_rows(labels: Sequence[str], weights: np.ndarray, scores: np.ndarray | None = None) -> pd.DataFrame:
    """The bars of :func:`weights_bar`: each key's weight, its label text and (given) its score."""
    rows = pd.DataFrame({"key": list(labels), "weight": np.asarray(weights, dtype=float)})
    if scores is not None:
        rows["score"] = np.asarray(scores, dtype=float)
    rows["text"] = [cell_text(v) for v in rows["weight"]]
    return rows


def weights_bar(rows: pd.DataFrame | str, labels: Sequence[str], *, title: str, scores: bool = False,
                font_scale: float = 1.0, subtitle: str | None = None, width: int = 320,
                lang: str = i18n.DEFAULT) -> alt.LayerChart:
    """Bars of one query's weights (0 to 1) over the keys ``labels``, each labelled with its value (the scores on
    hover where ``scores``), from the rows of :func:`weight_rows` or the name of the dataset holding them."""
    w = _words(lang, "weights")
    tooltip = [alt.Tooltip("key:N", title=w("key")), alt.Tooltip("weight:Q", format=".4f", title=w("weight"))]
    if scores:
        tooltip.append(alt.Tooltip("score:Q", format=".4f", title=w("score")))
    base = alt.Chart(rows_or_named(rows), title=_title(title, font_scale, subtitle))
    bars = base.mark_bar(color=MAY_ATTEND).encode(
        x=alt.X("key:N", sort=list(labels), title=w("key"), axis=_axis(font_scale, labelAngle=0)),
        y=alt.Y("weight:Q", title=w("weight"), scale=alt.Scale(domain=[0, 1.08]), axis=_axis(font_scale)),
        tooltip=tooltip)
    text = base.mark_text(dy=-8 * font_scale, fontSize=11 * font_scale).encode(
        x=alt.X("key:N", sort=list(labels)), y="weight:Q", text="text:N")
    return _pad(alt.layer(bars, text).properties(width=width, height=220))


def saturation_columns(lang: str = i18n.DEFAULT) -> dict[str, str]:
    """The names of :func:`saturation_chart`'s series (the columns of its frame) in ``lang``, by role."""
    w = _words(lang, "saturation")
    return {key: w(key) for key in ("std", "std_scaled", "max_unscaled", "max_scaled")}


def saturation_chart(frame: pd.DataFrame, *, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.HConcatChart:
    """Std of the score and the largest softmax weight as d grows, with and without 1/√d (``frame``'s columns
    named by :func:`saturation_columns` in ``lang``)."""
    w, named = _words(lang, "saturation"), saturation_columns(lang)
    x = alt.X("d:Q", title=w("x"), scale=alt.Scale(type="log", base=2),
              axis=_axis(font_scale, values=[int(d) for d in frame["d"]]))
    panels = []
    for cols, title, y_title, y_scale in (
        ([named["std"], named["std_scaled"]], w("spread"), w("spread_y"), alt.Scale()),
        ([named["max_unscaled"], named["max_scaled"]], w("largest"), w("largest_y"), alt.Scale(domain=[0, 1])),
    ):
        long = frame.melt(id_vars="d", value_vars=cols, var_name="series", value_name="value")
        colour = alt.Color("series:N", scale=alt.Scale(domain=cols, range=[MASKED, MAY_ATTEND]),
                           legend=_legend("", font_scale, orient="bottom"))
        panels.append(alt.Chart(long, title=_title(title, font_scale)).mark_line(point=True).encode(
            x=x, y=alt.Y("value:Q", title=y_title, scale=y_scale, axis=_axis(font_scale)), color=colour,
            tooltip=[alt.Tooltip("d:Q"), alt.Tooltip("series:N", title=w("series")),
                     alt.Tooltip("value:Q", format=".4f", title=y_title)],
        ).properties(width=320, height=240))
    return _pad(alt.hconcat(*panels).resolve_scale(color="independent"))


def grouped_bars(rows: pd.DataFrame | str, series: Sequence[str], *, title: str,
                 font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.Chart:
    """Bars of (component, series, value), the ``series`` side by side in that order: e.g. the soft retrieval
    next to the hard lookup (the rows, or the name of the dataset holding them)."""
    series, w = list(series), _words(lang, "bars")
    return _pad(alt.Chart(rows_or_named(rows), title=_title(title, font_scale)).mark_bar().encode(
        x=alt.X("component:N", title=w("component"), axis=_axis(font_scale, labelAngle=0)),
        xOffset=alt.XOffset("series:N", sort=series),
        y=alt.Y("value:Q", title=w("value"), axis=_axis(font_scale)),
        color=alt.Color("series:N", sort=series, scale=alt.Scale(range=[MAY_ATTEND, MASKED, "#009E73"]),
                        legend=_legend("", font_scale)),
        tooltip=[alt.Tooltip("series:N", title=w("series")), alt.Tooltip("component:N", title=w("component")),
                 alt.Tooltip("value:Q", format=".4f", title=w("value"))],
    ).properties(width=360, height=240))


def smoothing_log_chart(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, smoothing: float,
                        font_scale: float = 1.0) -> alt.LayerChart:
    """Label-smoothed targets on a symmetric-log colour scale, so ε/(V−1) or ε/(V−2) is visibly not 0.

    Every cell also prints its value; exact zeros (padding) stay white. The colour legend lies under the
    cells, so it never meets the title's subtitle.
    """
    cell = 52 * font_scale
    frame = matrix_frame(matrix, rows, cols, "probability").rename(columns={"row": "example", "col": "token"})
    frame["text"] = [("0" if v == 0 else f"{v:.3g}") for v in frame["probability"]]
    base = alt.Chart(frame, title=_title(f"Label-smoothed targets (ε = {smoothing:g})", font_scale,
                                         "colour on a log scale: the small ε share is visible, 0 stays white"))
    x = alt.X("token:N", sort=list(cols), title="vocabulary token", axis=_axis(font_scale, labelAngle=0))
    y = alt.Y("example:N", sort=list(rows), title="training example", axis=_axis(font_scale, labelLimit=240))
    rect = base.transform_filter(alt.datum.probability > 0).mark_rect(stroke="#bbbbbb", strokeWidth=0.5).encode(
        x=x, y=y, color=alt.Color("probability:Q", scale=alt.Scale(type="symlog", constant=1e-3, domain=[0, 1],
                                                                   scheme=SEQUENTIAL),
                                  legend=_legend("probability (log)", font_scale, orient="bottom",
                                                 direction="horizontal",
                                                 gradientLength=min(cell * len(cols), 320 * font_scale))),
        tooltip=[alt.Tooltip("example:N"), alt.Tooltip("token:N"), alt.Tooltip("probability:Q", format=".4f")])
    text = base.mark_text(fontSize=11 * font_scale).encode(
        x=x, y=y, text="text:N",
        color=alt.condition("datum.probability > 0 && datum.probability < 0.5", alt.value("white"),
                            alt.value("black")))
    return _pad(alt.layer(rect, text).properties(width=cell * len(cols), height=cell * len(rows)))
