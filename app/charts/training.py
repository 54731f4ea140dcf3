"""Training figures: the Noam schedule, label smoothing, loss and validation curves and parameter counts.

Pure functions (core's results in, Altair chart or tidy frame out); no Streamlit calls. Attention
maps of a run (live or in its timeline) are drawn with :mod:`app.charts.attention`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from app.charts.base import CATEGORY, heatmap
from app.charts.base import axis as _axis
from app.charts.base import pad as _pad
from app.charts.base import title as _title
from core import lessons

METRIC_NAMES = {"exact_match": "exact match", "token_accuracy": "token accuracy", "accuracy": "accuracy",
                "perplexity": "perplexity", "loss": "loss"}


def thin(n: int, max_points: int) -> np.ndarray:
    """Indices of at most ``max_points`` evenly spread items of ``n``, always keeping the last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(int))


def fit_column(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """``chart`` stretched or squeezed to its column's width, labels and legend included (``fit-x``; draw it
    with ``st.altair_chart(…, width="stretch")``): a curve is never cut at its column's edge."""
    return chart.properties(autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))


# ----------------------------------------------------------------------------- the Noam schedule
def noam_frame(curve: lessons.NoamCurve) -> pd.DataFrame:
    """(step, lr) of the schedule, one row per point of the curve."""
    return pd.DataFrame({"step": curve.steps, "lr": curve.lrs})


def noam_chart(curve: lessons.NoamCurve, *, d_model: int, warmup: int, font_scale: float = 1.0) -> alt.LayerChart:
    """The learning rate against the step, with the peak marked."""
    peak = (curve.peak_step, curve.peak_lr)
    base = alt.Chart(noam_frame(curve))
    line = base.mark_line().encode(
        x=alt.X("step:Q", title="Training step", axis=_axis(font_scale, format=",d")),
        y=alt.Y("lr:Q", title="Learning rate", axis=_axis(font_scale, format=".1e")),
        tooltip=[alt.Tooltip("step:Q", title="step"), alt.Tooltip("lr:Q", title="learning rate", format=".3e")],
    )
    peak_frame = pd.DataFrame({"step": [peak[0]], "lr": [peak[1]],
                               "label": [f"peak {peak[1]:.2e} at step {peak[0]}"]})
    marker = alt.Chart(peak_frame).mark_point(size=90 * font_scale, filled=True, color="#e45756").encode(
        x="step:Q", y="lr:Q",
        tooltip=[alt.Tooltip("label:N", title="peak")],
    )
    rule = alt.Chart(peak_frame).mark_rule(strokeDash=[4, 4], color="#e45756").encode(x="step:Q")
    text = alt.Chart(peak_frame).mark_text(align="left", dx=8, dy=-8, fontSize=11 * font_scale).encode(
        x="step:Q", y="lr:Q", text="label:N")
    return _pad((line + rule + marker + text).properties(
        width=360, height=240,
        title=_title("Learning rate: warm up, then decay", font_scale,
                     f"d_model = {d_model}, warm-up = {warmup} steps", subtitlePadding=int(6 * font_scale)),
    ))


# ----------------------------------------------------------------------------- label smoothing
def smoothing_labels(example: lessons.SmoothingExample) -> tuple[list[str], list[str]]:
    """Row labels (one per training target) and column labels (the vocabulary) of the example."""
    rows = [f"{i + 1}: target {example.vocab[t]}" for i, t in enumerate(example.targets)]
    return rows, [f"{i}:{token}" for i, token in enumerate(example.vocab)]


def smoothing_chart(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, smoothing: float,
                    font_scale: float = 1.0) -> alt.Chart:
    """The target distribution the loss aims for: one row per example, one column per token."""
    return _pad(heatmap(matrix, rows, cols, title=f"Label-smoothed targets (smoothing = {smoothing:g})",
                        x_title="Vocabulary token", y_title="Training example", value="probability",
                        domain=(0.0, 1.0), size=240, font_scale=font_scale))


