"""The Lesson's encoder stages (tokens → encoder output): one function per stage, each drawing a
picture, its sizes, and the formula with the live numbers of the highlighted token.

Heads and layers are shown numbered from 1; positions and matrix indices stay 0-based (x₀, a₀₁).
Every number comes from :class:`core.lessons.LessonTrace`; these functions only format and draw. Their words are
the ``lesson-stages`` messages in the session's language (:func:`words`), charts' axes the ``charts`` ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from app import i18n
from app.ui import glossary, language, vega, widgets
from app.charts import attention
from app.charts import lesson as charts
from app.charts import grids
from core import LOWER_CASED, lessons


@dataclass(frozen=True)
class View:
    """What every stage needs besides the trace: the highlighted token i, the decoder row t, the
    head h (0-based; shown as h + 1), the projector's font scale, and every drawn array's size on hover
    (:func:`core.lessons.array_sizes`: name → "Q ∈ ℝ^(S × d_k) = 3 × 32")."""

    i: int
    t: int
    h: int
    fs: float
    sizes: dict[str, str] = field(default_factory=dict)


def words():
    """The ``lesson-stages`` messages in the session's language: ``t = words(); t("tokens.text")``."""
    return language.words("lesson-stages")


def axes(lang: str, value: str = "weight") -> tuple[str, str, str]:
    """An attention map's key axis, query axis and ``value`` (weight, score, cosine) titles in ``lang``."""
    return tuple(i18n.text(lang, "charts", f"lesson.{key}") for key in ("key", "query", value))


def sentences(*parts: str) -> str:
    """Sentences run together as the session's language writes them: after a space, or straight on in Japanese
    and Chinese (their full stop 。 needs none); empty parts are left out."""
    return ("" if language.current() in language.CJK else " ").join(p for p in parts if p)


def num(x: float) -> str:
    return f"{x:.2f}"


def vec(values: np.ndarray, n: int = 4) -> str:
    shown = ", ".join(num(v) for v in values[:n])
    more = r", \dots" if len(values) > n else ""
    return f"[{shown}{more}]"


def tex(token: str) -> str:
    """A token (user text) inside \\text{…}: LaTeX's special characters escaped."""
    special = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
               "%": r"\%", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}
    return "".join(special.get(c, c) for c in token)


def weights_map(weights: np.ndarray, rows, cols, title: str, fs: float, size_text: str | None = None, *,
                lang: str = i18n.DEFAULT):
    """A small attention map on the 0–1 scale, sized to the lesson's few tokens; long row labels
    ("after ‹x› → predicts ‹y›") are shown whole; ``size_text`` (the array's size) on hover and as subtitle; its
    axes in ``lang`` (an argument, not the session's: :func:`app.ui.vega.draw` caches the spec by them)."""
    size = min(60 * max(len(rows), len(cols)) + 40, 420)
    chart = attention.head_heatmap(weights, rows, cols, title=title, font_scale=fs, size=size, axes=axes(lang))
    if max(map(len, rows)) > 16:  # "after ‹x› → predicts ‹y›" says what a row is; its axis title would touch it
        y = chart.encoding.y.copy()
        y.title = None
        chart = chart.encode(y=y)
    chart = chart if size_text is None else charts.with_size(chart, size_text, fs, lang)
    return chart.configure_axis(labelLimit=int(320 * fs))


def chain(lhs: str, *steps: str) -> str:
    """A LaTeX equation broken into lines, one "= …" per step, so it never runs off a 1280-px screen."""
    body = r" \\ ".join(f"&= {step}" for step in steps)
    return rf"\begin{{aligned}} {lhs} {body} \end{{aligned}}"


def tokens(trace: lessons.LessonTrace, v: View) -> None:
    src, S, t = trace.source_tokens, len(trace.source_tokens), words()
    st.markdown(t("tokens.text"))
    for note in trace.notes:  # the lower-cased input's note in the language; other notes as core words them
        st.info(t("tokens.lower_cased") if note == LOWER_CASED else note)
    st.dataframe({t("tokens.position"): list(range(S)), t("tokens.token"): list(src)}, hide_index=True)
    if trace.family == "attnscope" and trace.kind == "encoder-decoder":
        glossary.erratum("example_direction")
    st.latex(rf"\text{{{t('tokens.count', n=S)}}}\;\rightarrow\;X \in \mathbb{{R}}^{{{S} \times {trace.d_model}}}"
             rf"\quad(\text{{{t('tokens.row')} }}d_{{model}})")


