"""Architecture: the loaded model as an encoder-decoder diagram, its parameters per block with the
formulas, Add & Norm, the position-wise FFN as a 1×1 convolution, and LayerNorm vs BatchNorm.

Each section is built only while it is open (``presentation.section``: the first is), and each section with
controls is a fragment: the norm radio reruns sections 1–2, the FFN's tokens and seed section 4, the
batch's sizes and seed section 5; every chart is drawn from its cached spec. Every word shown comes from the
``architecture`` messages in the session's language (:mod:`app.ui.language`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.ui import export, glossary, language, presentation, tables, vega, widgets
from app.charts import grids
from app.charts.architecture import architecture_diagram, has_final_norm, parameter_chart
from app import resources
from app.views.parts import weight_tying
from app.views.parts.architecture_whisper import whisper_section
from app.views.parts.training_recipe import recipe_section
from core import lessons

NORM_VIEWS = {"checkpoint": "model.as_checkpoint", "post": "model.post", "pre": "model.pre"}  # view → its label's message


def norm_placement(norm: str, final: bool, as_loaded: bool) -> str:
    """One sentence saying exactly where the drawn model's LayerNorms are."""
    t = language.words("architecture")
    who = t("placement.loaded") if as_loaded else t("placement.drawing", norm=norm)
    ending = "final" if final else "none"
    return t(f"placement.{norm}", who=who) + t(f"placement.{norm}_{ending}")


widgets.restore_from_url({"arch_norm": widgets.one_of(NORM_VIEWS), "ffn_tokens": widgets.bounded(1, 12),
                          "ffn_seed": widgets.bounded(0, 9999), "norm_batch": widgets.bounded(1, 6),
                          "norm_tokens": widgets.bounded(2, 8), "norm_features": widgets.bounded(2, 12),
                          "norm_seed": widgets.bounded(0, 9999)},
                         {"arch_norm": "checkpoint", "ffn_tokens": 5, "ffn_seed": 0, "norm_batch": 3, "norm_tokens": 4,
                          "norm_features": 6, "norm_seed": 0})
fs = widgets.font_scale()

lang = language.current()
t = language.words("architecture")

presentation.opening(t("opening.title"), t("opening.intro"))

# ----------------------------------------------------------------------------- diagram
@st.fragment(key="arch_model")
def model_sections() -> None:
    """Sections 1 and 2: the sidebar's model as a diagram (its LayerNorms where the radio puts them) and its
    parameters per block against the formulas."""
    presentation.section(t("sections.model"), "arch-model", model_section, first=True)
    presentation.section(t("sections.parameters"), "arch-parameters", parameters_section)


def model_section() -> None:
    """Section 1: the sidebar's model as a diagram, its LayerNorms where the radio puts them."""
    loaded = widgets.current_checkpoint()
    if loaded is None:
        st.info(t("model.choose"))
        return
    entry, ckpt = loaded
    cfg = ckpt.config
    if presentation.enabled():  # the diagram on the left, the radio and the folded settings beside it
        drawing, side = st.columns([3, 2], gap="medium")
        with side:
            norm_radio(cfg, horizontal=False)
            with presentation.folded(t("model.settings"), ":material/table:"):
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
        widgets.diagram(architecture_diagram(cfg, None if view == "checkpoint" else view, lang), key="arch_diagram",
                        font_scale=fs)
        st.caption(t("model.read") + t("model.read_cross" if cfg.has_encoder and cfg.has_decoder else "model.read_end"))
        if cfg.architecture == "encoder":
            glossary.erratum("classifier_code")
    side.info(norm_placement(norm, has_final_norm(cfg, None if view == "checkpoint" else view),
                             view == "checkpoint"))
    widgets.write_to_url(["arch_norm"])


