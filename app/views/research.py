"""Research: the sidebar's model read as researchers read it — the logit lens, a head-importance sweep, head types
and a diff against another model — each from core's single-run definitions (``core.inspect.lens``, ``sweep``,
``head_types``), run through the gate (an upload's in its worker process) and cached per input.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import resources
from app.charts.attention import visible
from app.charts import research as research_charts
from app.charts.research import picked_cell
from app.ui import canvas, compare, presentation, widgets
from core import analysis, head_sweep, head_types, induction_probe, KIND_LABELS, logit_lens, merge_sweeps

MAX_CHARS = 400
SWEEP_PARTS = 8  # the sweep runs in this many gated parts, the progress bar moving between them
DEFAULT = "The animal didn't cross the street because it was too tired."

widgets.restore_from_url({"research_text": widgets.clipped_text(MAX_CHARS)},
                         {"research_text": st.session_state.get("text") or DEFAULT})
st.title("Research: layers and heads")
presentation.folded().caption(  # presentation mode: in a popover, so the first chart is on the first screen
    "What interpretability work measures first, on the model chosen in the sidebar: what each layer would predict, "
    "which heads the prediction needs, which heads are sinks, previous-token or induction heads, and where two "
    "models' attention differs. Each number is computed as the recipe under it says.")
loaded = widgets.current_checkpoint(pretrained=True)
if loaded is None:
    st.info("Pick a model in the sidebar to read it here.")
    st.stop()
entry, ckpt = loaded
config = ckpt.config
fs = widgets.font_scale()
text = st.text_input("Input", key="research_text", max_chars=MAX_CHARS)
if not text.strip():
    st.info("Type an input to read the model on it.")
    st.stop()


def _clicked(key: str) -> tuple[int, int] | None:
    points = ((st.session_state.get(key) or {}).get("selection") or {}).get("points") or []
    return picked_cell(points)


def _knockout_effect(before, after, kind: str, layer: int, head: int, lost: float) -> None:
    """What knocking out (``layer``, ``head``) of ``kind`` changes: its own map stays (the head still computes its
    weights; only its output is 0), so the panels show the next layer's heads, averaged, intact and knocked out."""
    where = f"Layer {layer + 1}, head {head + 1}"
    if layer + 1 >= before.shape(kind)[0]:
        st.caption(f"{where} is in the last layer: no later map of this kind reads its output, so the change of "
                   f"{lost:+.3f} in the prediction is all it does.")
        return
    rows, cols = (tuple(f"{i}:{visible(t)}" for i, t in enumerate(side)) for side in before.axis_tokens(kind))
    intact = np.asarray(before.attention[kind][layer + 1]).mean(axis=0)  # (Tq, Tk)
    knocked = np.asarray(after.attention[kind][layer + 1]).mean(axis=0)
    diff, _ = analysis.difference(knocked, intact)
    canvas.panels([canvas.Panel(intact, rows, cols, f"layer {layer + 2}, intact"),
                   canvas.Panel(knocked, rows, cols, f"layer {layer + 2}, head knocked out"),
                   canvas.Panel(diff, rows, cols, "difference", scale="change")],
                  key="canvas-knockout", title=f"{where} knocked out: the next layer's heads, averaged",
                  name=f"knockout-{kind}-L{layer + 1}H{head + 1}", font_scale=widgets.font_scale(),
                  row_title="query token")
    st.caption(f"{where}'s own map does not change when it is knocked out: it still computes its weights, only its "
               f"output is set to 0. The layer after it reads that output, so its heads (averaged here) attend "
               f"differently; the change of {lost:+.3f} is what the prediction lost.")


# ----------------------------------------------------------------------------- logit lens
st.header("1 · Logit lens: the prediction forming, layer by layer")
if not config.has_decoder:
    st.info("The logit lens reads a decoder's residual stream through its output layer; this model is "
            "encoder-only (try the sweep and the head types below).")
else:
    lens = widgets.attempt("read the logit lens", resources.model_lesson, logit_lens, entry, text, generates=True)
    if lens is not None:
        figure = research_charts.lens_grid(lens, font_scale=fs)
        widgets.plot(figure, name="logit-lens", key="lens_grid", on_select="rerun", selection_mode="points")
        st.caption("Each column is a position of the decoder's input; each cell writes the token that stage would "
                   "predict next, coloured by the probability it gives the model's final choice (the last row is "
                   "the model's own output). Click a cell for its top candidates.")
        stage, position = _clicked("lens_grid") or (len(lens.stages) - 1, len(lens.tokens) - 1)
        stage, position = min(stage, len(lens.stages) - 1), min(position, len(lens.tokens) - 1)
        widgets.candidate_bars(lens.top_tokens[stage][position], lens.top_probs[stage, position],
                               title=f"{lens.stages[stage]}, after ‹{visible(lens.tokens[position])}›: top "
                                     "candidates", x_title="next token", font_scale=fs)
        st.code("from core.inspect.lens import logit_lens\nlens = logit_lens(model, text)  # stages × positions",
                language="python")

# ----------------------------------------------------------------------------- sweep
st.header("2 · Head-importance sweep")
st.markdown("Knock each head out alone (its output set to 0), re-run the model on the same input, and measure the "
            "change in the log-probability of what the intact model predicts. A red cell is a head the prediction "
            "leans on. Rows with a different head knocked out run together in one batch.")
target = st.text_input("Measure the log-probability of this target instead (optional)", key="research_target",
                       max_chars=200, disabled=config.architecture == "encoder")