def embeddings(trace: lessons.LessonTrace, v: View) -> None:
    src, i, t = trace.source_tokens, v.i, words()
    scale = r"\sqrt{%d}" % trace.d_model if trace.embed_scale is None else num(trace.embed_scale)
    if trace.embed_scale is None:
        st.markdown(t("embeddings.sinusoidal"))
    else:
        st.markdown(t("embeddings.scaled", scale=num(trace.embed_scale)))
    title = t("embeddings.title") if trace.embed_scale is None else t("embeddings.title_scaled")
    vega.draw(charts.vectors, trace.embedded, src, title=title, highlight=i,
              font_scale=v.fs, size=v.sizes.get("x"), lang=language.current())
    lhs, rhs = (r"\mathrm{LN}(", ")") if trace.embedding_norm else ("", "")
    st.latex(chain(rf"x_{{{i}}}", rf"{lhs}E[\text{{{tex(src[i])}}}]\,{scale} + PE_{{{i}}}{rhs}",
                   rf"{lhs}{vec(trace.token_embedding[i])} + {vec(trace.positional[i])}{rhs}", vec(trace.embedded[i])))
    st.latex(rf"E \in \mathbb{{R}}^{{V \times {trace.d_model}}},\quad x_{{{i}}},\ PE_{{{i}}} \in "
             rf"\mathbb{{R}}^{{{trace.d_model}}}")


def projections(trace: lessons.LessonTrace, v: View) -> None:
    src, i, h, head, d, dk = trace.source_tokens, v.i, v.h, trace.encoder_head, trace.d_model, trace.d_k
    H, t, lang = trace.n_heads, words(), language.current()
    st.markdown(t("projections.stacked", d=d, d3=3 * d, heads=H))
    widgets.plot(charts.blocks(trace.qkv_weight, [str(r) for r in range(d)], ["W^Q", "W^K", "W^V"],
                               title=t("projections.chart", heads=H, head=h + 1), x_title=t("projections.column"),
                               y_title=t("projections.input"), font_scale=v.fs, size=v.sizes.get("W_qkv"), slices=H,
                               marked=h, lang=lang),
                 name="w-qkv", key="lesson_w_qkv")
    st.markdown(t("projections.split", d=d, heads=H, dk=dk, head=h + 1))
    st.latex(rf"\underbrace{{(B, S, {d})}}_{{XW^Q + b^Q}} \xrightarrow{{\text{{view}}}} (B, S, {H}, {dk}) "
             rf"\xrightarrow{{\text{{transpose}}}} (B, {H}, S, {dk})")
    for name, matrix in zip("QKV", (head.q, head.k, head.v)):  # one under another: each keeps its labels
        vega.draw(charts.vectors, matrix, src, title=t("projections.matrix", name=name, head=h + 1), highlight=i,
                  max_dims=16, font_scale=v.fs, size=v.sizes.get(name), lang=lang)
    xw = head.q[i] - trace.q_bias
    st.latex(chain(rf"q_{{{i}}}", rf"x_{{{i}}} W^Q_{{{h + 1}}} + b^Q_{{{h + 1}}}",
                   rf"{vec(xw)} + {vec(trace.q_bias)}", vec(head.q[i])))
    st.latex(rf"k_{{{i}}} = {vec(head.k[i])},\quad v_{{{i}}} = {vec(head.v[i])}")
    st.latex(rf"W^Q_{{{h + 1}}}, W^K_{{{h + 1}}}, W^V_{{{h + 1}}} \in \mathbb{{R}}^{{{d} \times {dk}}},\quad "
             rf"Q, K, V \in \mathbb{{R}}^{{{len(src)} \times {dk}}}")


def scores_map(matrix: np.ndarray, tokens, title: str, fs: float, size_text: str | None = None, *,
               lang: str = i18n.DEFAULT):
    """The signed scores of the sentence's tokens against themselves, sized to the lesson's few tokens;
    ``size_text`` (the array's size) on hover and as subtitle; its axes in ``lang``."""
    chart = attention.signed_heatmap(matrix, tokens, tokens, title=title, value="score", font_scale=fs,
                                     size=min(60 * len(tokens) + 40, 420), axes=axes(lang, "score"))
    return chart if size_text is None else charts.with_size(chart, size_text, fs, lang)


