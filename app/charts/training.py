"""Training figures: the Noam schedule, label smoothing, loss and validation curves,
attention snapshots, their differences and parameter counts.

Pure functions (data in, Altair chart or tidy frame out); no Streamlit calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import torch

from app.charts.base import CATEGORY, DIVERGING, SEQUENTIAL, heatmap, label_tokens
from core import noam_lr, smoothed_targets

QUERY_TITLE = "Query (token attending)"
KEY_TITLE = "Key (token attended to)"
METRIC_NAMES = {"exact_match": "exact match", "token_accuracy": "token accuracy", "accuracy": "accuracy",
                "perplexity": "perplexity", "loss": "loss"}

# The label-smoothing example: a six-token vocabulary and five target tokens (one is padding).
EXAMPLE_VOCAB = ("<pad>", "a", "b", "c", "d", "e")
EXAMPLE_TARGETS = (2, 1, 4, 5, 0)


def _axis(font_scale: float, **kwargs: Any) -> alt.Axis:
    return alt.Axis(labelFontSize=11 * font_scale, titleFontSize=12 * font_scale, **kwargs)


def _title(text: str, font_scale: float, subtitle: str | None = None) -> alt.Title:
    extra = {"subtitle": subtitle, "subtitleFontSize": 11 * font_scale} if subtitle else {}
    return alt.Title(text, fontSize=14 * font_scale, **extra)


def _pad(chart: alt.Chart) -> alt.Chart:
    """Size = the plotting area (Streamlit's default "fit" would squeeze a heatmap's cells to make
    room for its labels and legend)."""
    return chart.properties(autosize=alt.AutoSizeParams(type="pad", contains="padding"))


def thin(n: int, max_points: int) -> np.ndarray:
    """Indices of at most ``max_points`` evenly spread items of ``n``, always keeping the last."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(int))


# ----------------------------------------------------------------------------- the Noam schedule
def noam_frame(total_steps: int, d_model: int, warmup: int, factor: float = 1.0,
               max_points: int = 400) -> pd.DataFrame:
    """(step, lr) of the warm-up schedule over ``total_steps``, thinned to ``max_points`` plus the peak."""
    steps = np.arange(1, total_steps + 1)[thin(total_steps, max_points)]
    steps = np.unique(np.append(steps, min(warmup, total_steps)))
    return pd.DataFrame({"step": steps, "lr": [noam_lr(int(s), d_model, warmup, factor) for s in steps]})


def noam_peak(total_steps: int, d_model: int, warmup: int, factor: float = 1.0) -> tuple[int, float]:
    """The step with the largest learning rate (the end of warm-up, or the last step) and that rate."""
    step = min(warmup, total_steps)
    return step, noam_lr(step, d_model, warmup, factor)


def noam_chart(frame: pd.DataFrame, peak: tuple[int, float], *, d_model: int, warmup: int,
               font_scale: float = 1.0) -> alt.LayerChart:
    """The learning rate against the step, with the peak marked."""
    base = alt.Chart(frame)
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
                     f"d_model = {d_model}, warm-up = {warmup} steps"),
    ))


# ----------------------------------------------------------------------------- label smoothing
def smoothing_matrix(smoothing: float, vocab: Sequence[str] = EXAMPLE_VOCAB,
                     targets: Sequence[int] = EXAMPLE_TARGETS) -> tuple[np.ndarray, list[str], list[str]]:
    """``core.smoothed_targets`` for the example (padding id 0): (matrix, row labels, column labels)."""
    matrix = smoothed_targets(torch.tensor(list(targets)), len(vocab), smoothing, pad_id=0).numpy()
    rows = [f"{i + 1}: target {vocab[t]}" for i, t in enumerate(targets)]
    cols = [f"{i}:{token}" for i, token in enumerate(vocab)]
    return matrix, rows, cols


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


# ----------------------------------------------------------------------------- attention maps
def snapshot_axes(kind: str, source_tokens: Sequence[str],
                  target_tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """Row (query) and column (key) tokens of a map of ``kind``."""
    rows = list(source_tokens) if kind == "encoder" else list(target_tokens)
    cols = list(target_tokens) if kind == "decoder" else list(source_tokens)
    return rows, cols


def attention_map(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, title: str,
                  font_scale: float = 1.0, size: int = 340, legend_below: bool = False) -> alt.Chart:
    """One head's attention weights (rows = queries, columns = keys), on a fixed 0–1 scale."""
    chart = _pad(heatmap(matrix, label_tokens(rows), label_tokens(cols), title=title, x_title=KEY_TITLE,
                         y_title=QUERY_TITLE, domain=(0.0, 1.0), scheme=SEQUENTIAL, size=size,
                         font_scale=font_scale))
    return chart.configure_legend(orient="bottom") if legend_below else chart


def difference_map(first: np.ndarray, second: np.ndarray, rows: Sequence[str], cols: Sequence[str], *,
                   title: str, font_scale: float = 1.0, size: int = 340, legend_below: bool = False) -> alt.Chart:
    """``second − first`` on a diverging scale centred on 0 (symmetric, so 0 is always the middle colour)."""
    diff = np.asarray(second, dtype=float) - np.asarray(first, dtype=float)
    bound = max(float(np.abs(diff).max()) if diff.size else 0.0, 1e-6)
    chart = _pad(heatmap(diff, label_tokens(rows), label_tokens(cols), title=title, x_title=KEY_TITLE,
                         y_title=QUERY_TITLE, value="difference", scheme=DIVERGING, domain=(-bound, bound),
                         size=size, font_scale=font_scale, fmt="+.3f"))
    return chart.configure_legend(orient="bottom") if legend_below else chart


# ----------------------------------------------------------------------------- parameters
def parameter_frame(counts: Mapping[str, int]) -> pd.DataFrame:
    """(block, parameters, share) for each top-level block of the model."""
    total = sum(counts.values()) or 1
    frame = pd.DataFrame({"block": list(counts), "parameters": [int(v) for v in counts.values()]})
    frame["share"] = frame["parameters"] / total
    return frame


def parameter_chart(frame: pd.DataFrame, *, font_scale: float = 1.0) -> alt.Chart:
    """Horizontal bars: how many parameters each block holds."""
    return alt.Chart(frame, title=_title("Parameters per block", font_scale)).mark_bar().encode(
        x=alt.X("parameters:Q", title="Parameters", axis=_axis(font_scale, format="~s")),
        y=alt.Y("block:N", title="Block", sort="-x", axis=_axis(font_scale)),
        color=alt.value("#4c78a8"),
        tooltip=[alt.Tooltip("block:N"), alt.Tooltip("parameters:Q", format=","),
                 alt.Tooltip("share:Q", format=".1%")],
    ).properties(width=360, height=28 * max(1, len(frame)),
                 autosize=alt.AutoSizeParams(type="pad", contains="padding"))
