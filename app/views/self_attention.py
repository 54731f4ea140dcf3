"""Self-attention: strengths and limits. Why attention replaced recurrence, permutation equivariance on
the loaded model, positions beyond the trained length, the "it" coreference example, and the quadratic
cost measured live.

Each section is built only while it is open (``presentation.section``: the first is; so the timing experiment
runs only once section 5 is opened), and each section with controls is a fragment: its controls
rerun it alone, so the longest length reruns the timing and nothing else, and no control reruns the
permutation's model call or the timing experiment of another section. Every chart is drawn from its cached
spec."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, presentation, vega, widgets
from app import resources, routes
from app.charts import concepts as charts
from app.charts import grids
from app.charts.base import SEQUENTIAL, label_tokens
from core import get_task, lessons

# Measured on MiniLM with core.lessons.head_links (tests/app/test_lessons_claims.py recomputes every number).
CORE_MEASURED = (
    "with *tired*, the heads ranked first from “it” look at “because”, “was” and “tired”; only two heads link "
    "it → animal strongly, layer 4 head 2 and layer 6 head 12, ranked 4th and 5th of 72. With *wide*, no head in "
    "the top 8 links it → street (the best such head is 17th, at 0.24), and layer 6 head 12 still links it → "
    "animal (0.56).")
widgets.restore_from_url({"cc_n": widgets.bounded(2, 512), "cc_d": widgets.bounded(8, 1024), "cc_text": widgets.clipped_text(100),
                          "cc_pos": widgets.parse_bool, "cc_layer": widgets.bounded(0, 23), "cc_head": widgets.bounded(0, 63),
                          "cc_max": widgets.bounded(64, 2048)},
                         {"cc_n": 50, "cc_d": 512, "cc_pos": False, "cc_layer": 0, "cc_head": 0, "cc_max": 1024})
fs = widgets.font_scale()

presentation.opening("Self-attention: strengths and limits", (
    "Self-attention lets every token look at every other token in one step. That is its strength — short paths, "
    "parallel work — and the source of its limits: it has no sense of order of its own, and its cost grows with "
    "the square of the length. Each claim below is measured, most of them on the model chosen in the sidebar."))


def _checkpoint():
    """The sidebar's checkpoint, loaded (None when none is chosen or it cannot be opened)."""
    loaded = widgets.current_checkpoint()
    return loaded[1] if loaded else None


@st.fragment(key="cc_recurrence")
def recurrence_section() -> None:
    """Table 1 of the paper, counted for an interactive length n and width d."""
    controls, plot = presentation.beside()  # presentation mode: the sliders and the table beside the chart
    with controls:
        recurrence_controls()
    n, d = int(st.session_state["cc_n"]), int(st.session_state["cc_d"])
    lengths = sorted({2, 4, 8, 16, 32, 64, 128, 256, 512, n})
    grid = lessons.path_comparison(lengths, d)
    frame = pd.concat([pd.DataFrame({"n": lengths, "layer": "recurrent: n·d²", "work": grid.work_rnn}),
                       pd.DataFrame({"n": lengths, "layer": "self-attention: n²·d", "work": grid.work_attention})])
    with plot:
        chart = vega.draw(charts.lines_chart, frame, x="n", y="work", series="layer", log_y=True, log_x=True,
                          font_scale=fs, chart_title=f"Work per layer at d = {d}",
                          subtitle="log–log scale; they cross at n = d", rule_at=n, rule_label=f"n = {n}")
        export.export_chart(chart, "recurrence-vs-attention", "cc_work_chart")
    widgets.write_to_url(["cc_n", "cc_d"])


def recurrence_controls() -> None:
    """Section 1's prose (folded in presentation mode), its length and width sliders (side by side, or one above
    the other beside the chart in presentation mode) and Table 1 of the paper for them."""
    with presentation.folded("Why attention replaced recurrence"):
        st.markdown(
            "A recurrent network reads a sentence one token after another: n steps that cannot run in parallel, and "
            "a signal from the first token must pass through every later step to reach the last. A self-attention "
            "layer connects every pair of tokens directly: one parallel step, a path of length 1. The price is the "
            "work per layer: n²·d for attention against n·d² for recurrence — attention is cheaper while n < d.")
    left, right = (st.container(), st.container()) if presentation.enabled() else st.columns(2)
    left.slider("Sequence length n", 2, 512, key="cc_n")
    right.select_slider("Width d", [8, 16, 32, 64, 128, 256, 512, 1024], key="cc_d")
    one = lessons.path_comparison([int(st.session_state["cc_n"])], int(st.session_state["cc_d"]))
    presentation.folded("Table 1 of the paper, in numbers", ":material/table:").dataframe(pd.DataFrame({
        "layer": ["recurrent (RNN)", "self-attention"],
        "sequential steps": [one.sequential_rnn[0], one.sequential_attention[0]],
        "longest path between two tokens": [one.path_rnn[0], one.path_attention[0]],
        "work per layer (multiply-adds)": [one.work_rnn[0], one.work_attention[0]],
    }), hide_index=True, width="content", key="cc_table")


