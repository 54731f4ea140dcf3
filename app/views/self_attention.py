"""Self-attention: strengths and limits. Why attention replaced recurrence, permutation equivariance on
the loaded model, positions beyond the trained length, the "it" coreference example, and the quadratic
cost measured live.

Each section is built only while it is open (``presentation.section``: the first is; so the timing experiment
runs only once section 5 is opened), and each section with controls is a fragment: its controls
rerun it alone, so the longest length reruns the timing and nothing else, and no control reruns the
permutation's model call or the timing experiment of another section. Every chart is drawn from its cached
spec. Every word shown comes from the ``self-attention`` messages in the session's language
(:mod:`app.ui.language`); the MiniLM numbers of section 4 are measured by ``tests/app/test_lessons_claims.py``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.ui import export, language, presentation, vega, widgets
from app import resources, routes
from app.charts import concepts as charts
from app.charts import grids
from app.charts.base import SEQUENTIAL, label_tokens
from core import get_task, lessons

widgets.restore_from_url({"cc_n": widgets.bounded(2, 512), "cc_d": widgets.bounded(8, 1024), "cc_text": widgets.clipped_text(100),
                          "cc_pos": widgets.parse_bool, "cc_layer": widgets.bounded(0, 23), "cc_head": widgets.bounded(0, 63),
                          "cc_max": widgets.bounded(64, 2048)},
                         {"cc_n": 50, "cc_d": 512, "cc_pos": False, "cc_layer": 0, "cc_head": 0, "cc_max": 1024})
fs = widgets.font_scale()

t = language.words("self-attention")
# Measured on MiniLM with core.lessons.head_links (tests/app/test_lessons_claims.py recomputes every number): the two
# heads that link it → animal with "tired" (layer, head, rank of 72), the best it → street head with "wide" and the
# weight that layer 6 head 12 still gives it → animal there.
EXAMPLE = "The animal didn't cross the street because **it** was too tired"  # the input, never translated
CORE_MEASURED = {"layer_a": 4, "head_a": 2, "rank_a": 4, "layer_b": 6, "head_b": 12, "rank_b": 5, "n_heads": 72,
                 "street_rank": 17, "street": 0.24, "animal": 0.56}

presentation.opening(t("opening.title"), t("opening.intro"))


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
    layer, work = t("recurrence.layer"), t("recurrence.work")
    frame = pd.concat([pd.DataFrame({"n": lengths, layer: t("recurrence.recurrent_work"), work: grid.work_rnn}),
                       pd.DataFrame({"n": lengths, layer: t("recurrence.attention_work"), work: grid.work_attention})])
    with plot:
        chart = vega.draw(charts.lines_chart, frame, x="n", y=work, series=layer, log_y=True, log_x=True,
                          font_scale=fs, chart_title=t("recurrence.chart_title", d=d),
                          subtitle=t("recurrence.subtitle"), rule_at=n, rule_label=f"n = {n}")
        export.export_chart(chart, "recurrence-vs-attention", "cc_work_chart")
    widgets.write_to_url(["cc_n", "cc_d"])


def recurrence_controls() -> None:
    """Section 1's prose (folded in presentation mode), its length and width sliders (side by side, or one above
    the other beside the chart in presentation mode) and Table 1 of the paper for them."""
    with presentation.folded(t("recurrence.folded")):
        st.markdown(t("recurrence.why"))
    left, right = (st.container(), st.container()) if presentation.enabled() else st.columns(2)
    left.slider(t("recurrence.length"), 2, 512, key="cc_n")
    right.select_slider(t("recurrence.width"), [8, 16, 32, 64, 128, 256, 512, 1024], key="cc_d")
    one = lessons.path_comparison([int(st.session_state["cc_n"])], int(st.session_state["cc_d"]))
    presentation.folded(t("recurrence.table"), ":material/table:").dataframe(pd.DataFrame({
        t("recurrence.layer"): [t("recurrence.recurrent"), t("recurrence.attention")],
        t("recurrence.sequential"): [one.sequential_rnn[0], one.sequential_attention[0]],
        t("recurrence.path"): [one.path_rnn[0], one.path_attention[0]],
        t("recurrence.per_layer"): [one.work_rnn[0], one.work_attention[0]],
    }), hide_index=True, width="content", key="cc_table")


@st.fragment(key="cc_permutation")
def permutation_section(ckpt) -> None:
    """Shuffle the input: without positions the maps permute exactly, with them they change."""
    st.markdown(t("permutation.intro"))
    if ckpt is None or not ckpt.config.has_encoder:
        st.info(t("permutation.choose"))
        return
    if "cc_text" not in st.session_state:
        examples = widgets.attempt("read the task", lambda: get_task(ckpt.info.task).examples) if ckpt.info.task else None
        st.session_state["cc_text"] = (examples or ("abcdef",))[0]
    st.text_input(t("permutation.input"), key="cc_text", max_chars=100)
    st.toggle(t("permutation.positions"), key="cc_pos")
    cfg = ckpt.config
    a, b = st.columns(2)
    st.session_state["cc_layer"] = min(st.session_state["cc_layer"], cfg.n_encoder_layers - 1)
    st.session_state["cc_head"] = min(st.session_state["cc_head"], cfg.n_heads - 1)
    a.selectbox(t("permutation.layer"), range(cfg.n_encoder_layers), key="cc_layer",
                format_func=lambda n: t("permutation.layer_option", n=n + 1))
    b.selectbox(t("permutation.head"), range(cfg.n_heads), key="cc_head",
                format_func=lambda n: t("permutation.head_option", n=n + 1))
    widgets.write_to_url(["cc_text", "cc_pos", "cc_layer", "cc_head"])
    demo = widgets.attempt("shuffle the input", resources.model_lesson, lessons.permutation_demo, ckpt, st.session_state["cc_text"],
                           positions=bool(st.session_state["cc_pos"]))
    if demo is None:
        return
    for note in demo.notes:
        st.info(note)
    layer, head = int(st.session_state["cc_layer"]), int(st.session_state["cc_head"])
    panels = [(t("permutation.original"), demo.original, demo.tokens),
              (t("permutation.shuffled"), demo.shuffled, demo.shuffled_tokens),
              (t("permutation.put_back"), demo.unshuffled, demo.tokens)]
    for n, (col, (name, maps, tokens)) in enumerate(zip(st.columns(3), panels)):
        with col:
            labels = label_tokens(tokens)
            widgets.plot(grids.grid_heatmap(maps[layer, head], title=name, x_title=t("permutation.key"),
                                            y_title=t("permutation.query"), value=t("permutation.weight"), rows=labels,
                                            cols=labels, scheme=SEQUENTIAL, domain=(0, 1), font_scale=fs,
                                            max_width=grids.THIRD, max_height=300, annotate=False),
                         name=f"permutation-{n + 1}", key=f"cc_permutation_map_{n}")
    st.caption(t("permutation.drawn", layer=layer + 1, head=head + 1))
    verdict = t("permutation.verdict", difference=demo.largest_difference)
    if demo.positions:
        st.warning(verdict + t("permutation.changed"))
    else:
        st.success(verdict + t("permutation.same"))


@st.fragment(key="cc_beyond")
def beyond_section(ckpt) -> None:
    """What the model does with positions past the longest training input."""
    st.markdown(t("beyond.intro"))
    if ckpt is None:
        st.info(t("beyond.choose"))
        return
    beyond = widgets.attempt("compare the model's positions", resources.model_lesson, lessons.pe_beyond, ckpt)
    if beyond is None:
        return
    if beyond.kind == "none":
        st.info(t("beyond.none"))
        return
    trained = beyond.trained
    labels = [str(p) for p in range(len(beyond.similarity))]
    subtitle = t("beyond.trained", last=trained - 1) if trained else t("beyond.all")
    widgets.plot(grids.grid_heatmap(beyond.similarity, title=t("beyond.chart_title"), subtitle=subtitle,
                                    x_title=t("beyond.position"), y_title=t("beyond.position"), value=t("beyond.cosine"),
                                    rows=labels, cols=labels, scheme=SEQUENTIAL, font_scale=fs, max_width=420,
                                    max_height=420, annotate=False), name="position-similarity", key="cc_beyond_map")
    if trained:
        st.caption(t("beyond.unseen", last=trained - 1, worst=beyond.nearest_seen[trained:].min(),
                     seen=beyond.nearest_seen[:trained].min()))
    _length_accuracy(ckpt, trained)


def _length_accuracy(ckpt, trained: int | None) -> None:
    if trained is None:
        shortest, longest = get_task("copy").trained_lengths
        st.caption(t("beyond.by_length", shortest=shortest, longest=longest))
        return
    key = f"_cc_acc_{ckpt.info.path}"
    if st.button(t("beyond.measure"), key="cc_measure", icon=":material/speed:"):
        st.session_state[key] = widgets.attempt("score the model by length", resources.model_lesson,
                                                lessons.length_accuracy, ckpt, per_length=8)
    result = st.session_state.get(key)
    if result is None:
        return
    length, series, accuracy = t("beyond.length"), t("beyond.series"), t("beyond.accuracy")
    frame = pd.DataFrame({length: result.lengths, series: t("beyond.exact"), accuracy: result.exact_match})
    vega.draw(charts.lines_chart, frame, x=length, y=accuracy, series=series, font_scale=fs, y_format=".0%",
              chart_title=t("beyond.chart", task=result.task),
              rule_at=result.trained[1] + 0.5, rule_label=t("beyond.longest"))
    seen = [a for n, a in zip(result.lengths, result.exact_match) if n <= result.trained[1]]
    unseen = [a for n, a in zip(result.lengths, result.exact_match) if n > result.trained[1]]
    st.caption(t("beyond.summary", seen=np.mean(seen), unseen=np.mean(unseen)))


def coreference_section() -> None:
    """The notes' "it" example, where it can be touched."""
    st.markdown(t("coreference.intro", example=EXAMPLE, **CORE_MEASURED))
    st.caption(t("coreference.caution"))
    st.page_link(routes.MINILM, label=t("coreference.link"),
                 icon=":material/hub:")


