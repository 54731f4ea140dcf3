"""The Lesson's encoder stages (tokens → encoder output): one function per stage, each drawing a
picture, its sizes, and the formula with the live numbers of the highlighted token.

Heads and layers are shown numbered from 1; positions and matrix indices stay 0-based (x₀, a₀₁).
Every number comes from :class:`core.lessons.LessonTrace`; these functions only format and draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from app.ui import glossary, vega, widgets
from app.charts import attention
from app.charts import lesson as charts
from app.charts import grids
from core import lessons


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


def weights_map(weights: np.ndarray, rows, cols, title: str, fs: float, size_text: str | None = None):
    """A small attention map on the 0–1 scale, sized to the lesson's few tokens; long row labels
    ("after ‹x› → predicts ‹y›") are shown whole; ``size_text`` (the array's size) on hover and as subtitle."""
    size = min(60 * max(len(rows), len(cols)) + 40, 420)
    chart = attention.head_heatmap(weights, rows, cols, title=title, font_scale=fs, size=size)
    if max(map(len, rows)) > 16:  # "after ‹x› → predicts ‹y›" says what a row is; its axis title would touch it
        y = chart.encoding.y.copy()
        y.title = None
        chart = chart.encode(y=y)
    chart = chart if size_text is None else charts.with_size(chart, size_text, fs)
    return chart.configure_axis(labelLimit=int(320 * fs))


def chain(lhs: str, *steps: str) -> str:
    """A LaTeX equation broken into lines, one "= …" per step, so it never runs off a 1280-px screen."""
    body = r" \\ ".join(f"&= {step}" for step in steps)
    return rf"\begin{{aligned}} {lhs} {body} \end{{aligned}}"


def tokens(trace: lessons.LessonTrace, v: View) -> None:
    src, S = trace.source_tokens, len(trace.source_tokens)
    st.markdown("The tokenizer cuts the sentence into tokens the model knows; each becomes a row of every "
                "matrix that follows. A word it does not know is cut into smaller pieces it does know (the "
                "translation model spells it out, `z ##o ##r …`, so it can copy a name); only a tokenizer without "
                "such pieces maps it to `<unk>`.")
    for note in trace.notes:
        st.info(note)
    st.dataframe({"position": list(range(S)), "token": list(src)}, hide_index=True)
    if trace.family == "attnscope":
        glossary.erratum("example_direction")
    st.latex(rf"\text{{{S} tokens}}\;\rightarrow\;X \in \mathbb{{R}}^{{{S} \times {trace.d_model}}}"
             r"\quad(\text{one row of width } d_{model} \text{ per token})")


def embeddings(trace: lessons.LessonTrace, v: View) -> None:
    src, i = trace.source_tokens, v.i
    scale = r"\sqrt{%d}" % trace.d_model if trace.embed_scale is None else num(trace.embed_scale)
    if trace.embed_scale is None:
        st.markdown("Each token's embedding row is multiplied by √d_model and the sinusoidal positional encoding "
                    "of its position is added, so the same word at another position gives another vector.")
    else:
        st.markdown(f"Each token's embedding row is multiplied by {num(trace.embed_scale)} (this model's own scale) "
                    "and what the model adds for its position (PE below; zero when it adds none) is added.")
    title = "x = embedding·√d_model + PE" if trace.embed_scale is None else "x = embedding·scale + PE"
    vega.draw(charts.vectors, trace.embedded, src, title=title, highlight=i,
              font_scale=v.fs, size=v.sizes.get("x"))
    lhs, rhs = (r"\mathrm{LN}(", ")") if trace.embedding_norm else ("", "")
    st.latex(chain(rf"x_{{{i}}}", rf"{lhs}E[\text{{{tex(src[i])}}}]\,{scale} + PE_{{{i}}}{rhs}",
                   rf"{lhs}{vec(trace.token_embedding[i])} + {vec(trace.positional[i])}{rhs}", vec(trace.embedded[i])))
    st.latex(rf"E \in \mathbb{{R}}^{{V \times {trace.d_model}}},\quad x_{{{i}}},\ PE_{{{i}}} \in "
             rf"\mathbb{{R}}^{{{trace.d_model}}}")


def projections(trace: lessons.LessonTrace, v: View) -> None:
    src, i, h, head, d, dk = trace.source_tokens, v.i, v.h, trace.encoder_head, trace.d_model, trace.d_k
    H = trace.n_heads
    st.markdown(f"Layer 1 projects every token three ways with learned matrices and biases: a query (what it "
                f"looks for), a key (what it offers) and a value (what it passes on). The model stores the three "
                f"matrices **stacked into one** W_qkv of size {d} × {3 * d}: one multiplication gives Q, K and V "
                f"of all {H} heads at once.")
    widgets.plot(charts.blocks(trace.qkv_weight, [str(r) for r in range(d)], ["W^Q", "W^K", "W^V"],
                               title=f"Layer 1's stacked W_qkv = [W^Q | W^K | W^V] · dotted: the {H} heads, "
                                     f"dashed: head {h + 1}", x_title="output column",
                               y_title="input dimension", font_scale=v.fs, size=v.sizes.get("W_qkv"), slices=H,
                               marked=h),
                 name="w-qkv", key="lesson_w_qkv")
    st.markdown(f"Each block is then **split into heads**: its {d} columns are {H} slices of d_k = {d} / {H} = "
                f"{dk}, and head {h + 1} uses slice {h + 1}. (Notes 000's prose gives every head the full width, a "
                f"W of size d × 3hd; their code, like the paper, splits d_model into h slices of d_k = d_model/h, "
                f"so {H} heads cost what one full-width head does. Q, K and V are linear in x — no non-linearity — "
                "but W is a learned matrix, not a rotation.)")
    st.latex(rf"\underbrace{{(B, S, {d})}}_{{XW^Q + b^Q}} \xrightarrow{{\text{{view}}}} (B, S, {H}, {dk}) "
             rf"\xrightarrow{{\text{{transpose}}}} (B, {H}, S, {dk})")
    for name, matrix in zip("QKV", (head.q, head.k, head.v)):  # one under another: each keeps its labels
        vega.draw(charts.vectors, matrix, src, title=f"{name} (head {h + 1})", highlight=i, max_dims=16,
                  font_scale=v.fs, size=v.sizes.get(name))
    xw = head.q[i] - trace.q_bias
    st.latex(chain(rf"q_{{{i}}}", rf"x_{{{i}}} W^Q_{{{h + 1}}} + b^Q_{{{h + 1}}}",
                   rf"{vec(xw)} + {vec(trace.q_bias)}", vec(head.q[i])))
    st.latex(rf"k_{{{i}}} = {vec(head.k[i])},\quad v_{{{i}}} = {vec(head.v[i])}")
    st.latex(rf"W^Q_{{{h + 1}}}, W^K_{{{h + 1}}}, W^V_{{{h + 1}}} \in \mathbb{{R}}^{{{d} \times {dk}}},\quad "
             rf"Q, K, V \in \mathbb{{R}}^{{{len(src)} \times {dk}}}")


def scores_map(matrix: np.ndarray, tokens, title: str, fs: float, size_text: str | None = None):
    """The signed scores of the sentence's tokens against themselves, sized to the lesson's few tokens;
    ``size_text`` (the array's size) on hover and as subtitle."""
    chart = attention.signed_heatmap(matrix, tokens, tokens, title=title, value="score", font_scale=fs,
                                     size=min(60 * len(tokens) + 40, 420))
    return chart if size_text is None else charts.with_size(chart, size_text, fs)


def scores(trace: lessons.LessonTrace, v: View, scaled: bool) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    bias = head.position_bias  # T5: a learned bias per relative distance, no ÷√d_k
    matrix = head.scaled if scaled else head.dot
    st.markdown("Each query is compared with every key by a dot product: a large value means a good match. "
                + ("These raw dot products grow with d_k." if not scaled else
                   "This model does not divide by √d_k: it adds a learned bias per relative distance instead."
                   if bias is not None else
                   "Dividing by √d_k keeps the scores in a range where the softmax does not saturate as d_k grows."))
    title = ("q·k + relative bias" if bias is not None else "q·k / √d_k") if scaled else "q·k (raw dot products)"
    vega.draw(scores_map, matrix, src, title, v.fs, v.sizes.get("QKᵀ"))
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
    st.latex(rf"QK^\top \in \mathbb{{R}}^{{{S} \times {S}}}\quad(\text{{queries}} \times \text{{keys}})")


def mask(trace: lessons.LessonTrace, v: View) -> None:
    src = trace.source_tokens
    st.markdown("A mask says which keys a query may see (True = may attend). In the encoder every token sees "
                "every other token of the sentence, so nothing is masked here; masked cells would get −∞ before "
                "the softmax." + (" The decoder's mask (stage 13) does hide cells." if trace.kind == "encoder-decoder"
                                  else " Padding keys of a batch would be masked; one sentence has none."))
    widgets.plot(grids.mask_heatmap(trace.encoder_head.mask, src, src, title="encoder mask (✓ = may attend)",
                                    font_scale=v.fs, subtitle=v.sizes.get("M")), name="encoder-mask",
                 key="lesson_mask_map")
    st.latex(r"s_{ij} \leftarrow -\infty \ \text{where}\ m_{ij} = \text{False}")


def softmax(trace: lessons.LessonTrace, v: View) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    st.markdown("The softmax turns each row of scores into weights that are positive and sum to 1.")
    vega.draw(weights_map, head.weights, src, src, f"encoder layer 1, head {v.h + 1}", v.fs, v.sizes.get("A"))
    j = int(np.argmax(head.weights[i]))
    denominator = " + ".join(f"e^{{{num(s)}}}" for s in head.scaled[i][:4]) + (" + \\dots" if S > 4 else "")
    st.latex(rf"a_{{{i}{j}}} = \frac{{e^{{{num(head.scaled[i, j])}}}}}{{{denominator}}} = {num(head.weights[i, j])}"
             rf",\qquad \textstyle\sum_j a_{{{i}j}} = {num(head.weights[i].sum())},\qquad A \in "
             rf"\mathbb{{R}}^{{{S} \times {S}}}")


def weighted_sum(trace: lessons.LessonTrace, v: View) -> None:
    src, i, head, S = trace.source_tokens, v.i, trace.encoder_head, len(trace.source_tokens)
    st.markdown("The head's output for each token is the average of all value vectors, weighted by its row "
                "of attention weights.")
    vega.draw(charts.vectors, head.output, src, title=f"head {v.h + 1} output z = A V", highlight=i,
              max_dims=16, font_scale=v.fs, size=v.sizes.get("Z"))
    parts = " + ".join(f"{num(a)}\\,v_{{{j}}}" for j, a in enumerate(head.weights[i][:4]))
    more = r" + \dots" if S > 4 else ""
    st.latex(rf"z_{{{i}}} = {parts}{more} = {vec(head.output[i])},\qquad Z = AV \in \mathbb{{R}}^{{{S} \times "
             rf"{trace.d_k}}}")


def concatenated(trace: lessons.LessonTrace, v: View) -> None:
    src, i, H, d, dk = trace.source_tokens, v.i, trace.n_heads, trace.d_model, trace.d_k
    st.markdown(f"The {H} heads' outputs are **placed side by side** (the reverse of the split: "
                f"(B, {H}, S, {dk}) → transpose → (B, S, {H}, {dk}) → reshape → (B, S, {d})) and mixed by the "
                f"output projection W^O (plus its bias b^O), back to d_model = {d} numbers per token.")
    st.latex(rf"\underbrace{{(B, {H}, S, {dk})}}_{{z^1, \dots, z^{{{H}}}}} \xrightarrow{{\text{{transpose}}}} "
             rf"(B, S, {H}, {dk}) \xrightarrow{{\text{{reshape}}}} (B, S, {H}\cdot{dk} = {H * dk}) "
             rf"\xrightarrow{{W^O}} (B, S, {d})")
    widgets.plot(charts.blocks(trace.heads_concat, [f"{n}:{t}" for n, t in enumerate(src)],
                               [f"head {n + 1}" for n in range(H)], title="[z¹; …; zᴴ]: the heads side by side",
                               x_title="column", y_title="token", font_scale=v.fs, size=v.sizes.get("Concat")),
                 name="heads-concatenated", key="lesson_heads_concat")
    vega.draw(charts.vectors, trace.attention_out, src, title="MultiHead(X) = [z¹; …; zᴴ] Wᴼ + bᴼ",
              highlight=i, font_scale=v.fs, size=v.sizes.get("MultiHead"))
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
              size=v.sizes.get("AddNorm"))
    _residual_width(len(src), trace.d_model)


