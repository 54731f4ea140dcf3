"""Research: the sidebar's model read as researchers read it — the logit lens, a head-importance sweep, head types
and a diff against another model — each from core's single-run definitions (``core.inspect.lens``, ``sweep``,
``head_types``), run through the gate (an upload's in its worker process) and cached per input.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import resources
from app.charts import comparison
from app.charts.attention import visible
from app.charts.research import cell_grid, picked_cell
from app.ui import presentation, widgets
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


# ----------------------------------------------------------------------------- logit lens
st.header("1 · Logit lens: the prediction forming, layer by layer")
if not config.has_decoder:
    st.info("The logit lens reads a decoder's residual stream through its output layer; this model is "
            "encoder-only (try the sweep and the head types below).")
else:
    lens = widgets.attempt("read the logit lens", resources.model_lesson, logit_lens, entry, text, generates=True)
    if lens is not None:
        columns = [f"{i}: {visible(t)}" for i, t in enumerate(lens.tokens)]
        top = np.array([[visible(stage[p][0])[:6] for p in range(len(lens.tokens))] for stage in lens.top_tokens],
                       dtype=object)
        figure = cell_grid(lens.final_prob, lens.stages, columns, text=top, font_scale=fs,
                           title="Probability of the model's final choice at each position, after each layer",
                           value="probability", zrange=(0.0, 1.0))
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
            widgets.plot(cell_grid(change, [f"layer {l + 1}" for l in range(change.shape[0])],
                                   [f"head {h + 1}" for h in range(change.shape[1])], signed=True, font_scale=fs,
                                   title=f"{KIND_LABELS[kind]}: change when the head is knocked out",
                                   value="Δ log-probability"),
                         name=key, key=key, on_select="rerun", selection_mode="points")
            picked = _clicked(key)
            if picked is not None:
                layer, head = picked
                mask = {kind: analysis.knockout_mask(*change.shape, [(layer, head)])}
                before = resources.explain_entry(entry, text)
                after = widgets.attempt("run the model", resources.explain_entry, entry, text, head_mask=mask)
                if after is not None and before.axis_tokens(kind) == after.axis_tokens(kind):
                    rows, cols = (tuple(f"{i}:{visible(t)}" for i, t in enumerate(side))
                                  for side in before.axis_tokens(kind))
                    diff, _ = analysis.difference(after.attention[kind][layer, head], before.attention[kind][layer, head])
                    widgets.plot(comparison.figure([
                        comparison.Panel(before.attention[kind][layer, head], rows, cols, title="intact"),
                        comparison.Panel(after.attention[kind][layer, head], rows, cols, title="head knocked out"),
                        comparison.Panel(diff, rows, cols, title="difference", scale="difference")],
                        y_title="query token", font_scale=fs), name=f"{key}-L{layer + 1}H{head + 1}", stretch=True)
                    st.caption(f"Layer {layer + 1}, head {head + 1}: its own map is 0 once knocked out; the "
                               f"change of {change[layer, head]:+.3f} is what the prediction lost.")
        st.code("from core.inspect.sweep import head_sweep\nsweep = head_sweep(model, text)  # kind → (L, H)",
                language="python")

# ----------------------------------------------------------------------------- head types
st.header("3 · Head types")
exp = widgets.attempt("run the model", resources.explain_entry, entry, text)
if exp is not None:
    kind = "decoder" if "decoder" in exp.kinds else exp.kinds[0]
    layers, heads = exp.shape(kind)
    row_names, col_names = [f"layer {l + 1}" for l in range(layers)], [f"head {h + 1}" for h in range(heads)]
    types = head_types
    left, right = st.columns(2)
    with left:
        widgets.plot(cell_grid(types.sink_share(exp.attention[kind]), row_names, col_names, font_scale=fs,
                               title="Sink share", value="share", zrange=(0.0, 1.0)), name="sink-share")
        st.caption("The mean weight a head's queries put on the first position (an attention sink).")
    with right:
        widgets.plot(cell_grid(types.previous_token_score(exp.attention[kind]), row_names, col_names, font_scale=fs,
                               title="Previous-token score", value="weight", zrange=(0.0, 1.0)),
                     name="previous-token")
        st.caption("The mean weight query i puts on key i − 1.")
    seed = st.number_input("Seed of the random sequence", 0, 9999, 0, key="research_seed")
    probe = widgets.attempt("probe induction", resources.model_lesson, induction_probe,
                            entry, repeat=min(20, max(2, (config.max_len - 2) // 2)), seed=int(seed))
    if probe is not None:
        widgets.plot(cell_grid(probe.score, [f"layer {l + 1}" for l in range(probe.score.shape[0])],
                               [f"head {h + 1}" for h in range(probe.score.shape[1])], font_scale=fs,
                               title=f"Induction score · {probe.kind}", value="weight", zrange=(0.0, 1.0)),
                     name="induction")
        st.caption("On a random sequence repeated twice, the mean weight a token of the second copy puts on the "
                   "token that followed its first occurrence: what an induction head copies from.")
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
            divergence = head_types.map_divergence(exp.attention[kind],
                                                                               second.attention[kind])
        except ValueError as error:
            st.warning(str(error), icon=":material/info:")
        else:
            widgets.plot(cell_grid(divergence, [f"layer {l + 1}" for l in range(divergence.shape[0])],
                                   [f"head {h + 1}" for h in range(divergence.shape[1])], font_scale=fs,
                                   title=f"{KIND_LABELS[kind]}: Jensen–Shannon divergence",
                                   value="bits", zrange=(0.0, 1.0)),
                         name="diff", key="diff_grid", on_select="rerun", selection_mode="points")
            picked = _clicked("diff_grid")
            if picked is not None:
                layer, head = picked
                rows, cols = (tuple(f"{i}:{visible(t)}" for i, t in enumerate(s)) for s in exp.axis_tokens(kind))
                widgets.plot(comparison.figure([
                    comparison.Panel(exp.attention[kind][layer, head], rows, cols, title=entry.label),
                    comparison.Panel(second.attention[kind][layer, head], rows, cols,
                                     title=resources.entry(other_key).label)],
                    y_title="query token", font_scale=fs), name=f"diff-L{layer + 1}H{head + 1}", stretch=True)
st.caption("Definitions: core/inspect/lens.py, sweep.py and head_types.py state each measure and its recipe.")
widgets.write_to_url(["research_text"])
