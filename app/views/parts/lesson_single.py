"""The Lesson's stages of a single-stack model: a decoder-only model's causal mask, and what an encoder-only
model's output is used for (its sentence vector, its masked-token guesses or its classes). The other stages are
the encoder-decoder's own (:mod:`app.views.parts.lesson_stages`, :mod:`app.views.parts.lesson_decoder`).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.charts import grids
from app.charts import lesson as charts
from app.ui import vega, widgets
from app.views.parts.lesson_decoder import candidates_chart
from app.views.parts.lesson_stages import View, num, tex, vec


def causal_mask(trace, v: View) -> None:
    """A decoder-only model's look-ahead mask on the prompt, and the masked weights it leaves (0 above the
    diagonal)."""
    src, head, i = trace.source_tokens, trace.encoder_head, v.i
    st.markdown("A decoder-only model predicts each next token from the ones before it, so token i may look only "
                "at tokens 0…i: the **causal mask** hides every later key (✗ cells get −∞ before the softmax, so "
                "their weights are exactly 0). This is the paper's decoder mask; here it is the only attention.")
    widgets.plot(grids.mask_heatmap(head.mask, src, src, title="causal mask (✓ = may attend)", font_scale=v.fs,
                                    subtitle=v.sizes.get("M")), name="causal-mask", key="lesson_causal_mask")
    hidden = int((~head.mask[i]).sum())
    st.latex(rf"s_{{{i}j}} \leftarrow -\infty \ \text{{for}}\ j > {i}\quad({hidden}\ \text{{of}}\ {len(src)}"
             rf"\ \text{{keys hidden from token {i}}})")


def use(trace, v: View) -> None:
    """What an encoder-only model's output is for, as its head offers it."""
    src, i = trace.source_tokens, v.i
    if trace.use == "hidden" and trace.pooled is not None:
        st.markdown("This model is a **sentence encoder**: the vectors of every token are pooled into one "
                    "sentence vector (as the model was trained to), and two sentences are compared by the cosine "
                    "of their vectors. Close meanings give close vectors — the basis of semantic search.")
        vega.draw(charts.vectors, trace.pooled[None], ["sentence"], title="sentence vector (pooled)", highlight=0,
                  font_scale=v.fs)
        st.latex(rf"u = \mathrm{{pool}}(\mathrm{{memory}}) = {vec(trace.pooled)},\quad \lVert u \rVert = "
                 rf"{num(float(np.linalg.norm(trace.pooled)))},\quad u \in \mathbb{{R}}^{{{trace.d_model}}}")
        return
    if trace.use == "masked_lm" and trace.probabilities.size:
        order = np.argsort(-trace.probabilities[i], kind="stable")[:5]
        candidates = [(trace.target_vocab[n], float(trace.probabilities[i, n])) for n in order]
        st.markdown("This model was trained on **masked-token prediction**: a linear layer and a softmax turn each "
                    "token's output vector into a guess of the token at that position (a [MASK] in training).")
        vega.draw(candidates_chart, candidates, f"position {i} ({src[i]}) → the model's guess", v.fs)
        return
    if trace.use == "classes" and trace.probabilities.size:
        st.markdown("This model is a **classifier**: one vector of the output (or their pool) goes through a "
                    "linear layer and a softmax over its classes.")
        order = np.argsort(-trace.probabilities[0], kind="stable")[:5]
        vega.draw(candidates_chart, [(trace.target_vocab[n], float(trace.probabilities[0, n])) for n in order],
                  "classes", v.fs)
        return
    st.markdown("The encoder's output, one vector per token, is what this model gives: a task head on top of it "
                "(a classifier, a tagger, a sentence vector) turns it into an answer.")
    widgets.show_user_text(" ".join(src), label="Tokens read")


def embeddings(trace, v: View) -> None:
    """A single-stack model's input: the trace holds the sum the first layer reads, x (the token's embedding row,
    plus a learned position row where the model adds one; rotary positions enter q and k instead)."""
    src, i = trace.source_tokens, v.i
    if trace.positions == "rotary":
        st.markdown("Each token becomes its embedding row. **No position is added here**: this model uses rotary "
                    "positions (RoPE), which rotate every head's q and k by an angle proportional to the token's "
                    "position (the next stage), so q·k depends on how far apart two tokens are.")
        formula = rf"E[\text{{{tex(src[i])}}}]"
    else:
        st.markdown("Each token's embedding row gets the row of its position in a **learned** position table added "
                    "(the paper adds fixed sinusoids), so the same word at another position gives another vector.")
        formula = rf"E[\text{{{tex(src[i])}}}] + P_{{{i}}}"
    vega.draw(charts.vectors, trace.embedded, src, title="x: the first layer's input", highlight=i,
              font_scale=v.fs, size=v.sizes.get("x"))
    st.latex(rf"x_{{{i}}} = {formula} = {vec(trace.embedded[i])},\quad x_{{{i}}} \in \mathbb{{R}}^{{{trace.d_model}}}")


def projections(trace, v: View) -> None:
    """One head's q, k and v of layer 1 as the scores see them (after rotary positions where the model has them)."""
    src, i, h, head, d, dk = trace.source_tokens, v.i, v.h, trace.encoder_head, trace.d_model, trace.d_k
    rotary = trace.positions == "rotary"
    st.markdown(f"Layer 1 projects every token three ways with learned matrices: a query (what it looks for), a key "
                f"(what it offers) and a value (what it passes on), for each of its {trace.n_heads} heads of d_k = "
                f"{dk}." + (" Then q and k are **rotated** by their position (RoPE); v is not." if rotary else ""))
    for name, matrix in zip("QKV", (head.q, head.k, head.v)):
        vega.draw(charts.vectors, matrix, src, title=f"{name} (head {h + 1})", highlight=i, max_dims=16,
                  font_scale=v.fs, size=v.sizes.get(name))
    inner = rf"x_{{{i}}} W^Q_{{{h + 1}}}"
    rotated = rf"R_{{{i}}}\,{inner}" if rotary else inner
    st.latex(rf"q_{{{i}}} = {rotated} = {vec(head.q[i])}")
    st.latex(rf"k_{{{i}}} = {vec(head.k[i])},\quad v_{{{i}}} = {vec(head.v[i])},\quad W^Q_{{{h + 1}}} \in "
             rf"\mathbb{{R}}^{{{d} \times {dk}}},\ Q, K, V \in \mathbb{{R}}^{{{len(src)} \times {dk}}}")
