"""Charts and tables of the pretrained models' pages: MiniLM's sentence embedding and head finder,
SmolLM2's per-step attention rows (query heads labelled with the key/value head they share).

Pure functions (numpy in, Altair chart or DataFrame out), no Streamlit calls. Orientation:
rows = the attending token (or its heads/layers), columns = key tokens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from app.charts import base
from app.charts.attention import KEY_TITLE, token_labels


def embedding_chart(vector: np.ndarray, *, title: str, font_scale: float = 1.0) -> alt.Chart:
    """A sentence embedding (D,) as one bar per dimension (value on hover)."""
    values = np.asarray(vector, dtype=float)
    frame = pd.DataFrame({"dimension": np.arange(values.size), "value": values})
    limit = float(max(np.abs(values).max(initial=0.0), 1e-6))
    return alt.Chart(frame, title=base.title(title, font_scale)).mark_bar().encode(
        x=alt.X("dimension:Q", title="dimension", axis=base.axis(font_scale),
                scale=alt.Scale(domain=[0, max(values.size - 1, 1)], nice=False)),
        y=alt.Y("value:Q", title="value", axis=base.axis(font_scale)),
        color=alt.Color("value:Q", scale=alt.Scale(scheme=base.DIVERGING, domain=[-limit, limit]), legend=None),
        tooltip=[alt.Tooltip("dimension:Q"), alt.Tooltip("value:Q", format="+.4f")],
    ).properties(width=int(700 * font_scale), height=int(180 * font_scale))


def head_table(records: Sequence[dict[str, Any]], tokens: Sequence[str], top: int) -> pd.DataFrame:
    """The first ``top`` head-finder records as a table: rank, layer and head (1-based), the word
    the chosen token attends to most, its weight and its share of the counted weight."""
    rows = [{"rank": rank + 1, "layer": r["layer"] + 1, "head": r["head"] + 1,
             "attends most to": base.visible(tokens[r["key"]]) if r["key"] is not None else "—",
             "weight": round(r["weight"], 4), "share": round(r["share"], 4)}
            for rank, r in enumerate(records[:top])]
    return pd.DataFrame(rows, columns=["rank", "layer", "head", "attends most to", "weight", "share"])


def winners_chart(records: Sequence[dict[str, Any]], tokens: Sequence[str], *, title: str,
                  font_scale: float = 1.0) -> alt.Chart:
    """How many heads look at each word most (one bar per word that wins at least one head)."""
    counts = Counter(r["key"] for r in records if r["key"] is not None)
    frame = pd.DataFrame({"word": [f"{k}:{base.visible(tokens[k])}" for k in counts],
                          "heads": list(counts.values())}).sort_values("heads", ascending=False)
    return alt.Chart(frame, title=base.title(title, font_scale)).mark_bar(color="#4c78a8").encode(
        y=alt.Y("word:N", sort=list(frame["word"]), title="word attended to most", axis=base.axis(font_scale)),
        x=alt.X("heads:Q", title="number of heads", axis=base.axis(font_scale, tickMinStep=1)),
        tooltip=[alt.Tooltip("word:N"), alt.Tooltip("heads:Q")],
    ).properties(width=int(360 * font_scale), height=int(22 * max(len(frame), 1) * font_scale) + 10)


def head_labels(groups: Sequence[int]) -> list[str]:
    """``"head 4 · kv 2"`` for each query head (1-based), naming the key/value head it shares."""
    return [f"head {h + 1} · kv {g + 1}" for h, g in enumerate(groups)]


def rows_heatmap(rows: np.ndarray, row_labels: Sequence[str], keys: Sequence[str], *, title: str,
                 y_title: str, font_scale: float = 1.0) -> alt.Chart:
    """Attention rows (R, Tk) — say every head of a layer, or every layer — over the key tokens."""
    labels = token_labels(keys)
    frame = base.matrix_frame(rows, list(row_labels), labels)
    cell = 22 * font_scale
    return alt.Chart(frame, title=base.title(title, font_scale)).mark_rect().encode(
        x=alt.X("col:N", sort=labels, title=KEY_TITLE, axis=base.axis(font_scale, labelAngle=-60)),
        y=alt.Y("row:N", sort=list(row_labels), title=y_title, axis=base.axis(font_scale)),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]),
                        legend=base.legend("weight", font_scale)),
        tooltip=[alt.Tooltip("row:N", title=y_title), alt.Tooltip("col:N", title=KEY_TITLE),
                 alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=int(max(240, cell * len(labels))), height=int(cell * len(row_labels)))


def row_chart(weights: np.ndarray, keys: Sequence[str], *, title: str, font_scale: float = 1.0) -> alt.Chart:
    """One attention row as horizontal bars, one per key token in reading order (every label readable)."""
    labels = token_labels(keys)
    frame = pd.DataFrame({"key": labels, "weight": np.asarray(weights, dtype=float)})
    return alt.Chart(frame, title=base.title(title, font_scale)).mark_bar().encode(
        y=alt.Y("key:N", sort=labels, title=KEY_TITLE, axis=base.axis(font_scale)),
        x=alt.X("weight:Q", scale=alt.Scale(domain=[0, 1]), title="attention weight",
                axis=base.axis(font_scale, format="%")),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme=base.SEQUENTIAL, domain=[0, 1]), legend=None),
        tooltip=[alt.Tooltip("key:N", title=KEY_TITLE), alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=int(260 * font_scale), height=int(20 * len(labels) * font_scale))