def _residual_width(S: int, d: int) -> None:
    """The residual sum's shapes (under the chart, so the chart stays on a projector's first screen)."""
    st.latex(rf"\underbrace{{x}}_{{{S} \times {d}}} + \underbrace{{\mathrm{{MultiHead}}(x)}}_{{{S} \times {d}}} "
             rf"\in \mathbb{{R}}^{{{S} \times {d}}}\quad(\text{{a sublayer of another width, }}{S} \times d' "
             rf"\text{{ with }} d' \neq {d}\text{{, could not be added}})")


def add_norm(trace: lessons.LessonTrace, v: View) -> None:
    i, d = v.i, trace.d_model
    st.markdown(f"**Add**: the residual connection adds the sublayer's input x back. The sum is only defined "
                f"because MultiHead(x) has the same width as x — this is why W^O maps back to d_model = {d} and "
                "every sublayer of every layer keeps that width.")
    if trace.norm_hat1 is None:  # pre-norm: this stage holds x + MultiHead(LN(x)), not normalised
        _add_norm_chart(trace, v, "x + MultiHead(LayerNorm(x))")  # the chart first: on the projector's first screen
        st.warning("This model is **pre-norm**: LayerNorm was applied to the sublayer's *input*, so this stage "
                   "holds x + MultiHead(LayerNorm(x)), which is *not* normalised (its mean and variance are "
                   "whatever the sum gives).")
        summed = trace.add_norm1[i]
        st.latex(rf"x_{{{i}}} + \mathrm{{MultiHead}}(\mathrm{{LN}}(x))_{{{i}}} = {vec(summed)}:\ "
                 rf"\mu = {num(summed.mean())},\ \sigma = {num(summed.std())}")
        return
    st.markdown("**Norm** (post-norm, the paper: after the sum): LayerNorm first rescales each token's vector to "
                "mean 0 and variance 1 (x̂), *then* applies a learned gain γ and shift b, one number per "
                "dimension — so the final vector no longer has mean 0 and variance 1.")
    _add_norm_chart(trace, v, "LayerNorm(x + MultiHead(x))")
    summed, hat = trace.residual1[i], trace.norm_hat1[i]
    st.latex(rf"x_{{{i}}} + \mathrm{{MultiHead}}_{{{i}}} = {vec(summed)}:\ \mu = {num(summed.mean())},\ "
             rf"\sigma = {num(summed.std())}")
    st.latex(rf"\hat x_{{{i}}} = \frac{{x - \mu}}{{\sigma}} = {vec(hat)}\ \ (\text{{mean }} {abs(hat.mean()):.2f},"
             rf"\ \text{{variance }} {hat.var():.2f})")
    if trace.norm_gain1 is None:  # read from a trace: the norm's output, not its γ and b
        st.latex(chain(rf"\gamma \odot \hat x_{{{i}}} + b", vec(trace.add_norm1[i])))
    else:
        st.latex(chain(rf"\gamma \odot \hat x_{{{i}}} + b",
                       rf"{vec(trace.norm_gain1)} \odot \hat x_{{{i}}} + {vec(trace.norm_shift1)}",
                       vec(trace.add_norm1[i])))
    st.caption("In training, dropout also zeroes a random share of the sublayer's output before the Add (and "
               "rescales the rest); at inference, as here, dropout is off and changes nothing.")