@st.fragment(key="cc_permutation")
def permutation_section(ckpt) -> None:
    """Shuffle the input: without positions the maps permute exactly, with them they change."""
    st.markdown(
        "Self-attention compares tokens by content only. Shuffle the input and, if nothing tells the model "
        "where each token stands, every attention map is shuffled the same way and nothing else changes: "
        "A(Px) = P·A(x)·Pᵀ (*permutation equivariance*). Only the positional encoding breaks this symmetry.")
    if ckpt is None or not ckpt.config.has_encoder:
        st.info("Choose a checkpoint with an encoder (translation, reverse, sentiment…) in the sidebar to shuffle "
                "its input.")
        return
    if "cc_text" not in st.session_state:
        examples = widgets.attempt("read the task", lambda: get_task(ckpt.info.task).examples) if ckpt.info.task else None
        st.session_state["cc_text"] = (examples or ("abcdef",))[0]
    st.text_input("Input to shuffle", key="cc_text", max_chars=100)
    st.toggle("Add the positional encoding (the model as trained)", key="cc_pos")
    cfg = ckpt.config
    a, b = st.columns(2)
    st.session_state["cc_layer"] = min(st.session_state["cc_layer"], cfg.n_encoder_layers - 1)
    st.session_state["cc_head"] = min(st.session_state["cc_head"], cfg.n_heads - 1)
    a.selectbox("Encoder layer", range(cfg.n_encoder_layers), key="cc_layer", format_func=lambda n: f"layer {n + 1}")
    b.selectbox("Head", range(cfg.n_heads), key="cc_head", format_func=lambda n: f"head {n + 1}")
    widgets.write_to_url(["cc_text", "cc_pos", "cc_layer", "cc_head"])
    demo = widgets.attempt("shuffle the input", resources.model_lesson, lessons.permutation_demo, ckpt, st.session_state["cc_text"],
                           positions=bool(st.session_state["cc_pos"]))
    if demo is None:
        return
    for note in demo.notes:
        st.info(note)
    layer, head = int(st.session_state["cc_layer"]), int(st.session_state["cc_head"])
    panels = [("A(x): original", demo.original, demo.tokens), ("A(Px): shuffled", demo.shuffled, demo.shuffled_tokens),
              ("PᵀA(Px)P: put back", demo.unshuffled, demo.tokens)]
    for n, (col, (name, maps, tokens)) in enumerate(zip(st.columns(3), panels)):
        with col:
            labels = label_tokens(tokens)
            widgets.plot(grids.grid_heatmap(maps[layer, head], title=name, x_title="key", y_title="query", rows=labels,
                                            cols=labels, scheme=SEQUENTIAL, domain=(0, 1), font_scale=fs,
                                            max_width=grids.THIRD, max_height=300, annotate=False),
                         name=f"permutation-{n + 1}", key=f"cc_permutation_map_{n}")
    st.caption(f"Drawn: encoder layer {layer + 1}, head {head + 1}.")
    verdict = (f"Largest difference between the original map and the un-shuffled one, over every layer and head: "
               f"{demo.largest_difference:.2e}.")
    if demo.positions:
        st.warning(verdict + " With positions added the maps really change: order now matters.")
    else:
        st.success(verdict + " Without positions they are the same map, only permuted (float rounding).")


@st.fragment(key="cc_beyond")
def beyond_section(ckpt) -> None:
    """What the model does with positions past the longest training input."""
    st.markdown(
        "The sinusoidal formula gives a vector for *any* position, so the notes argue it can reach past the "
        "training length. Whether the *model* can use those vectors is another matter: the layers only ever "
        "learned from the positions they saw. A learned position table has no row at all past its size, and no "
        "model here accepts more than its max_len tokens.")
    if ckpt is None:
        st.info("Choose a checkpoint in the sidebar.")
        return
    beyond = widgets.attempt("compare the model's positions", resources.model_lesson, lessons.pe_beyond, ckpt)
    if beyond is None:
        return
    if beyond.kind == "none":
        st.info("This model has no positional encoding, so positions cannot run out — and order is invisible to it.")
        return
    trained = beyond.trained
    labels = [str(p) for p in range(len(beyond.similarity))]
    subtitle = (f"training strings used positions 0–{trained - 1}" if trained else "all positions up to max_len")
    widgets.plot(grids.grid_heatmap(beyond.similarity, title="Cosine similarity of the model's position vectors",
                                    subtitle=subtitle, x_title="position", y_title="position", value="cosine",
                                    rows=labels, cols=labels, scheme=SEQUENTIAL, font_scale=fs, max_width=420,
                                    max_height=420, annotate=False), name="position-similarity", key="cc_beyond_map")
    if trained:
        st.caption(f"Positions past {trained - 1} never occurred in training; the closest seen position is only "
                   f"{beyond.nearest_seen[trained:].min():.2f} alike at worst (seen ones: "
                   f"{beyond.nearest_seen[:trained].min():.2f}).")
    _length_accuracy(ckpt, trained)