def norm_radio(cfg, horizontal: bool) -> None:
    """Where the diagram draws the LayerNorms: as in the checkpoint ``cfg``, post-norm or pre-norm."""
    st.radio(t("model.radio"), list(NORM_VIEWS), key="arch_norm", horizontal=horizontal,
             format_func=lambda v: t("model.as_checkpoint_option", view=t(NORM_VIEWS[v]), norm=cfg.norm)
             if v == "checkpoint" else t(NORM_VIEWS[v]), help=t("model.radio_help"))


def settings(entry, cfg) -> None:
    """The checkpoint's name (user text) and its configuration as a table."""
    widgets.show_user_text(entry.name, label=t("model.checkpoint"))  # a run's name is user text
    yes_no = {True: t("model.yes"), False: t("model.no")}
    positional = (t("model.base", kind=cfg.positional, base=cfg.pe_base) if cfg.positional == "sinusoidal"
                  else cfg.positional)
    rows = [
        ("architecture", cfg.architecture),
        ("encoder_layers", cfg.n_encoder_layers if cfg.has_encoder else "—"),
        ("decoder_layers", cfg.n_decoder_layers if cfg.has_decoder else "—"),
        ("heads", cfg.n_heads), ("d_model", cfg.d_model), ("head_dim", cfg.head_dim),
        ("d_ff", cfg.d_ff), ("norm", f"{cfg.norm}-norm"), ("final_norm", yes_no[has_final_norm(cfg)]),
        ("positional", positional), ("score", cfg.score), ("max_len", cfg.max_len), ("dropout", cfg.dropout),
        ("src_vocab", cfg.src_vocab_size if cfg.has_encoder else "—"),
        ("tgt_vocab", cfg.tgt_vocab_size if cfg.has_decoder else "—"),
        ("classes", cfg.n_classes if cfg.architecture == "encoder" else "—"),
        ("tied", yes_no[bool(cfg.tie_embeddings)]),
    ]
    names = {key: t(f"model.rows.{key}", formula="d_k = d_v = d_model / h") for key, _ in rows}  # a formula: as is
    st.table(pd.DataFrame([(names[key], value) for key, value in rows],
                          columns=[t("model.setting"), t("model.value")]).astype(str).set_index(t("model.setting")))


def parameters_section() -> None:
    """Section 2: where the parameters are, counted by the model and by the formulas."""
    loaded = widgets.current_checkpoint()
    if loaded is None:
        st.info(t("parameters.choose"))
        return
    ckpt = loaded[1]
    cfg = ckpt.config
    st.markdown(t("parameters.intro"))
    word = {key: r"\text{" + t(f"parameters.{key}") + "}" for key in ("attention", "embedding", "encoder_layer",
                                                                     "decoder_layer")}
    st.latex(word["attention"] + r" = 4(D^2 + D) \qquad \text{FFN} = 2\,D\,d_{ff} + d_{ff} + D")
    st.latex(r"\text{LayerNorm} = 2D \qquad " + word["embedding"] + r" = V \cdot D")
    st.latex(word["encoder_layer"] + r" = 4(D^2+D) + (2Dd_{ff} + d_{ff} + D) + 2\cdot 2D")
    st.latex(word["decoder_layer"] + r" = 2\cdot 4(D^2+D) + (2Dd_{ff} + d_{ff} + D) + 3\cdot 2D")
    table = tables.parameter_frame(lessons.parameter_table(widgets.parameter_counts(ckpt), cfg))
    total = int(table["parameters"].sum())
    p_left, p_right = st.columns([3, 1])
    with p_left:
        param_chart = vega.draw(parameter_chart, table, font_scale=fs, lang=lang)
    with p_right:
        st.metric(t("parameters.total"), f"{total:,}")
    columns = {name: t(f"parameters.{key}") for name, key in (("block", "block"), ("parameters", "parameters"),
               ("formula", "formula"), ("from the formula", "from_formula"), ("share", "share"))}
    st.dataframe(table.rename(columns=columns), hide_index=True, width="content",
                 column_config={columns["share"]: st.column_config.NumberColumn(format="percent")})
    if (table["parameters"] == table["from the formula"]).all():
        st.success(t("parameters.match"))
    else:
        st.warning(t("parameters.mismatch"))
    e1, e2 = st.columns(2)
    with e1:
        export.export_chart(param_chart, "parameters", "arch_param_chart")
    with e2:
        export.export_data({"parameters": table["parameters"].to_numpy()}, table, "parameters", "arch_param_data")


