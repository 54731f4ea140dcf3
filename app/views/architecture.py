"""Architecture: the loaded model as an encoder-decoder diagram, its parameters per block with the
formulas, Add & Norm, the position-wise FFN as a 1×1 convolution, and LayerNorm vs BatchNorm.

Each section is built only while it is open (``presentation.section``: the first is), and each section with
controls is a fragment: the norm radio reruns sections 1–2, the FFN's tokens and seed section 4, the
batch's sizes and seed section 5; every chart is drawn from its cached spec."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import export, glossary, presentation, tables, vega, widgets
from app.charts import grids
from app.charts.architecture import architecture_diagram, has_final_norm, parameter_chart
from app import resources
from app.views.parts import weight_tying
from app.views.parts.architecture_whisper import whisper_section
from app.views.parts.training_recipe import recipe_section
from core import lessons

NORM_VIEWS = {"checkpoint": "As in the checkpoint", "post": "Post-norm (the paper)",
              "pre": "Pre-norm (the Annotated Transformer)"}


def norm_placement(norm: str, final: bool, as_loaded: bool) -> str:
    """One sentence saying exactly where the drawn model's LayerNorms are."""
    who = "The loaded model" if as_loaded else f"This {norm}-norm drawing"
    if norm == "post":
        text = (f"{who} is post-norm (the paper): an Add & Norm after each sublayer, "
                "LayerNorm(x + Sublayer(x)), and ")
        return text + ("also a final LayerNorm after each stack (this older checkpoint carries one)." if final
                       else "no final LayerNorm after the stack (the last Add & Norm already normalises).")
    return (f"{who} is pre-norm: a LayerNorm before each sublayer, x + Sublayer(LayerNorm(x)), and "
            + ("a final LayerNorm after each stack (the residual stream is never normalised otherwise)." if final
               else "no final LayerNorm after the stack."))


widgets.restore_from_url({"arch_norm": widgets.one_of(NORM_VIEWS), "ffn_tokens": widgets.bounded(1, 12),
                          "ffn_seed": widgets.bounded(0, 9999), "norm_batch": widgets.bounded(1, 6),
                          "norm_tokens": widgets.bounded(2, 8), "norm_features": widgets.bounded(2, 12),
                          "norm_seed": widgets.bounded(0, 9999)},
                         {"arch_norm": "checkpoint", "ffn_tokens": 5, "ffn_seed": 0, "norm_batch": 3, "norm_tokens": 4,
                          "norm_features": 6, "norm_seed": 0})
fs = widgets.font_scale()

presentation.opening("Architecture", (
    "A Transformer is a stack of identical layers. The **encoder** reads the source with self-attention; the "
    "**decoder** writes the output one token at a time with masked self-attention, reads the encoder through "
    "cross-attention, and ends in a projection to the vocabulary. Every sublayer is wrapped in a residual "
    "connection and a LayerNorm (*Add & Norm*). Section 7 shows a real one at work: **Whisper**, speech in, "
    "text out."))

# ----------------------------------------------------------------------------- diagram
@st.fragment(key="arch_model")
def model_sections() -> None:
    """Sections 1 and 2: the sidebar's model as a diagram (its LayerNorms where the radio puts them) and its
    parameters per block against the formulas."""
    presentation.section("1 · The loaded model", "arch-model", model_section, first=True)
    presentation.section("2 · Where the parameters are", "arch-parameters", parameters_section)


def model_section() -> None:
    """Section 1: the sidebar's model as a diagram, its LayerNorms where the radio puts them."""
    loaded = widgets.current_checkpoint()
    if loaded is None:
        st.info("Choose a checkpoint in the sidebar to see its diagram and parameter counts.")
        return
    entry, ckpt = loaded
    cfg = ckpt.config
    if presentation.enabled():  # the diagram on the left, the radio and the folded settings beside it
        drawing, side = st.columns([3, 2], gap="medium")
        with side:
            norm_radio(cfg, horizontal=False)
            with presentation.folded("The model's settings", ":material/table:"):
                settings(entry, cfg)
    else:
        norm_radio(cfg, horizontal=True)
        summary, drawing = st.columns([2, 3])
        with summary:
            settings(entry, cfg)
        side = st.container()  # the note on the LayerNorms under both columns
    view = st.session_state["arch_norm"]
    norm = cfg.norm if view == "checkpoint" else view
    with drawing:
        widgets.diagram(architecture_diagram(cfg, None if view == "checkpoint" else view), key="arch_diagram",
                        font_scale=fs)
        st.caption("Read bottom to top. Dashed arrows are the residual connections (x is added back)"
                   + ("; the orange arrow carries the encoder's output into every decoder layer's cross-attention."
                      if cfg.has_encoder and cfg.has_decoder else "."))
        if cfg.architecture == "encoder":
            glossary.erratum("classifier_code")
    side.info(norm_placement(norm, has_final_norm(cfg, None if view == "checkpoint" else view),
                             view == "checkpoint"))
    widgets.write_to_url(["arch_norm"])