@st.fragment(key="cc_cost")
def cost_section() -> None:
    """Time one attention call as the length doubles, and the map's memory."""
    st.markdown(t("cost.intro"))
    st.select_slider(t("cost.longest"), [64, 128, 256, 512, 1024, 2048], key="cc_max")
    top = int(st.session_state["cc_max"])
    lengths = [t for t in (16, 32, 64, 128, 256, 512, 1024, 2048) if t <= top]
    cost = widgets.attempt("time attention", resources.attention_timing, tuple(lengths))  # measured once per lengths
    if cost is None:
        return
    memory, measure, value = t("cost.memory"), t("cost.measure"), t("cost.value")
    table = pd.DataFrame({"n": cost.lengths, t("cost.milliseconds"): cost.milliseconds,
                          memory: np.asarray(cost.map_bytes) / 1e6})
    frame = pd.concat([pd.DataFrame({"n": cost.lengths, measure: t("cost.time"), value: cost.milliseconds}),
                       pd.DataFrame({"n": cost.lengths, measure: memory, value: table[memory]})])
    vega.draw(charts.lines_chart, frame, x="n", y=value, series=measure, log_y=True, log_x=True, font_scale=fs,
              chart_title=t("cost.chart_title"), subtitle=t("cost.subtitle"))
    st.dataframe(table, hide_index=True, width="content", key="cc_cost_table")
    st.markdown(t("cost.summary"))
    widgets.write_to_url(["cc_max"])


presentation.section(t("sections.recurrence"), "cc-recurrence", recurrence_section, first=True)
presentation.section(t("sections.permutation"), "cc-permutation", lambda: permutation_section(_checkpoint()))
presentation.section(t("sections.beyond"), "cc-beyond", lambda: beyond_section(_checkpoint()))
presentation.section(t("sections.coreference"), "cc-coreference", coreference_section)
presentation.section(t("sections.cost"), "cc-cost", cost_section)
