"""The Lesson's stages of a single-stack model: a decoder-only model's causal mask, and what an encoder-only
model's output is used for (its sentence vector, its masked-token guesses or its classes). The other stages are
the encoder-decoder's own (:mod:`app.views.parts.lesson_stages`, :mod:`app.views.parts.lesson_decoder`).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.charts import grids
from app.charts import lesson as charts
from app.ui import language, vega, widgets
from app.views.parts.lesson_decoder import candidates_chart
from app.views.parts.lesson_stages import View, num, sentences, tex, vec, words


def causal_mask(trace, v: View) -> None:
    """A decoder-only model's look-ahead mask on the prompt, and the masked weights it leaves (0 above the
    diagonal)."""
    src, head, i, t = trace.source_tokens, trace.encoder_head, v.i, words()
    st.markdown(t("causal.text"))
    widgets.plot(grids.mask_heatmap(head.mask, src, src, title=t("causal.title"), font_scale=v.fs,
                                    subtitle=v.sizes.get("M"), lang=language.current()),
                 name="causal-mask", key="lesson_causal_mask")
    hidden = int((~head.mask[i]).sum())
    st.latex(rf"s_{{{i}j}} \leftarrow -\infty \ \text{{{t('causal.for')}}}\ j > {i}\quad"
             rf"(\text{{{t('causal.hidden', hidden=hidden, n=len(src), i=i)}}})")


def use(trace, v: View) -> None:
    """What an encoder-only model's output is for, as its head offers it."""
    src, i, t, lang = trace.source_tokens, v.i, words(), language.current()
    if trace.use == "hidden" and trace.pooled is not None:
        st.markdown(t("use.sentence"))
        vega.draw(charts.vectors, trace.pooled[None], [t("use.sentence_row")], title=t("use.sentence_title"),
                  highlight=0, font_scale=v.fs, lang=lang)
        st.latex(rf"u = \mathrm{{pool}}(\mathrm{{memory}}) = {vec(trace.pooled)},\quad \lVert u \rVert = "
                 rf"{num(float(np.linalg.norm(trace.pooled)))},\quad u \in \mathbb{{R}}^{{{trace.d_model}}}")
        return
    if trace.use == "masked_lm" and trace.probabilities.size:
        order = np.argsort(-trace.probabilities[i], kind="stable")[:5]
        candidates = [(trace.target_vocab[n], float(trace.probabilities[i, n])) for n in order]
        st.markdown(t("use.masked_lm"))
        vega.draw(candidates_chart, candidates, t("use.guess", i=i, token=src[i]), v.fs, lang=lang)
        return
    if trace.use == "classes" and trace.probabilities.size:
        st.markdown(t("use.classes"))
        order = np.argsort(-trace.probabilities[0], kind="stable")[:5]
        vega.draw(candidates_chart, [(trace.target_vocab[n], float(trace.probabilities[0, n])) for n in order],
                  t("use.classes_title"), v.fs, lang=lang)
        return
    st.markdown(t("use.other"))
    widgets.show_user_text(" ".join(src), label=t("use.tokens_read"))


#: The formula of x_i for each positional scheme (``{t}``: the token, ``{i}``: its position); its words are the
#: ``lesson-stages`` message ``positions.<scheme>``.
POSITIONS = {"rotary": r"E[\text{{{t}}}]", "relative": r"E[\text{{{t}}}]", "learned": r"E[\text{{{t}}}] + P_{{{i}}}",
             "sinusoidal": r"E[\text{{{t}}}] + PE_{{{i}}}", "none": r"E[\text{{{t}}}]"}
SCHEMES = {"marian": "sinusoidal"}  # a scheme drawn as another's


def embeddings(trace, v: View) -> None:
    """The first layer's input as a trace holds it, x: the token's embedding row (scaled as the model scales it)
    with what the model adds for its position — their sum only, as the model computes it."""
    src, i, t = trace.source_tokens, v.i, words()
    scheme = SCHEMES.get(trace.positions, trace.positions)
    scheme = scheme if scheme in POSITIONS else "learned"
    formula = POSITIONS[scheme]
    scale = "" if trace.embed_scale in (None, 1.0) else rf"\cdot {num(trace.embed_scale)}"
    formula = formula.format(t=tex(src[i]), i=i).replace("]", "]" + scale, 1)
    if trace.embedding_norm:
        formula = rf"\mathrm{{LN}}({formula})"
    st.markdown(sentences(t("positions.embedding_scaled", scale=num(trace.embed_scale)) if scale
                          else t("positions.embedding"), t(f"positions.{scheme}"),
                          t("positions.norm") if trace.embedding_norm else ""))
    vega.draw(charts.vectors, trace.embedded, src, title=t("positions.title"), highlight=i,
              font_scale=v.fs, size=v.sizes.get("x"), lang=language.current())
    st.latex(rf"x_{{{i}}} = {formula} = {vec(trace.embedded[i])},\quad x_{{{i}}} \in \mathbb{{R}}^{{{trace.d_model}}}")


def projections(trace, v: View) -> None:
    """One head's q, k and v of layer 1 as the scores see them (after rotary positions where the model has them)."""
    src, i, h, head, d, dk = trace.source_tokens, v.i, v.h, trace.encoder_head, trace.d_model, trace.d_k
    rotary, t = trace.positions == "rotary", words()
    st.markdown(sentences(t("positions.projections", heads=trace.n_heads, dk=dk),
                          t("positions.rotated") if rotary else ""))
    for name, matrix in zip("QKV", (head.q, head.k, head.v)):
        vega.draw(charts.vectors, matrix, src, title=t("projections.matrix", name=name, head=h + 1), highlight=i,
                  max_dims=16, font_scale=v.fs, size=v.sizes.get(name), lang=language.current())
    inner = rf"x_{{{i}}} W^Q_{{{h + 1}}}"
    rotated = rf"R_{{{i}}}\,{inner}" if rotary else inner
    st.latex(rf"q_{{{i}}} = {rotated} = {vec(head.q[i])}")
    st.latex(rf"k_{{{i}}} = {vec(head.k[i])},\quad v_{{{i}}} = {vec(head.v[i])},\quad W^Q_{{{h + 1}}} \in "
             rf"\mathbb{{R}}^{{{d} \times {dk}}},\ Q, K, V \in \mathbb{{R}}^{{{len(src)} \times {dk}}}")