def norm_radio(cfg, horizontal: bool) -> None:
    """Where the diagram draws the LayerNorms: as in the checkpoint ``cfg``, post-norm or pre-norm."""
    st.radio("Draw the LayerNorms", list(NORM_VIEWS), key="arch_norm", horizontal=horizontal,
             format_func=lambda v: f"{NORM_VIEWS[v]} ({cfg.norm}-norm)" if v == "checkpoint" else NORM_VIEWS[v],
             help="Compare where the LayerNorm sits; the model itself is not changed.")


def settings(entry, cfg) -> None:
    """The checkpoint's name (user text) and its configuration as a table."""
    widgets.show_user_text(entry.name, label="Checkpoint")  # a run's name is user text
    st.table(pd.DataFrame([
        ("architecture", cfg.architecture),
        ("encoder layers", cfg.n_encoder_layers if cfg.has_encoder else "—"),
        ("decoder layers", cfg.n_decoder_layers if cfg.has_decoder else "—"),
        ("heads h", cfg.n_heads), ("d_model", cfg.d_model), ("d_k = d_v = d_model / h", cfg.head_dim),
        ("d_ff", cfg.d_ff), ("norm placement", f"{cfg.norm}-norm"),
        ("final LayerNorm after each stack", "yes" if has_final_norm(cfg) else "no"),
        ("positional encoding", cfg.positional + (f" (base {cfg.pe_base:g})"
                                                  if cfg.positional == "sinusoidal" else "")),
        ("score function", cfg.score), ("max_len", cfg.max_len), ("dropout", cfg.dropout),
        ("source vocabulary", cfg.src_vocab_size if cfg.has_encoder else "—"),
        ("target vocabulary", cfg.tgt_vocab_size if cfg.has_decoder else "—"),
        ("classes", cfg.n_classes if cfg.architecture == "encoder" else "—"),
        ("tied embeddings", cfg.tie_embeddings),
    ], columns=["setting", "value"]).astype(str).set_index("setting"))


def parameters_section() -> None:
    """Section 2: where the parameters are, counted by the model and by the formulas."""
    loaded = widgets.current_checkpoint()
    if loaded is None:
        st.info("Choose a checkpoint in the sidebar to count its parameters.")
        return
    ckpt = loaded[1]
    cfg = ckpt.config
    st.markdown(
        "Each attention sublayer holds four D × D matrices (W_Q, W_K, W_V, W_O) with their biases; each FFN two "
        "matrices D × d_ff and d_ff × D; each LayerNorm a gain γ and a shift b of size D. The table compares "
        "the model's own count for each block with the formula.")
    st.latex(r"\text{attention} = 4(D^2 + D) \qquad \text{FFN} = 2\,D\,d_{ff} + d_{ff} + D")
    st.latex(r"\text{LayerNorm} = 2D \qquad \text{embedding} = V \cdot D")
    st.latex(r"\text{encoder layer} = 4(D^2+D) + (2Dd_{ff} + d_{ff} + D) + 2\cdot 2D")
    st.latex(r"\text{decoder layer} = 2\cdot 4(D^2+D) + (2Dd_{ff} + d_{ff} + D) + 3\cdot 2D")
    table = tables.parameter_frame(lessons.parameter_table(widgets.parameter_counts(ckpt), cfg))
    total = int(table["parameters"].sum())
    p_left, p_right = st.columns([3, 1])
    with p_left:
        param_chart = vega.draw(parameter_chart, table, font_scale=fs)
    with p_right:
        st.metric("Total parameters", f"{total:,}")
    st.dataframe(table, hide_index=True, width="content",
                 column_config={"share": st.column_config.NumberColumn(format="percent")})
    if (table["parameters"] == table["from the formula"]).all():
        st.success("Every block's count matches its formula.")
    else:
        st.warning("Some blocks do not match the simple formulas (an unusual configuration).")
    e1, e2 = st.columns(2)
    with e1:
        export.export_chart(param_chart, "parameters", "arch_param_chart")
    with e2:
        export.export_data({"parameters": table["parameters"].to_numpy()}, table, "parameters", "arch_param_data")