def scores(trace: lessons.LessonTrace, v: View, scaled: bool) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    bias = head.position_bias  # T5: a learned bias per relative distance, no ÷√d_k
    matrix, t = (head.scaled if scaled else head.dot), words()
    st.markdown(sentences(t("scores.text"), t("scores.raw") if not scaled else t("scores.relative")
                          if bias is not None else t("scores.scaled")))
    title = (t("scores.title_relative") if bias is not None else "q·k / √d_k") if scaled else t("scores.title_raw")
    vega.draw(scores_map, matrix, src, title, v.fs, v.sizes.get("QKᵀ"), lang=language.current())
    j = int(np.argmax(head.dot[i]))
    if scaled and bias is not None:
        st.latex(rf"s_{{{i}{j}}} = q_{{{i}}} \cdot k_{{{j}}} + b({j} - {i}) = {num(head.dot[i, j])} + "
                 rf"{num(bias[i, j])} = {num(head.scaled[i, j])}")
    elif scaled:
        st.latex(rf"s_{{{i}{j}}} = \frac{{q_{{{i}}} \cdot k_{{{j}}}}}{{\sqrt{{d_k}}}} = "
                 rf"\frac{{{num(head.dot[i, j])}}}{{\sqrt{{{trace.d_k}}}}} = {num(head.scaled[i, j])}")
    else:
        terms = " + ".join(f"({num(a)})({num(b)})" for a, b in zip(head.q[i][:3], head.k[j][:3]))
        st.latex(rf"q_{{{i}}} \cdot k_{{{j}}} = {terms} + \dots = {num(head.dot[i, j])}")
    st.latex(rf"QK^\top \in \mathbb{{R}}^{{{S} \times {S}}}\quad(\text{{{t('scores.queries')}}} \times "
             rf"\text{{{t('scores.keys')}}})")


def mask(trace: lessons.LessonTrace, v: View) -> None:
    src, t = trace.source_tokens, words()
    st.markdown(sentences(t("mask.text"), t("mask.decoder") if trace.kind == "encoder-decoder" else t("mask.padding")))
    widgets.plot(grids.mask_heatmap(trace.encoder_head.mask, src, src, title=t("mask.title"),
                                    font_scale=v.fs, subtitle=v.sizes.get("M"), lang=language.current()),
                 name="encoder-mask", key="lesson_mask_map")
    st.latex(rf"s_{{ij}} \leftarrow -\infty \ \text{{{t('mask.where')}}}\ m_{{ij}} = \text{{False}}")


def softmax(trace: lessons.LessonTrace, v: View) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    t = words()
    st.markdown(t("softmax.text"))
    vega.draw(weights_map, head.weights, src, src, t("softmax.title", head=v.h + 1), v.fs, v.sizes.get("A"),
              lang=language.current())
    j = int(np.argmax(head.weights[i]))
    denominator = " + ".join(f"e^{{{num(s)}}}" for s in head.scaled[i][:4]) + (" + \\dots" if S > 4 else "")
    st.latex(rf"a_{{{i}{j}}} = \frac{{e^{{{num(head.scaled[i, j])}}}}}{{{denominator}}} = {num(head.weights[i, j])}"
             rf",\qquad \textstyle\sum_j a_{{{i}j}} = {num(head.weights[i].sum())},\qquad A \in "
             rf"\mathbb{{R}}^{{{S} \times {S}}}")


def weighted_sum(trace: lessons.LessonTrace, v: View) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    t = words()
    st.markdown(t("weighted_sum.text"))
    vega.draw(charts.vectors, head.output, src, title=t("weighted_sum.title", head=v.h + 1), highlight=i,
              max_dims=16, font_scale=v.fs, size=v.sizes.get("Z"), lang=language.current())
    parts = " + ".join(f"{num(a)}\\,v_{{{j}}}" for j, a in enumerate(head.weights[i][:4]))
    more = r" + \dots" if S > 4 else ""
    st.latex(rf"z_{{{i}}} = {parts}{more} = {vec(head.output[i])},\qquad Z = AV \in \mathbb{{R}}^{{{S} \times "
             rf"{trace.d_k}}}")