# ----------------------------------------------------------------------------- add & norm
def add_norm_section() -> None:
    """Section 3: the residual connection and where the LayerNorm sits."""
    st.markdown(t("add_norm.intro"))
    st.latex(r"\text{" + t("add_norm.post") + r"}\quad x \leftarrow \mathrm{LayerNorm}\big(x + \mathrm{Sublayer}(x)\big)"
             r"\quad\text{" + t("add_norm.no_final") + "}")
    st.latex(r"\text{" + t("add_norm.pre") + r"}\quad x \leftarrow x + \mathrm{Sublayer}\big(\mathrm{LayerNorm}(x)\big)"
             r"\quad\text{" + t("add_norm.final") + "}")
    glossary.erratum("add_norm_order")


# ----------------------------------------------------------------------------- FFN
def ffn_section() -> None:
    """Section 4: the FFN token by token and as two kernel-1 convolutions (:func:`ffn_demo`), after its prose."""
    st.markdown(t("ffn.intro"))
    st.latex(r"\mathrm{FFN}(x) = \max(0,\; xW_1 + b_1)\,W_2 + b_2, \qquad W_1 \in \mathbb{R}^{d_{model}\times d_{ff}},"
             r"\; W_2 \in \mathbb{R}^{d_{ff}\times d_{model}}")
    ffn_demo()


@st.fragment(key="arch_ffn")
def ffn_demo() -> None:
    """The FFN of a random sequence, token by token and as convolutions: its tokens and seed rerun this alone (the
    prose and formula above stay as they are)."""
    f1, f2 = st.columns(2)
    with f1:
        st.slider(t("ffn.tokens"), 1, 12, key="ffn_tokens")
    with f2:
        st.number_input(t("ffn.seed"), 0, 9999, step=1, key="ffn_seed")
    d_model, d_ff = 4, 16  # small enough to read every cell
    ffn = lessons.ffn_as_convolution(st.session_state["ffn_tokens"], d_model, d_ff, int(st.session_state["ffn_seed"]))
    token_names = [f"t{n}" for n in range(st.session_state["ffn_tokens"])]
    dims = [f"d{j}" for j in range(d_model)]
    panels = grids.side_by_side((ffn.x, ffn.per_token, ffn.conv),
                                (t("ffn.x"), t("ffn.per_token"), t("ffn.conv")), x_title=t("ffn.dimension"),
                                y_title=t("ffn.token"), value=t("ffn.value"), rows=token_names, cols=dims,
                                scheme="diverging", annotate=True, max_width=3 * grids.THIRD, font_scale=fs)
    widgets.plot(panels, name="ffn", key="arch_ffn_maps")
    st.success(t("ffn.result", error=ffn.max_error, d_model=d_model, d_ff=d_ff))
    widgets.write_to_url(["ffn_tokens", "ffn_seed"])