# ----------------------------------------------------------------------------- add & norm
def add_norm_section() -> None:
    """Section 3: the residual connection and where the LayerNorm sits."""
    st.markdown(
        "**Add** is a residual connection: the sublayer's output is added to its input, so the sublayer only has "
        "to learn a correction and gradients flow straight through the stack. The addition x + Sublayer(x) only "
        "works because every sublayer returns a vector of the same width d_model as its input: that is why W^O maps "
        "the concatenated heads back to d_model, why the FFN narrows d_ff back to d_model, and why the embeddings "
        "and the positional encoding share that width too. **Norm** is a LayerNorm that keeps "
        "every token's vector at a steady scale. The paper normalises *after* the addition (post-norm); many later "
        "models normalise the sublayer's *input* instead (pre-norm), which trains more easily when the stack is "
        "deep. Because pre-norm never normalises the residual stream itself, it adds one **final LayerNorm** after "
        "each stack; the paper's post-norm stack needs none. Switch between the two in the diagram above.")
    st.latex(r"\text{post-norm:}\quad x \leftarrow \mathrm{LayerNorm}\big(x + \mathrm{Sublayer}(x)\big)"
             r"\quad\text{(no final LayerNorm)}")
    st.latex(r"\text{pre-norm:}\quad x \leftarrow x + \mathrm{Sublayer}\big(\mathrm{LayerNorm}(x)\big)"
             r"\quad\text{(+ a final LayerNorm)}")
    glossary.erratum("add_norm_order")


# ----------------------------------------------------------------------------- FFN
def ffn_section() -> None:
    """Section 4: the FFN token by token and as two kernel-1 convolutions (:func:`ffn_demo`), after its prose."""
    st.markdown(
        "After attention has mixed information *between* tokens, the FFN processes each token *on its own*: the "
        "same two-layer network with a ReLU, applied at every position with the same weights. Each of its two "
        "linear layers, slid along the sequence, is exactly a convolution with kernel size 1, so the paper "
        "describes the FFN as **two convolutions with kernel size 1, with a ReLU between them**. The hidden width "
        "d_ff is usually 4 × d_model.")
    st.latex(r"\mathrm{FFN}(x) = \max(0,\; xW_1 + b_1)\,W_2 + b_2, \qquad W_1 \in \mathbb{R}^{d_{model}\times d_{ff}},"
             r"\; W_2 \in \mathbb{R}^{d_{ff}\times d_{model}}")
    ffn_demo()


@st.fragment(key="arch_ffn")
def ffn_demo() -> None:
    """The FFN of a random sequence, token by token and as convolutions: its tokens and seed rerun this alone (the
    prose and formula above stay as they are)."""
    f1, f2 = st.columns(2)
    with f1:
        st.slider("Tokens in the sequence", 1, 12, key="ffn_tokens")
    with f2:
        st.number_input("Random seed for x and the weights", 0, 9999, step=1, key="ffn_seed")
    ffn = lessons.ffn_as_convolution(st.session_state["ffn_tokens"], 4, 16, int(st.session_state["ffn_seed"]))
    token_names = [f"t{t}" for t in range(st.session_state["ffn_tokens"])]
    dims = [f"d{j}" for j in range(4)]
    panels = grids.side_by_side((ffn.x, ffn.per_token, ffn.conv),
                                ("x (tokens × d_model)", "FFN applied token by token",
                                 "two Conv1d, kernel 1, ReLU between"),
                                x_title="dimension", y_title="token", value="value", rows=token_names, cols=dims,
                                scheme="diverging", annotate=True, max_width=3 * grids.THIRD, font_scale=fs)
    widgets.plot(panels, name="ffn", key="arch_ffn_maps")
    st.success(f"Both give the same output (largest difference {ffn.max_error:.1e}); d_model = 4, "
               "d_ff = 16.")
    widgets.write_to_url(["ffn_tokens", "ffn_seed"])