def concatenated(trace: lessons.LessonTrace, v: View) -> None:
    src, i, H, d, dk = trace.source_tokens, v.i, trace.n_heads, trace.d_model, trace.d_k
    t, lang = words(), language.current()
    st.markdown(t("concatenated.text", heads=H, dk=dk, d=d))
    st.latex(rf"\underbrace{{(B, {H}, S, {dk})}}_{{z^1, \dots, z^{{{H}}}}} \xrightarrow{{\text{{transpose}}}} "
             rf"(B, S, {H}, {dk}) \xrightarrow{{\text{{reshape}}}} (B, S, {H}\cdot{dk} = {H * dk}) "
             rf"\xrightarrow{{W^O}} (B, S, {d})")
    widgets.plot(charts.blocks(trace.heads_concat, [f"{n}:{token}" for n, token in enumerate(src)],
                               [t("concatenated.head", n=n + 1) for n in range(H)], title=t("concatenated.title"),
                               x_title=t("concatenated.column"), y_title=t("concatenated.token"), font_scale=v.fs,
                               size=v.sizes.get("Concat"), lang=lang),
                 name="heads-concatenated", key="lesson_heads_concat")
    vega.draw(charts.vectors, trace.attention_out, src, title="MultiHead(X) = [z¹; …; zᴴ] Wᴼ + bᴼ",
              highlight=i, font_scale=v.fs, size=v.sizes.get("MultiHead"), lang=lang)
    bias = "" if trace.out_bias is None else f" + {vec(trace.out_bias)}"  # a single-stack trace: W^O's output
    st.latex(chain(rf"\mathrm{{MultiHead}}_{{{i}}}", rf"[z^1_{{{i}}}; \dots; z^{{{H}}}_{{{i}}}]\,W^O + b^O",
                   rf"{vec(trace.heads_concat[i])}\,W^O{bias}", vec(trace.attention_out[i])))
    st.latex(rf"[z^1; \dots; z^{{{H}}}] \in \mathbb{{R}}^{{{len(src)} \times {H}\cdot{dk}}},\quad "
             rf"W^O \in \mathbb{{R}}^{{{H}\cdot{dk} \times {d}}},\quad b^O \in \mathbb{{R}}^{{{d}}}")
    glossary.erratum("w_o_shape")


def _add_norm_chart(trace: lessons.LessonTrace, v: View, title: str) -> None:
    """The Add & Norm stage's vectors (one row per source token, the highlighted one marked) and the residual
    width's shapes under them."""
    src = trace.source_tokens
    vega.draw(charts.vectors, trace.add_norm1, src, title=title, highlight=v.i, font_scale=v.fs,
              size=v.sizes.get("AddNorm"), lang=language.current())
    _residual_width(len(src), trace.d_model)


def _residual_width(S: int, d: int) -> None:
    """The residual sum's shapes (under the chart, so the chart stays on a projector's first screen)."""
    st.latex(rf"\underbrace{{x}}_{{{S} \times {d}}} + \underbrace{{\mathrm{{MultiHead}}(x)}}_{{{S} \times {d}}} "
             rf"\in \mathbb{{R}}^{{{S} \times {d}}}")
    st.caption(words()("add_norm.width", S=S, d=d))


