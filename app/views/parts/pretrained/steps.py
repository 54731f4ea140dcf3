"""Generation one step at a time (SmolLM2's page, and Explore for every decoder and encoder-decoder): for
step t, the attention row of the token the model reads at that step — over every earlier token for a
language model, over the source for an encoder-decoder's cross-attention — for each layer and each query
head (labelled with the key/value head it shares, when heads share them).

Slices one cached explanation (``explain(..., continuation=N)``); never runs the model. Widget keys
start with a ``prefix`` (``smol`` on SmolLM2's page).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, widgets
from app.charts import attention as attention_charts
from app.charts import pretrained as charts
from core import Explanation


def step_position(prompt_length: int, step: int) -> int:
    """The query row of generation step ``step`` (0-based): the last prompt token produces the first
    new token, each new token (read back in) produces the next."""
    return prompt_length - 1 + step


def step_rows(exp: Explanation, prompt_length: int, step: int) -> np.ndarray:
    """(L, H, q+1) attention of step ``step``'s query over positions 0…q (the causal mask hides the rest)."""
    q = step_position(prompt_length, step)
    return exp.attention["decoder"][:, :, q, : q + 1]


def _step_slider(steps: int, prefix: str) -> tuple[int, Any] | None:
    """The step slider (0-based step) and the column beside it for the layer slider; None (and a note) when
    nothing was generated."""
    if steps < 1:
        st.info("Nothing was generated.")
        return None
    step_column, layer_column = st.columns(2, gap="large")
    with step_column:
        step = widgets.index_slider("Step", steps, f"{prefix}_step", first=1,
                                    help="Walk through the generated tokens one at a time.")
    return step, layer_column


def steps_view(exp: Explanation, prompt_length: int, fs: float, prefix: str = "smol") -> None:
    """The step slider, the text so far, and that step's rows per head (one layer) and per layer (mean of heads)."""
    steps = len(exp.target_tokens) - prompt_length + 1  # every generated token was produced by one row
    chosen = _step_slider(steps, prefix)
    if chosen is None:
        return
    step, layer_column = chosen
    q = step_position(prompt_length, step)
    reads, makes = (attention_charts.visible(t) for t in (exp.target_tokens[q], exp.generated_tokens[q]))
    written = "".join(exp.generated_tokens[prompt_length - 1: q + 1])
    st.text(f"Step {step + 1} of {steps}: reading “{reads}” (position {q}), the model writes “{makes}”.")
    widgets.show_user_text(exp.text + written, "The text so far:")
    rows_view(step_rows(exp, prompt_length, step), exp.target_tokens[: q + 1], exp.head_groups.get("decoder"),
              (step, reads), layer_column, fs, prefix,
              "Each row sums to 1 over the tokens read so far; later tokens are hidden by the causal mask.")


def translation_steps(exp: Explanation, fs: float, prefix: str) -> None:
    """An encoder-decoder's output one step at a time: the step slider, the output so far, and that step's
    cross-attention rows over the source per head (one layer) and per layer (mean of heads)."""
    steps = len(exp.generated_tokens)
    chosen = _step_slider(steps, prefix)
    if chosen is None:
        return
    step, layer_column = chosen
    reads, makes = (attention_charts.visible(t) for t in (exp.target_tokens[step], exp.generated_tokens[step]))
    st.text(f"Step {step + 1} of {steps}: after “{reads}” the model writes “{makes}”.")
    widgets.show_user_text(" ".join(attention_charts.visible(t) for t in exp.generated_tokens[:step + 1]),
                           "The output so far:")
    rows_view(exp.attention["cross"][:, :, step, :], exp.source_tokens, exp.head_groups.get("cross"),  # (L, H, S)
              (step, reads), layer_column, fs, prefix, "Each row sums to 1 over the source tokens.")


def rows_view(rows: np.ndarray, keys: tuple[str, ...], groups: tuple[int, ...] | None, step: tuple[int, str],
              layer_column: Any, fs: float, prefix: str, note: str) -> None:
    """One step's attention ``rows`` (L, H, K) over ``keys``: a layer slider in ``layer_column``, that layer's
    row per head (labelled with its key/value head when heads share them), every layer's mean of heads,
    ``note`` on how to read them, and the numbers' export. ``step``: (0-based step, the token it reads)."""
    (index, reads), (layers, heads) = step, rows.shape[:2]
    with layer_column:
        layer = widgets.index_slider("Layer", layers, f"{prefix}_layer", first=1,
                                     help=f"The layer whose {heads} heads are drawn.")
    labels = charts.head_labels(groups) if groups else [f"head {h + 1}" for h in range(heads)]
    per_head = charts.rows_heatmap(rows[layer], labels, keys, y_title="query head · shared kv" if groups else "head",
                                   title=f"Step {index + 1}, layer {layer + 1}: each head's row for “{reads}”",
                                   font_scale=fs)
    per_layer = charts.rows_heatmap(rows.mean(1), [f"layer {i + 1}" for i in range(layers)], keys,
                                    y_title="layer (mean of its heads)", font_scale=fs,
                                    title=f"Step {index + 1}: every layer (mean over its {heads} heads)")
    # Side by side on a screen; one under the other in projector mode, where both are 1.5 × larger.
    left, right = st.columns(2, gap="large") if fs == 1.0 else (st.container(), st.container())
    with left:
        widgets.chart(per_head)
        shared = (f"{heads} query heads share {len(set(groups))} key/value heads (grouped-query attention): heads "
                  "with the same “kv” number compare their queries with the same keys. ") if groups else ""
        st.caption(shared + note)
    with right:
        widgets.chart(per_layer)
    export.export_data({"rows": rows, "head_groups": np.asarray(groups or range(heads))}, _table(rows, keys),
                       f"{prefix}-step-{index + 1}", f"{prefix}_step_export")


def _table(rows: np.ndarray, keys: tuple[str, ...]) -> pd.DataFrame:
    """A tidy table of one step's rows: layer, head (1-based), key position and token, weight."""
    layers, heads, width = rows.shape
    layer, head, key = np.meshgrid(np.arange(layers), np.arange(heads), np.arange(width), indexing="ij")
    return pd.DataFrame({"layer": layer.ravel() + 1, "head": head.ravel() + 1, "key position": key.ravel(),
                         "key token": np.asarray(keys, dtype=object)[key.ravel()], "weight": rows.ravel()})
