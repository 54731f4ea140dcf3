"""The Explore page's experiments: interventions that re-run the model (before / after /
difference) and side-by-side comparison of two sentences or two checkpoints.

Each panel is a fragment (named, so a layer or head change reruns it with the head view): its own
controls rerun it alone. Both draw the kind, layer and head chosen above (``views.selection``). Each sits in
an expander that builds its content only while it is open (closed by default, open when a share link
carries an intervention), so a text edit does not pay for panels nobody looks at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import streamlit as st

from app.services import catalog
from app.ui import canvas, glossary, presentation, widgets
from app import resources
from app.ui import compare as sides
from app.charts import attention as charts
from app.views.parts.explore import inputs, views
from core import analysis, Explanation, SPECIAL_TOKENS


def _show_change(before: Explanation, after: Explanation, kind: str, layer: int, head: int, name: str,
                 titles: tuple[str, str] = ("Before", "After")) -> None:
    """Predictions and one head's map before and after, with their difference."""
    sides.explanations(before, after, kind, layer, head, titles=titles,
                       difference_title="Difference (after − before)", name=name)


INTERVENTIONS, COMPARE = "explore_interventions", "explore_compare"
INTERVENTIONS_OPEN, COMPARE_OPEN = "interventions_open", "compare_open"  # the panels' expanders (closed: nothing built)


def drawing(state: Mapping[str, Any]) -> list[str]:
    """The experiment panels that draw the chosen head, given the session ``state``: interventions away from
    the model as trained or a padding batch; a comparison with its second sentence or checkpoint chosen."""
    panels = []
    if inputs.intervened(state) or str(state.get("second_text") or "").strip():
        panels.append(INTERVENTIONS)
    by_ckpt = state.get("compare_mode") == "ckpt"
    if state.get("compare_ckpt") if by_ckpt else str(state.get("compare_text") or "").strip():
        panels.append(COMPARE)
    return panels


@st.fragment(key=INTERVENTIONS)
def interventions(entry: catalog.Entry, exp: Explanation, base: dict[str, Any]) -> None:
    """Re-run the model with changed attention and show what moved."""
    base = {k: v for k, v in base.items() if k != "return_scores"}
    kind, layer, head, _ = views.selection(exp)
    fs = widgets.font_scale()
    layers, heads = exp.shape(kind)
    if INTERVENTIONS_OPEN not in st.session_state and inputs.intervened():
        st.session_state[INTERVENTIONS_OPEN] = True  # a link with interventions opens on them
    # a constant ``expanded``: a new one would be a new panel, closed, when the last change returns to default
    box = presentation.opened("Interventions: change how attention works and re-run the model", INTERVENTIONS_OPEN,
                              icon=":material/tune:")
    if box is None:  # nothing is built for a closed panel
        return
    with box:
        st.caption("Before = the model as trained. After = with your changes, for the layer and head chosen above.")
        for key, default in (("causal", True), ("hard", False), ("beta", 1.0), ("padding", True)):
            st.session_state.setdefault(key, default)
        labels = [f"L{l + 1}H{h + 1}" for l in range(layers) for h in range(heads)]  # counted from 1
        st.session_state["knockout"] = [x for x in st.session_state.get("knockout", []) if x in labels]
        widgets.link_checked("knockout", st.session_state["knockout"])
        first, second, third = st.columns(3)
        with first:
            causal = st.toggle("Causal mask", key="causal", disabled="decoder" not in exp.attention,
                               help="Off: the decoder may also look at later tokens, which it never could in "
                                    "training.")
            hard = st.toggle("Hard attention (argmax)", key="hard",
                             help="Each query puts all its weight on its single best key.")
        with second:
            beta = st.slider("Inverse temperature β", 0.0, 5.0, step=0.1, key="beta",
                             help=glossary.BETA_TEXT)
        with third:
            knocked = st.multiselect(f"Knock out heads of the {kind} attention", labels, key="knockout",
                                     help="A knocked-out head contributes nothing to its layer's output.")
        changes: dict[str, Any] = {}
        if not causal and "decoder" in exp.attention:
            changes["causal"] = False
        if hard:
            changes["hard"] = True
        if abs(beta - 1.0) > 1e-9:
            changes["temperature"] = round(float(beta), 3)
        if knocked:
            pairs = [tuple(int(x) - 1 for x in re.findall(r"\d+", label)) for label in knocked]
            changes["head_mask"] = {kind: analysis.knockout_mask(layers, heads, pairs)}
            st.caption("A knocked-out head still computes its weights (its own map does not change) but its "
                       "output is dropped: look at later layers and at the prediction.")
        if changes:
            after = widgets.attempt("re-run the model", resources.explain_entry, entry, exp.text, **(base | changes))
            if after is not None:
                _show_change(exp, after, kind, layer, head, f"{kind}-intervention")
        else:
            st.info("Change a control above to see what it does to the prediction and the attention.")
        st.divider()
        _padding(entry, exp, base, kind, layer, head, fs)