def add_norm(trace: lessons.LessonTrace, v: View) -> None:
    i, d, t = v.i, trace.d_model, words()
    st.markdown(t("add_norm.add", d=d))
    if trace.norm_hat1 is None:  # pre-norm: this stage holds x + MultiHead(LN(x)), not normalised
        _add_norm_chart(trace, v, "x + MultiHead(LayerNorm(x))")  # the chart first: on the projector's first screen
        st.warning(t("add_norm.pre"))
        summed = trace.add_norm1[i]
        st.latex(rf"x_{{{i}}} + \mathrm{{MultiHead}}(\mathrm{{LN}}(x))_{{{i}}} = {vec(summed)}:\ "
                 rf"\mu = {num(summed.mean())},\ \sigma = {num(summed.std())}")
        return
    st.markdown(t("add_norm.norm"))
    _add_norm_chart(trace, v, "LayerNorm(x + MultiHead(x))")
    summed, hat = trace.residual1[i], trace.norm_hat1[i]
    st.latex(rf"x_{{{i}}} + \mathrm{{MultiHead}}_{{{i}}} = {vec(summed)}:\ \mu = {num(summed.mean())},\ "
             rf"\sigma = {num(summed.std())}")
    st.latex(rf"\hat x_{{{i}}} = \frac{{x - \mu}}{{\sigma}} = {vec(hat)}\ \ (\text{{{t('add_norm.mean')} }} {abs(hat.mean()):.2f},"
             rf"\ \text{{{t('add_norm.variance')} }} {hat.var():.2f})")
    if trace.norm_gain1 is None:  # read from a trace: the norm's output, not its γ and b
        st.latex(chain(rf"\gamma \odot \hat x_{{{i}}} + b", vec(trace.add_norm1[i])))
    else:
        st.latex(chain(rf"\gamma \odot \hat x_{{{i}}} + b",
                       rf"{vec(trace.norm_gain1)} \odot \hat x_{{{i}}} + {vec(trace.norm_shift1)}",
                       vec(trace.add_norm1[i])))
    st.caption(t("add_norm.dropout"))


def ffn(trace: lessons.LessonTrace, v: View) -> None:
    src, i, d, F = trace.source_tokens, v.i, trace.d_model, trace.d_ff
    act, t = ("ReLU" if trace.activation == "relu" else trace.activation), words()
    active = "" if trace.ffn_hidden is None else t("ffn.active", n=int((trace.ffn_hidden[i] > 0).sum()), F=F)
    st.markdown(sentences(t("ffn.text_gated" if trace.gated else "ffn.text", F=F, act=act, d=d), active,
                          t("ffn.then")))
    vega.draw(charts.vectors, trace.ffn_out, src, title="FFN(x)", highlight=i, font_scale=v.fs,
              size=v.sizes.get("FFN"), lang=language.current())
    b1, b2 = (" + b_1", " + b_2") if trace.projection_bias else ("", "")
    inner, name = rf"x_{{{i}}}W_1{b1}", tex(trace.activation)
    hidden = rf"\max(0, {inner})" if trace.activation == "relu" else rf"\mathrm{{{name}}}({inner})"
    if trace.gated:
        hidden = rf"(\mathrm{{{name}}}(x_{{{i}}}W_g) \odot x_{{{i}}}W_1)"
    st.latex(rf"\mathrm{{FFN}}(x_{{{i}}}) = {hidden}W_2{b2} = {vec(trace.ffn_out[i])},"
             rf"\quad W_1 \in \mathbb{{R}}^{{{d} \times {F}}},\ W_2 \in \mathbb{{R}}^{{{F} \times {d}}}")
    if trace.norm == "post":
        st.latex(rf"\text{{{t('ffn.again')} }}\mathrm{{LayerNorm}}(x_{{{i}}} + \mathrm{{FFN}}(x_{{{i}}})) = "
                 rf"{vec(trace.layer_out[i])}\ \ (\text{{{t('ffn.output')}}})")
    else:
        st.latex(rf"\text{{pre-norm: }}x_{{{i}}} + \mathrm{{FFN}}(\mathrm{{LayerNorm}}(x_{{{i}}})) = "
                 rf"{vec(trace.layer_out[i])}\ \ (\text{{{t('ffn.output')}}})")


def encoder_output(trace: lessons.LessonTrace, v: View) -> None:
    src, i, t = trace.source_tokens, v.i, words()
    final = t("encoder_output.final") if trace.final_norm else ""
    then = t("encoder_output.memory") if trace.kind == "encoder-decoder" else t("encoder_output.output")
    st.markdown(sentences(t("encoder_output.text"), final, then))
    vega.draw(charts.vectors, trace.memory, src, title=t("encoder_output.title"), highlight=i,
              font_scale=v.fs, size=v.sizes.get("memory"), lang=language.current())
    st.latex(rf"\mathrm{{memory}}_{{{i}}} = {vec(trace.memory[i])},\qquad \mathrm{{memory}} \in "
             rf"\mathbb{{R}}^{{{len(src)} \times {trace.d_model}}}")