# ----------------------------------------------------------------------------- LayerNorm vs BatchNorm
@st.fragment(key="arch_norms")
def norm_section() -> None:
    """Section 5: LayerNorm against BatchNorm on a random batch (its four controls rerun it alone)."""
    st.markdown(t("norms.intro"))
    st.latex(r"\text{LayerNorm:}\quad \mu_i = \frac{1}{H}\sum_{h=1}^{H} x_{i,h},\quad "
             r"\sigma_i^2 = \frac{1}{H}\sum_{h=1}^{H} (x_{i,h}-\mu_i)^2,\quad "
             r"\hat x_{i,h} = \frac{x_{i,h}-\mu_i}{\sqrt{\sigma_i^2+\epsilon}}")
    st.latex(glossary.LAYERNORM_LATEX)
    st.caption(t("norms.shift"))
    st.latex(r"\text{BatchNorm:}\quad \mu_h = \frac{1}{m}\sum_{i=1}^{m} x_{i,h},\quad "
             r"\sigma_h^2 = \frac{1}{m}\sum_{i=1}^{m} (x_{i,h}-\mu_h)^2,\quad "
             r"\hat x_{i,h} = \frac{x_{i,h}-\mu_h}{\sqrt{\sigma_h^2+\epsilon}}"
             r"\qquad (m = \text{" + t("norms.batch_tokens") + r"} \times \text{" + t("norms.tokens_word") + "})")
    n1, n2, n3, n4 = st.columns(4)
    with n1:
        st.slider(t("norms.sentences"), 1, 6, key="norm_batch")
    with n2:
        st.slider(t("norms.tokens"), 2, 8, key="norm_tokens")
    with n3:
        st.slider(t("norms.features"), 2, 12, key="norm_features")
    with n4:
        st.number_input(t("norms.seed"), 0, 9999, step=1, key="norm_seed")
    b, per, f = st.session_state["norm_batch"], st.session_state["norm_tokens"], st.session_state["norm_features"]
    demo = lessons.norm_demo(b, per, f, int(st.session_state["norm_seed"]))
    rows, features = tables.row_labels(b, per), [f"f{j}" for j in range(f)]
    norm_cols = st.columns(3)
    for n, (col, (title, matrix)) in enumerate(zip(norm_cols, ((t("norms.input"), demo.x), (t("norms.layer"), demo.layer),
                                                             (t("norms.batch"), demo.batch)))):
        with col:
            widgets.plot(grids.grid_heatmap(matrix.reshape(-1, f), title=title, x_title=t("norms.feature"),
                                            y_title=t("norms.token"), value=t("norms.value"),
                                            rows=rows, cols=features, symmetric=True, annotate=len(rows) * f <= 96,
                                            max_width=grids.THIRD, max_height=520, font_scale=fs),
                         name=f"norms-{n + 1}", key=f"arch_norm_map_{n}")
    row_stats, col_stats = tables.norm_frames(lessons.norm_stats(demo), b, per)
    named = {"token": t("norms.token"), "feature": t("norms.feature"),
             **{f"{stat} ({norm})": t(f"norms.{stat}", norm=norm) for stat in ("mean", "std")
                for norm in ("LayerNorm", "BatchNorm")}}
    s1, s2 = st.columns(2)
    with s1:
        st.caption(t("norms.per_token"))
        st.dataframe(row_stats.round(4).rename(columns=named), hide_index=True, width="content")
    with s2:
        st.caption(t("norms.per_feature"))
        st.dataframe(col_stats.round(4).rename(columns=named), hide_index=True, width="content")
    st.success(t("norms.result", layer=demo.layer_error, batch=demo.batch_error))
    export.export_data({"x": demo.x, "layer": demo.layer, "batch": demo.batch}, row_stats, "layernorm-vs-batchnorm",
                       "arch_norm_data")
    widgets.write_to_url(["norm_batch", "norm_tokens", "norm_features", "norm_seed"])


model_sections()
presentation.section(t("sections.add_norm"), "arch-add-norm", add_norm_section)
presentation.section(t("sections.ffn"), "arch-ffn", ffn_section)
presentation.section(t("sections.norms"), "arch-norms", norm_section)
presentation.section(t("sections.recipe"), "arch-recipe", recipe_section, fs)
presentation.section(t("sections.whisper"), "arch-whisper",  # its model radio redraws it alone
                     st.fragment(whisper_section, key="arch_whisper_section"), fs)


def tying_section() -> None:
    """Section 8: the paper's weight tying, measured on the sidebar's model (and on one that ties, if it does not)."""
    current = widgets.current_entry()
    facts = None if current is None else widgets.attempt("open the model", resources.checkpoint, current)
    weight_tying.section(current, None if facts is None else facts.config.architecture)


presentation.section(t("sections.tying"), "arch-tying", tying_section)
