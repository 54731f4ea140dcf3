"""Widget groups of the Explore page: input, prediction, the attention views, interventions, compare.

Each function reads its widgets, slices a cached :class:`~core.Explanation` and draws. The model
runs only through cached calls (``resources.explain_entry``, and ``resources.explain_batch_entry``
for the padding experiment) keyed by text and options; kind, layer, head and step controls only slice.
"""

from __future__ import annotations

import re
from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from app import catalog, ui
from app.charts import attention as charts
from core import (
    KIND_LABELS, Explanation, get_task, head_statistics, mean_over_heads, rollout_by_layer,
)

URL_KEYS = ["text", "kind", "layer", "head", "view", "decoding"]
URL_PARSERS = {"text": str, "kind": str, "layer": int, "head": int, "view": str, "decoding": str}
VIEWS = {"model": "Model view", "head": "Head view", "lines": "Lines", "summary": "Summary",
         "generation": "Generation"}
DECODINGS = {"greedy": "Greedy", "beam": "Beam search"}
MAX_URL_TEXT = 500  # longer text is left out of the share link
UNK = "<unk>"
_MARKDOWN = re.compile(r"([\\`*_\[\]<>#|~$])")


def plain(text: str) -> str:
    """``text`` with Markdown/HTML characters escaped, for captions and alerts."""
    return _MARKDOWN.sub(r"\\\1", text)


def chart(figure: Any, **kwargs: Any) -> Any:
    """Draw an Altair chart at its own size (``pad``: Streamlit would otherwise squeeze a single view,
    legend and axis labels included, into the plot's width)."""
    if isinstance(figure, (alt.Chart, alt.LayerChart)):
        figure = figure.properties(autosize=alt.AutoSizeParams(type="pad"))
    return st.altair_chart(figure, width="content", **kwargs)