def _length_accuracy(ckpt, trained: int | None) -> None:
    if trained is None:
        shortest, longest = get_task("copy").trained_lengths
        st.caption(f"Accuracy by length is measured for the copy, reverse and sort models (trained on "
                   f"{shortest}–{longest} letters); choose one of them in the sidebar.")
        return
    key = f"_cc_acc_{ckpt.info.path}"
    if st.button("Measure accuracy for every length up to max_len", key="cc_measure", icon=":material/speed:"):
        st.session_state[key] = widgets.attempt("score the model by length", resources.model_lesson,
                                                lessons.length_accuracy, ckpt, per_length=8)
    result = st.session_state.get(key)
    if result is None:
        return
    frame = pd.DataFrame({"length": result.lengths, "measure": "exact match", "accuracy": result.exact_match})
    vega.draw(charts.lines_chart, frame, x="length", y="accuracy", series="measure", font_scale=fs, y_format=".0%",
              chart_title=f"{result.task}: accuracy by input length (8 strings each)",
              rule_at=result.trained[1] + 0.5, rule_label="longest training string")
    seen = [a for n, a in zip(result.lengths, result.exact_match) if n <= result.trained[1]]
    unseen = [a for n, a in zip(result.lengths, result.exact_match) if n > result.trained[1]]
    st.caption(f"Seen lengths: {np.mean(seen):.0%} exact; unseen lengths: {np.mean(unseen):.0%} exact.")


def coreference_section() -> None:
    """The notes' "it" example, where it can be touched."""
    st.markdown(
        "In *The animal didn't cross the street because **it** was too tired*, “it” means the animal; change "
        "*tired* to *wide* and it means the street. In principle self-attention can let “it” read whichever noun "
        "fits, in one layer. Our toy models are too small to learn it, so here is what a real pretrained encoder, "
        f"MiniLM (6 layers × 12 heads), measurably does: {CORE_MEASURED}")
    st.caption("Attention weights are not an explanation: where a head looks shows where information can flow, "
               "not why the model decides. The heads did not switch from “animal” to “street”.")
    st.page_link(routes.MINILM, label="Try it on MiniLM (pretrained BERT-family encoder): the head finder",
                 icon=":material/hub:")


@st.fragment(key="cc_cost")
def cost_section() -> None:
    """Time one attention call as the length doubles, and the map's memory."""
    st.markdown("Every token attends to every token: the map has n² entries. Doubling the length quadruples the "
                "map's memory and, once the sizes are large enough to dominate, the time. Measured live on this "
                "machine (4 heads, d_model 64, median of 7 runs; times wobble when the machine is busy, the memory "
                "is exact).")
    st.select_slider("Longest length", [64, 128, 256, 512, 1024, 2048], key="cc_max")
    top = int(st.session_state["cc_max"])
    lengths = [t for t in (16, 32, 64, 128, 256, 512, 1024, 2048) if t <= top]
    cost = widgets.attempt("time attention", resources.attention_timing, tuple(lengths))  # measured once per lengths
    if cost is None:
        return
    table = pd.DataFrame({"n": cost.lengths, "milliseconds": cost.milliseconds,
                          "map memory (MB)": np.asarray(cost.map_bytes) / 1e6})
    frame = pd.concat([pd.DataFrame({"n": cost.lengths, "measure": "time (ms)", "value": cost.milliseconds}),
                       pd.DataFrame({"n": cost.lengths, "measure": "map memory (MB)",
                                     "value": table["map memory (MB)"]})])
    vega.draw(charts.lines_chart, frame, x="n", y="value", series="measure", log_y=True, log_x=True, font_scale=fs,
              chart_title="One attention call as n grows",
              subtitle="log–log scale: slope 2 means ∝ n²; memory = 4·h·n² bytes")
    st.dataframe(table, hide_index=True, width="content", key="cc_cost_table")
    st.markdown("**In short.** Strengths: one step between any two tokens, all positions in parallel. Limits: no "
                "recurrence, so order must be added (positional encodings) and is only learned for the lengths "
                "seen; and n² time and memory per layer.")
    widgets.write_to_url(["cc_max"])


presentation.section("1 · Why attention replaced recurrence", "cc-recurrence", recurrence_section, first=True)
presentation.section("2 · Without positions, attention ignores order", "cc-permutation", lambda: permutation_section(
    _checkpoint()))
presentation.section("3 · Positions beyond the trained length", "cc-beyond", lambda: beyond_section(_checkpoint()))
presentation.section("4 · What does “it” refer to?", "cc-coreference", coreference_section)
presentation.section("5 · The quadratic cost, measured", "cc-cost", cost_section)