# ----------------------------------------------------------------------------- LayerNorm vs BatchNorm
@st.fragment(key="arch_norms")
def norm_section() -> None:
    """Section 5: LayerNorm against BatchNorm on a random batch (its four controls rerun it alone)."""
    st.markdown(
        "Both subtract a mean and divide by a standard deviation; they differ in **which numbers** they average. "
        "**LayerNorm** uses the features of one token: every token is normalised on its own, whatever the batch "
        "size or the sentence lengths. **BatchNorm** uses one feature across the whole batch (every token of every "
        "sentence): it depends on the other examples and on padding, which is why Transformers use LayerNorm. "
        "Below, rows are tokens (s = sentence, t = token) and columns are features.")
    st.latex(r"\text{LayerNorm:}\quad \mu_i = \frac{1}{H}\sum_{h=1}^{H} x_{i,h},\quad "
             r"\sigma_i^2 = \frac{1}{H}\sum_{h=1}^{H} (x_{i,h}-\mu_i)^2,\quad "
             r"\hat x_{i,h} = \frac{x_{i,h}-\mu_i}{\sqrt{\sigma_i^2+\epsilon}}")
    st.latex(glossary.LAYERNORM_LATEX)
    st.caption(f"After normalising, LayerNorm applies {glossary.SHIFT_TEXT}. (β is kept for the inverse temperature "
               "of attention.)")
    st.latex(r"\text{BatchNorm:}\quad \mu_h = \frac{1}{m}\sum_{i=1}^{m} x_{i,h},\quad "
             r"\sigma_h^2 = \frac{1}{m}\sum_{i=1}^{m} (x_{i,h}-\mu_h)^2,\quad "
             r"\hat x_{i,h} = \frac{x_{i,h}-\mu_h}{\sqrt{\sigma_h^2+\epsilon}}"
             r"\qquad (m = \text{batch} \times \text{tokens})")
    n1, n2, n3, n4 = st.columns(4)
    with n1:
        st.slider("Sentences (batch)", 1, 6, key="norm_batch")
    with n2:
        st.slider("Tokens per sentence", 2, 8, key="norm_tokens")
    with n3:
        st.slider("Features", 2, 12, key="norm_features")
    with n4:
        st.number_input("Random seed", 0, 9999, step=1, key="norm_seed")
    b, t, f = st.session_state["norm_batch"], st.session_state["norm_tokens"], st.session_state["norm_features"]
    demo = lessons.norm_demo(b, t, f, int(st.session_state["norm_seed"]))
    rows, features = tables.row_labels(b, t), [f"f{j}" for j in range(f)]
    norm_cols = st.columns(3)
    for n, (col, (title, matrix)) in enumerate(zip(norm_cols, (("Input x", demo.x), ("LayerNorm: each row", demo.layer),
                                                             ("BatchNorm: each column", demo.batch)))):
        with col:
            widgets.plot(grids.grid_heatmap(matrix.reshape(-1, f), title=title, x_title="feature", y_title="token",
                                            rows=rows, cols=features, symmetric=True, annotate=len(rows) * f <= 96,
                                            max_width=grids.THIRD, max_height=520, font_scale=fs),
                         name=f"norms-{n + 1}", key=f"arch_norm_map_{n}")
    row_stats, col_stats = tables.norm_frames(lessons.norm_stats(demo), b, t)
    s1, s2 = st.columns(2)
    with s1:
        st.caption("Per token (row): LayerNorm gives mean 0 and std 1; BatchNorm does not.")
        st.dataframe(row_stats.round(4), hide_index=True, width="content")
    with s2:
        st.caption("Per feature (column): BatchNorm gives mean 0 and std 1; LayerNorm does not.")
        st.dataframe(col_stats.round(4), hide_index=True, width="content")
    st.success(f"torch's layer_norm matches the formula to {demo.layer_error:.1e}, batch_norm to "
               f"{demo.batch_error:.1e} (no learned gain γ or shift b here: γ = 1, b = 0).")
    export.export_data({"x": demo.x, "layer": demo.layer, "batch": demo.batch}, row_stats, "layernorm-vs-batchnorm",
                       "arch_norm_data")
    widgets.write_to_url(["norm_batch", "norm_tokens", "norm_features", "norm_seed"])


model_sections()
presentation.section("3 · Add & Norm", "arch-add-norm", add_norm_section)
presentation.section("4 · The position-wise feed-forward network", "arch-ffn", ffn_section)
presentation.section("5 · LayerNorm vs BatchNorm", "arch-norms", norm_section)
presentation.section("6 · How the paper trains it", "arch-recipe", recipe_section, fs)
presentation.section("7 · A real encoder-decoder: Whisper", "arch-whisper",  # its model radio redraws it alone
                     st.fragment(whisper_section, key="arch_whisper_section"), fs)


def tying_section() -> None:
    """Section 8: the paper's weight tying, measured on the sidebar's model (and on one that ties, if it does not)."""
    current = widgets.current_entry()
    facts = None if current is None else widgets.attempt("open the model", resources.checkpoint, current)
    weight_tying.section(current, None if facts is None else facts.config.architecture)


presentation.section("8 · Weight tying: one matrix in and out (§3.4)", "arch-tying", tying_section)