# ----------------------------------------------------------------------------- curves
def loss_chart(steps: Sequence[int], losses: Sequence[float], *, title: str = "Training loss",
               font_scale: float = 1.0, max_points: int = 600) -> alt.Chart:
    """The training loss against the step (thinned to ``max_points``)."""
    keep = thin(len(steps), max_points)
    frame = pd.DataFrame({"step": np.asarray(steps, dtype=int)[keep] if len(steps) else [],
                          "loss": np.asarray(losses, dtype=float)[keep] if len(losses) else []})
    return alt.Chart(frame, title=_title(title, font_scale)).mark_line(point=len(frame) < 40).encode(
        x=alt.X("step:Q", title="Training step", axis=_axis(font_scale, format=",d")),
        y=alt.Y("loss:Q", title="Loss", axis=_axis(font_scale), scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("loss:Q", title="label-smoothed loss", format=".4f")],
    ).properties(width=360, height=220, autosize=alt.AutoSizeParams(type="pad", contains="padding"))


def history_frame(history: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A tidy (step, metric, value) frame of every validation metric in a run's history."""
    rows = [(int(r["step"]), METRIC_NAMES.get(name, name.replace("_", " ")), float(value))
            for r in history for name, value in r.get("validation", {}).items()]
    return pd.DataFrame(rows, columns=["step", "metric", "value"])


def validation_chart(frame: pd.DataFrame, *, best_step: int | None = None, font_scale: float = 1.0) -> alt.Chart:
    """Validation metrics against the step, one colour per metric (and the best step marked)."""
    fractions = not frame.empty and frame["value"].between(0, 1).all()
    y_axis = _axis(font_scale, format=".0%" if fractions else ".3g")
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("step:Q", title="Training step", axis=_axis(font_scale, format=",d")),
        y=alt.Y("value:Q", title="Validation score", axis=y_axis,
                scale=alt.Scale(domain=[0, 1]) if fractions else alt.Scale(zero=False)),
        color=alt.Color("metric:N", scale=alt.Scale(scheme=CATEGORY),
                        legend=alt.Legend(title=None, orient="bottom", labelFontSize=11 * font_scale)),
        strokeDash=alt.StrokeDash("metric:N", legend=None),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("metric:N"), alt.Tooltip("value:Q", format=".4f")],
    )
    chart = lines
    if best_step is not None:
        best = pd.DataFrame({"step": [best_step], "label": [f"best model: step {best_step}"]})
        chart = lines + alt.Chart(best).mark_rule(strokeDash=[4, 4], color="gray").encode(
            x="step:Q", tooltip=[alt.Tooltip("label:N", title="kept")])
    return _pad(chart.properties(width=360, height=220, title=_title("Validation", font_scale)))


def live_lr_chart(steps: Sequence[int], lrs: Sequence[float], planned: tuple[Sequence[int], Sequence[float]], *,
                  font_scale: float = 1.0, max_points: int = 600) -> alt.LayerChart:
    """The learning rate so far (solid) over the whole planned schedule (dashed), the current step marked."""
    keep = thin(len(planned[0]), max_points)
    plan = pd.DataFrame({"step": np.asarray(planned[0], dtype=int)[keep], "lr": np.asarray(planned[1])[keep]})
    keep = thin(len(steps), max_points)
    done = pd.DataFrame({"step": np.asarray(steps, dtype=int)[keep] if len(steps) else [],
                         "lr": np.asarray(lrs, dtype=float)[keep] if len(lrs) else []})
    x = alt.X("step:Q", title="Training step", axis=_axis(font_scale, format=",d"))
    y = alt.Y("lr:Q", title="Learning rate", axis=_axis(font_scale, format=".1e"))
    tooltip = [alt.Tooltip("step:Q"), alt.Tooltip("lr:Q", title="learning rate", format=".3e")]
    schedule = alt.Chart(plan).mark_line(strokeDash=[4, 4], color="gray").encode(x=x, y=y, tooltip=tooltip)
    so_far = alt.Chart(done).mark_line(color="#4c78a8").encode(x=x, y=y, tooltip=tooltip)
    now = alt.Chart(done.tail(1)).mark_point(filled=True, size=90 * font_scale, color="#e45756").encode(
        x=x, y=y, tooltip=tooltip)
    return _pad((schedule + so_far + now).properties(
        width=360, height=220, title=_title("Learning rate", font_scale, "so far (solid), planned (dashed), now (dot)",
                                          subtitlePadding=int(6 * font_scale))))