cells = sum(config.n_layers(kind) for kind in config.attention_kinds) * config.n_heads
if st.button(f"Sweep all {cells} heads", key="research_sweep", type="primary"):
    st.session_state["research_swept"] = (text, target)
if st.session_state.get("research_swept") == (text, target):
    progress = st.progress(0.0, text="Knocking out heads…")
    st.button("Stop the sweep", key="research_stop", on_click=lambda: st.session_state.pop("research_swept", None),
              help="Stops after the part running now; the parts already swept are kept, and Sweep resumes from them.")
    parts, bounds = [], np.linspace(0, cells, min(SWEEP_PARTS, cells) + 1).round().astype(int)
    for done, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:])):
        part = widgets.attempt("sweep the heads", resources.model_lesson, head_sweep,
                               entry, text, target=target.strip() or None, cells=(int(start), int(stop)))
        if part is None:
            break
        parts.append(part)
        progress.progress((done + 1) / (len(bounds) - 1), text=f"{stop} of {cells} heads knocked out")
    if parts:
        sweep = merge_sweeps(parts)
        st.text(f"Measured: {sweep.measure} — intact {sweep.baseline:.3f}")
        for kind, change in sweep.change.items():
            key = f"sweep_{kind}"
            widgets.plot(research_charts.sweep_grid(change, KIND_LABELS[kind], font_scale=fs), name=key, key=key, on_select="rerun", selection_mode="points")
            picked = _clicked(key)
            if picked is not None:
                layer, head = picked
                mask = {kind: analysis.knockout_mask(*change.shape, [(layer, head)])}
                before = resources.explain_entry(entry, text)
                after = widgets.attempt("run the model", resources.explain_entry, entry, text, head_mask=mask)
                if after is not None and before.axis_tokens(kind) == after.axis_tokens(kind):
                    _knockout_effect(before, after, kind, layer, head, change[layer, head])
        st.code("from core.inspect.sweep import head_sweep\nsweep = head_sweep(model, text)  # kind → (L, H)",
                language="python")

# ----------------------------------------------------------------------------- head types
st.header("3 · Head types")
exp = widgets.attempt("run the model", resources.explain_entry, entry, text)
if exp is not None:
    kind = "decoder" if "decoder" in exp.kinds else exp.kinds[0]
    left, right = st.columns(2)
    with left:
        widgets.plot(research_charts.head_type_grid(head_types.sink_share(exp.attention[kind]), "sink", font_scale=fs),
                     name="sink-share")
        st.caption(research_charts.HEAD_TYPES["sink"][2])
    with right:
        widgets.plot(research_charts.head_type_grid(head_types.previous_token_score(exp.attention[kind]), "previous",
                                                    font_scale=fs), name="previous-token")
        st.caption(research_charts.HEAD_TYPES["previous"][2])
    seed = st.number_input("Seed of the random sequence", 0, 9999, 0, key="research_seed")
    probe = widgets.attempt("probe induction", resources.model_lesson, induction_probe,
                            entry, repeat=min(20, max(2, (config.max_len - 2) // 2)), seed=int(seed))
    if probe is not None:
        widgets.plot(research_charts.head_type_grid(probe.score, "induction", suffix=f" · {probe.kind}",
                                                    font_scale=fs), name="induction")
        st.caption(research_charts.HEAD_TYPES["induction"][2])
        widgets.show_user_text(" ".join(visible(t) for t in probe.tokens),
                               f"{probe.repeat} random tokens (seed {probe.seed}), twice:")
    st.code("from core.inspect import head_types\n"
            "head_types.sink_share(exp.attention[kind]); head_types.previous_token_score(exp.attention[kind])\n"
            "head_types.induction_probe(model, repeat=20, seed=0).score", language="python")

# ----------------------------------------------------------------------------- diff
st.header("4 · Diff against another model")
others = [e for e in resources.entries()[0] if e.key != entry.key]
other_key = st.selectbox("Second model (same tokenizer: two snapshots of a run, or a base model and its "
                         "fine-tune)", [None, *(e.key for e in others)], key="research_other",
                         format_func=lambda k: "—" if k is None else resources.entry(k).label)
if exp is not None and other_key is not None:
    second = widgets.attempt("run the second model", resources.explain_entry, resources.entry(other_key), text)
    if second is not None:
        kind = exp.kinds[0]
        try:
            divergence = head_types.map_divergence(exp.attention[kind], second.attention[kind])
        except ValueError as error:
            st.warning(str(error), icon=":material/info:")
        else:
            widgets.plot(research_charts.divergence_grid(divergence, KIND_LABELS[kind], font_scale=fs),
                         name="diff", key="diff_grid", on_select="rerun", selection_mode="points")
            picked = _clicked("diff_grid")
            if picked is not None:
                layer, head = picked
                rows, cols = (tuple(f"{i}:{visible(t)}" for i, t in enumerate(s)) for s in exp.axis_tokens(kind))
                first, other = (np.asarray(e.attention[kind][layer, head]) for e in (exp, second))  # (Tq, Tk) each
                compare.draw(first, other, (rows, cols), (rows, cols), titles=(entry.label,
                             resources.entry(other_key).label), difference_title="difference",
                             name=f"diff-L{layer + 1}H{head + 1}", y_title="query token")
st.caption("Definitions: core/inspect/lens.py, sweep.py and head_types.py state each measure and its recipe.")
widgets.write_to_url(["research_text"])