def bars(figure: Any) -> Any:
    """Draw a bar chart across its column (its height kept: ``fit-x``)."""
    figure = figure.properties(autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    return st.altair_chart(figure, width="stretch")


def exports(figure: Any, arrays: dict[str, np.ndarray], table: pd.DataFrame, name: str) -> None:
    """Chart and data export buttons side by side."""
    with st.container(horizontal=True):
        ui.export_chart(figure, name, key=f"export-{name}")
        ui.export_data(arrays, table, name, key=f"export-{name}-data")


def clamp(key: str, upper: int) -> int:
    """Keep an integer session value in [0, upper] (a stale value from another checkpoint never crashes)."""
    try:
        value = int(st.session_state.get(key, 0))
    except (TypeError, ValueError):
        value = 0
    st.session_state[key] = min(max(value, 0), max(upper, 0))
    return st.session_state[key]


def choose(key: str, options: list[str], default: str | None = None) -> None:
    """Reset a single-choice widget's session value when it is not one of ``options``."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]


def index_slider(label: str, count: int, key: str, help: str | None = None) -> int:
    """A 0-based slider over ``count`` items (a fixed value when there is only one)."""
    value = clamp(key, count - 1)
    if count > 1:
        return st.slider(label, 0, count - 1, key=key, help=help)
    st.caption(f"{label}: 0 (the only one)")
    return value


# ----------------------------------------------------------------------------- header and input
def header(entry: catalog.Entry, config: Any) -> None:
    """The checkpoint's description, test metric and shape."""
    layers = {"encoder-decoder": f"{config.n_encoder_layers} encoder + {config.n_decoder_layers} decoder layers",
              "encoder": f"{config.n_encoder_layers} encoder layers",
              "decoder": f"{config.n_decoder_layers} decoder layers"}[config.architecture]
    st.markdown(f"**{plain(entry.name)}** — {plain(entry.description)}")
    st.caption(f"{config.architecture} · {layers} · {config.n_heads} heads · d_model {config.d_model} · "
               f"{entry.metric or 'no test metric recorded'}")


def _use_example() -> None:
    choice = st.session_state.get("example")
    if choice:
        st.session_state["text"] = choice
    st.session_state["example"] = None


def text_input(entry: catalog.Entry) -> str:
    """Example pills and the text area; returns the text to explain."""
    try:
        examples = list(get_task(entry.task).examples) if entry.task else []
    except ValueError:
        examples = []
    previous = st.session_state.get("_explore_examples")
    switched = previous is not None and previous != examples and st.session_state.get("text") in previous
    if "text" not in st.session_state or (switched and examples):
        st.session_state["text"] = examples[0] if examples else ""  # a new task starts on its own example
    st.session_state["_explore_examples"] = examples
    if examples:
        st.pills("Try an example", examples, key="example", on_change=_use_example)
    return st.text_area("Input text", key="text", height=90, placeholder="Type a sentence…")


def base_options(architecture: str, view: str | None) -> dict[str, Any]:
    """Decoding controls (seq2seq) or continuation (language model) → explain options."""
    options: dict[str, Any] = {}
    if architecture == "encoder-decoder":
        left, right, _ = st.columns([2, 2, 3])
        choose("decoding", list(DECODINGS), "greedy")
        with left:
            st.segmented_control("Decoding", list(DECODINGS), key="decoding", required=True,
                                 format_func=DECODINGS.get,
                                 help="Greedy takes the most likely token each step; beam search keeps several "
                                      "candidate outputs and returns the most likely one.")
        options["decoding"] = st.session_state["decoding"]
        if options["decoding"] == "beam":
            with right:
                options["beam_size"] = st.slider("Beam size", 2, 8, 4, key="beam_size")
    elif architecture == "decoder":
        options["continuation"] = st.slider("Continue for this many tokens", 0, 20, 0, key="continuation",
                                            help="Let the language model keep writing after your text.")
    if view == "head" and st.session_state.get("show_scores"):
        options["return_scores"] = True  # only then: scores need a separate (cached) run
    return options


def tokens(exp: Explanation) -> None:
    """The tokens the model read, as a table of chips; unknown tokens flagged; notes."""
    items = exp.source_tokens or exp.target_tokens
    shown = [("⚠ " + UNK) if t == UNK else charts.visible(t) for t in items]
    frame = pd.DataFrame([shown], columns=[str(i) for i in range(len(items))], index=["token"])
    st.table(frame.style.map(lambda v: "background-color: #fdae61; color: #000; font-weight: 700"
                             if v.startswith("⚠") else ""))
    unknown = items.count(UNK)
    st.caption(f"{len(items)} tokens" + (f" · {unknown} unknown to the model (⚠)" if unknown else ""))
    for note in exp.notes:
        st.warning(plain(note), icon=":material/info:")
    read = exp.text
    ends = [end for _, end in (exp.source_offsets or exp.target_offsets) if end]
    if exp.truncated and ends:
        read = exp.text[:max(ends)]
    preview = read if len(read) <= 300 else read[:300] + " …"
    ui.show_user_text(preview, "The model read:" if not exp.truncated else
                      f"The model read only the first {len(read):,} of {len(exp.text):,} characters:")


def prediction(exp: Explanation, font_scale: float) -> None:
    """The generated text, the class probabilities or the next-token candidates."""
    pred = exp.prediction
    if pred.kind == "text":
        st.caption("Generated output")
        st.code(pred.text or "(empty)", language=None)
        if not pred.finished:
            st.caption("The output hit the length limit before an end-of-sequence token.")
        return
    if pred.kind == "class":
        st.caption("Predicted class")
        st.code(pred.text, language=None)
        bars(charts.probability_bars(pred.labels, pred.probabilities, title="Class probabilities", x_title="class",
                                     font_scale=font_scale))
        return
    st.caption("Most likely next token" + (" and continuation" if exp.options.get("continuation") else ""))
    st.code(charts.visible(pred.text), language=None)  # a space or newline must not look like nothing
    bars(charts.probability_bars(pred.labels, pred.probabilities, title="Next-token candidates",
                                 x_title="next token", font_scale=font_scale))


# ----------------------------------------------------------------------------- view selection
def attention_controls(exp: Explanation) -> tuple[str, int, int, str]:
    """Kind, layer, head and view pickers, each clamped to this explanation's ranges."""
    kinds = list(exp.kinds)
    choose("kind", kinds)
    views = [v for v in VIEWS if v != "generation" or exp.architecture != "encoder"]
    choose("view", views, "head")
    kind = st.segmented_control("Attention", kinds, key="kind", required=True, format_func=KIND_LABELS.get)
    view = st.segmented_control("View", views, key="view", required=True, format_func=VIEWS.get)
    layers, heads = exp.shape(kind)
    first, second = st.columns(2, gap="large")
    with first:
        layer = index_slider("Layer", layers, "layer")
    with second:
        head = index_slider("Head", heads, "head")
    return kind, layer, head, view


def _pick_from_grid() -> None:
    picked = (st.session_state.get("grid") or {}).get("selection", {}).get(charts.PICK) or []
    if picked:
        st.session_state["layer"] = int(picked[0]["layer"])
        st.session_state["head"] = int(picked[0]["head"])


def _data(exp: Explanation, kind: str) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    queries, keys = exp.axis_tokens(kind)
    maps = exp.attention[kind]  # (L, H, Tq, Tk)
    return ({"attention": maps, "query_tokens": np.array(queries), "key_tokens": np.array(keys)},
            charts.tidy_maps(maps, queries, keys))


# ----------------------------------------------------------------------------- views
def model_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    grid = charts.model_grid(exp.attention[kind], queries, keys, title=f"{KIND_LABELS[kind]}: every layer × head",
                             chosen=(layer, head), font_scale=fs)
    chart(grid, key="grid", on_select=_pick_from_grid, selection_mode=charts.PICK)
    exports(grid, *_data(exp, kind), f"{kind}-all-heads")
    chart(charts.head_heatmap(exp.attention[kind][layer, head], queries, keys,
                              title=f"Layer {layer}, head {head}", font_scale=fs))


def head_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    st.toggle("Show the scores before softmax", key="show_scores",
              help="The raw query·key scores (β-scaled, before masking) that softmax turns into weights.")
    figure = charts.head_heatmap(exp.attention[kind][layer, head], queries, keys,
                                 title=f"{KIND_LABELS[kind]} — layer {layer}, head {head}", font_scale=fs)
    if st.session_state.get("show_scores") and exp.scores:
        scores = charts.signed_heatmap(exp.scores[kind][layer, head], queries, keys, value="score",
                                       title="Scores before softmax", font_scale=fs)
        figure = charts.side_by_side(figure, scores)
    chart(figure)
    exports(figure, *_data(exp, kind), f"{kind}-L{layer}H{head}")
    st.caption("Each row is one query token; its weights over the key tokens sum to 1.")


def lines_view(exp: Explanation, kind: str, layer: int, head: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    heads = exp.shape(kind)[1]
    options = [*range(heads), "mean"]
    chosen = [h for h in st.session_state.get("line_heads", [head]) if h in options]
    st.session_state["line_heads"] = chosen
    picked = st.multiselect("Heads to overlay", options, key="line_heads",
                            format_func=lambda h: "mean of heads" if h == "mean" else f"head {h}")
    if not picked:
        st.info("Pick at least one head to draw its lines.")
        return
    maps = exp.attention[kind][layer]  # (H, Tq, Tk)
    rows = {("mean" if h == "mean" else f"head {h}"): (maps.mean(0) if h == "mean" else maps[h]) for h in picked}
    figure = charts.lines_chart(rows, queries, keys, title=f"{KIND_LABELS[kind]} — layer {layer}", font_scale=fs)
    chart(figure)
    exports(figure, *_data(exp, kind), f"{kind}-L{layer}-lines")


def summary_view(exp: Explanation, kind: str, layer: int, fs: float) -> None:
    queries, keys = exp.axis_tokens(kind)
    maps = exp.attention[kind]
    square = kind in ("encoder", "decoder")
    left, right = st.columns(2)
    with left:
        mean = mean_over_heads(maps)  # (L, Tq, Tk)
        chart(charts.head_heatmap(mean[layer], queries, keys, title=f"Layer {layer}: mean over heads",
                                  font_scale=fs))
    with right:
        if square:
            flow = rollout_by_layer(maps)  # (L, T, T)
            chart(charts.head_heatmap(flow[-1], queries, keys, title="Attention rollout through every layer",
                                      font_scale=fs))
        else:
            st.info("Rollout follows one sequence through its own layers, so it is defined for "
                    "self-attention only (cross-attention maps decoder rows onto encoder columns).")
    if square:
        st.latex(r"\tilde A_\ell = \operatorname{rownorm}\Big(\tfrac{1}{H}\textstyle\sum_h A_{\ell,h} + I\Big),"
                 r"\qquad R = \tilde A_L \cdots \tilde A_2\,\tilde A_1")
        st.caption("Rollout (Abnar & Zuidema, 2020): the identity stands for the residual connection; row i of R "
                   "says how much the last layer's token i draws on each input token.")
    records = head_statistics(maps, self_attention=square)
    stats = charts.stats_heatmaps(records, font_scale=fs)
    chart(stats)
    table = pd.DataFrame(records).dropna(axis=1, how="all")
    st.dataframe(table.rename(columns=charts.STAT_TITLES).round(3), hide_index=True, width="content")
    formula = r"H_{\ell,h} = \operatorname{mean}_i\Big(-\sum_j a_{ij}\log_2 a_{ij}\Big)\ \text{bits}"
    if square:
        formula += r",\qquad d_{\ell,h} = \operatorname{mean}_i \sum_j a_{ij}\,|i-j|"
    st.latex(formula)
    st.caption("Entropy: 0 bits when each query looks at a single key, log₂(number of keys) when it spreads "
               "evenly. Mean distance: how far, in positions, a head looks on average.")
    arrays = {"mean_over_heads": mean, **({"rollout": flow} if square else {})}
    exports(stats, arrays, table, f"{kind}-summary")


def generation_view(exp: Explanation, layer: int, head: int, fs: float) -> None:
    steps = len(exp.generated_tokens)
    if not steps:
        st.info("This model does not generate text.")
        return
    layers, heads = exp.shape("decoder")
    layer, head = min(layer, layers - 1), min(head, heads - 1)
    step = index_slider("Step", steps, "step", help="Walk through the output one token at a time.")
    average = st.toggle("Average over heads", key="gen_mean")
    which = "mean of heads" if average else f"head {head}"

    def row(kind: str) -> np.ndarray:
        maps = exp.attention[kind][layer]  # (H, Tq, Tk)
        return (maps.mean(0) if average else maps[head])[step]

    reads, makes = (charts.visible(t) for t in (exp.target_tokens[step], exp.generated_tokens[step]))
    if exp.architecture == "encoder-decoder":
        st.text(f"Step {step}: the decoder reads “{reads}” and produces “{makes}”.")
        ui.show_user_text(" ".join(charts.visible(t) for t in exp.generated_tokens[:step + 1]), "Output so far:")
    else:
        st.text(f"Position {step}: after reading “{reads}” the most likely next token is “{makes}”.")
    figures = []
    if "cross" in exp.attention:
        figures.append(charts.row_bars(row("cross"), exp.source_tokens, font_scale=fs,
                                       title=f"Cross-attention over the source (layer {layer}, {which})"))
    figures.append(charts.row_bars(row("decoder"), exp.target_tokens, font_scale=fs, x_title="decoder input token",
                                   title=f"Decoder self-attention (layer {layer}, {which})"))
    for column, figure in zip(st.columns(len(figures)), figures):
        with column:
            chart(figure)
    st.caption("Under the causal mask the decoder gives the tokens after this step a weight of exactly 0.")
    exports(figures[0], *_data(exp, "cross" if "cross" in exp.attention else "decoder"), f"step-{step}")


# ----------------------------------------------------------------------------- interventions
def share(text: str) -> None:
    """Mirror the page state into the URL; very long text is left out of the link."""
    if len(text) > MAX_URL_TEXT:
        st.query_params.pop("text", None)
        ui.write_to_url([k for k in URL_KEYS if k != "text"])
    else:
        ui.write_to_url(URL_KEYS)