def _padding(entry: catalog.Entry, exp: Explanation, base: dict[str, Any], kind: str, layer: int, head: int,
             fs: float) -> None:
    pad = SPECIAL_TOKENS[0]
    st.markdown("**Padding mask.** Two sentences of different lengths run as one batch; the shorter one is "
                "filled up with `<pad>` tokens. The padding mask keeps every query from attending to them.")
    second = st.text_input("A second sentence of a different length", key="second_text",
                           placeholder="e.g. a much shorter sentence")
    padding = st.toggle("Padding mask", key="padding")
    if not second.strip():
        st.info("Type a second sentence to see padding at work.")
        return
    texts = [exp.text, second]
    base = {k: v for k, v in base.items() if k != "continuation"}  # a continuation needs a single text
    masked = widgets.attempt("run the batch", resources.explain_batch_entry, entry, texts, **(base | {"padding": True}))
    if masked is None:
        return
    counts = [(e.source_tokens or e.target_tokens).count(pad) for e in masked]
    if max(counts) == 0:
        st.info("Both sentences have the same number of tokens, so nothing is padded: make one shorter.")
        return
    shorter = int(np.argmax(counts))
    st.caption(f"The {'first' if shorter == 0 else 'second'} sentence is shorter: {counts[shorter]} `{pad}` "
               "tokens were added.")
    if padding:
        rows, cols, y_title = charts.axes(masked[shorter], kind)
        st.caption("Shorter sentence: prediction")
        widgets.output_text(masked[shorter].prediction.text or "(empty)")
        canvas.panels([canvas.Panel(masked[shorter].attention[kind][layer, head], rows, cols,
                                    f"Shorter sentence, padding mask on — layer {layer + 1}, head {head + 1}")],
                      key="canvas-padding", title="The shorter sentence", name=f"{kind}-padding-L{layer + 1}H{head + 1}",
                      font_scale=fs, row_title=y_title)
        st.caption("Switch the padding mask off to see the model attend to the padding.")
        return
    unmasked = widgets.attempt("run the batch", resources.explain_batch_entry, entry, texts, **(base | {"padding": False}))
    if unmasked is not None:
        _show_change(masked[shorter], unmasked[shorter], kind, layer, head, f"{kind}-padding",
                     ("Padding mask on", "Padding mask off"))


# ----------------------------------------------------------------------------- compare
COMPARE_MODES = {"text": "Another sentence", "ckpt": "Another checkpoint"}


@st.fragment(key=COMPARE)
def compare(entry: catalog.Entry, exp: Explanation, base: dict[str, Any]) -> None:
    """Two sentences, or two checkpoints, side by side on the same kind, layer and head."""
    base = {k: v for k, v in base.items() if k != "return_scores"}
    kind, layer, head, _ = views.selection(exp)
    box = presentation.opened("Compare: two sentences or two checkpoints side by side", COMPARE_OPEN,
                              icon=":material/compare:")
    if box is None:
        return
    with box:
        widgets.choose("compare_mode", list(COMPARE_MODES))
        mode = st.segmented_control("Compare with", list(COMPARE_MODES), key="compare_mode", required=True,
                                    format_func=COMPARE_MODES.get)
        if mode == "text":
            other_text = st.text_input("Second sentence", key="compare_text", placeholder="Another input")
            if not other_text.strip():
                st.info("Type a second sentence to compare its attention with the first.")
                return
            other = widgets.attempt("run the model", resources.explain_entry, entry, other_text, **base)
            titles = ("This sentence", "Second sentence")
        else:
            other_entry = sides.other_checkpoint("compare_ckpt", "Second checkpoint")
            if other_entry is None:
                st.info("Choose a second checkpoint to run the same sentence through it.")
                return
            other = widgets.attempt("run the second checkpoint", resources.explain_entry, other_entry, exp.text, **base)
            titles = (entry.name, other_entry.name)
        if other is not None:
            sides.explanations(exp, other, kind, layer, head, titles=titles,
                               difference_title="Difference (second − first)", name=f"{kind}-compare")