def ffn(trace: lessons.LessonTrace, v: View) -> None:
    src, i, d, F = trace.source_tokens, v.i, trace.d_model, trace.d_ff
    act = "ReLU" if trace.activation == "relu" else trace.activation
    active = "" if trace.ffn_hidden is None else (
        f" For the highlighted token {int((trace.ffn_hidden[i] > 0).sum())} of {F} hidden units are positive.")
    st.markdown(f"The same two-layer network is applied to every position separately: widen to d_ff = {F}, "
                f"{act}{' (gated)' if trace.gated else ''}, and back to {d}.{active} Then comes a second Add & Norm, "
                "which gives the layer's output.")
    vega.draw(charts.vectors, trace.ffn_out, src, title="FFN(x)", highlight=i, font_scale=v.fs,
              size=v.sizes.get("FFN"))
    b1, b2 = (" + b_1", " + b_2") if trace.projection_bias else ("", "")
    inner, name = rf"x_{{{i}}}W_1{b1}", tex(trace.activation)
    hidden = rf"\max(0, {inner})" if trace.activation == "relu" else rf"\mathrm{{{name}}}({inner})"
    if trace.gated:
        hidden = rf"(\mathrm{{{name}}}(x_{{{i}}}W_g) \odot x_{{{i}}}W_1)"
    st.latex(rf"\mathrm{{FFN}}(x_{{{i}}}) = {hidden}W_2{b2} = {vec(trace.ffn_out[i])},"
             rf"\quad W_1 \in \mathbb{{R}}^{{{d} \times {F}}},\ W_2 \in \mathbb{{R}}^{{{F} \times {d}}}")
    if trace.norm == "post":
        st.latex(rf"\text{{Add \& Norm again: }}\mathrm{{LayerNorm}}(x_{{{i}}} + \mathrm{{FFN}}(x_{{{i}}})) = "
                 rf"{vec(trace.layer_out[i])}\ \ (\text{{layer 1's output}})")
    else:
        st.latex(rf"\text{{pre-norm: }}x_{{{i}}} + \mathrm{{FFN}}(\mathrm{{LayerNorm}}(x_{{{i}}})) = "
                 rf"{vec(trace.layer_out[i])}\ \ (\text{{layer 1's output}})")


def encoder_output(trace: lessons.LessonTrace, v: View) -> None:
    src, i = trace.source_tokens, v.i
    final = (" The last layer's output then goes through one more **final LayerNorm** (this checkpoint carries "
             "one after each stack)." if trace.final_norm else "")
    then = (" The result is the encoder output (the memory) that every decoder layer will read."
            if trace.kind == "encoder-decoder" else " The result is the model's output: one vector per token.")
    st.markdown("After every encoder layer, each source token is a vector that has mixed in what it attended to." +
                final + then)
    vega.draw(charts.vectors, trace.memory, src, title="encoder output (memory)", highlight=i,
              font_scale=v.fs, size=v.sizes.get("memory"))
    st.latex(rf"\mathrm{{memory}}_{{{i}}} = {vec(trace.memory[i])},\qquad \mathrm{{memory}} \in "
             rf"\mathbb{{R}}^{{{len(src)} \times {trace.d_model}}}")
