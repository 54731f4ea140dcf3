"""The Lesson's decoder stages: masked self-attention, cross-attention, the output distribution, the
greedy choice, sampling instead of greedy, and the next step. Rows of decoder maps read
"after ‹input› → predicts ‹output›"; heads and layers are shown from 1.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.ui import glossary, vega, widgets
from app.charts import attention as attention_charts
from app.charts import lesson as charts
from app.views.parts.lesson_stages import View, num, tex, weights_map
from core import attention, lessons


def masked_self(trace: lessons.LessonTrace, v: View) -> None:
    t, dec, tgt = v.t, trace.decoder_head, trace.target_tokens
    st.markdown("The decoder reads `<bos>` and the translation so far. Its self-attention is masked: step t may "
                "look only at steps 0…t, never at words not yet produced — the weights above the diagonal are "
                "exactly 0. Each row is labelled by the token it reads and the token it goes on to predict.")
    vega.draw(weights_map, dec.weights, trace.row_labels, tgt, f"decoder layer 1, head {v.h + 1} (masked)", v.fs,
              v.sizes.get("A_dec"))
    st.latex(rf"a_{{{t}j}} = 0 \ \text{{for}}\ j > {t},\qquad \textstyle\sum_{{j \le {t}}} a_{{{t}j}} = "
             rf"{num(dec.weights[t, : t + 1].sum())}")


def cross(trace: lessons.LessonTrace, v: View) -> None:
    t, src, tgt = v.t, trace.source_tokens, trace.target_tokens
    st.markdown("Cross-attention: queries come from the decoder, keys and values from the encoder output. Row t "
                "reads decoder input t and predicts the next output token, so its weights show which source "
                "words the model looks at while choosing that token. **Heads differ**: some align each output "
                "word with the source word it translates, others do not — the mean over heads is the steadier "
                "picture.")
    st.radio("Show", ["mean", "one"], key="lesson_cross", horizontal=True, label_visibility="collapsed",
             format_func=lambda c: "mean of the heads" if c == "mean" else f"head {v.h + 1} (the Head selector)")
    mean = st.session_state["lesson_cross"] == "mean"
    weights = trace.cross_mean if mean else trace.cross_weights
    name = f"mean of {trace.n_heads} heads" if mean else f"head {v.h + 1}"
    vega.draw(weights_map, weights, trace.row_labels, src, f"cross-attention, last layer, {name}", v.fs,
              v.sizes.get("A_cross"))
    j = int(np.argmax(weights[t]))
    st.latex(rf"\text{{row {t} (after {tex(tgt[t])} → predicts {tex(trace.generated_tokens[t])}) attends most to "
             rf"{tex(src[j])}}}: a = {num(weights[t, j])}")
    peaks = ", ".join(f"head {n + 1} → {src[p]}" for n, p in enumerate(trace.cross_peaks(t)))
    st.caption(f"Where each head of the last layer looks most from this row: {peaks}.")
    glossary.erratum("cross_sources")
    glossary.show_code(attention, "The code: core.attention (every head, every kind)")
    if trace.cross_output is not None:
        _reading(trace, v)


def _reading(trace: lessons.LessonTrace, v: View) -> None:
    """What each step's cross-attention output resembles among the encoder outputs (cosine similarity)."""
    t, src = v.t, trace.source_tokens
    similarity = lessons.cross_reading(trace.cross_output, trace.memory)  # (T, S)
    st.markdown("**What the output reads.** The cross-attention *output* at step t — the weighted mix of the "
                "encoder's value vectors, mixed again by W^O — is a new d_model vector: a representation that "
                "carries source meaning into the target position, before the decoder adds it to its own stream. "
                "Its cosine similarity with each encoder output shows which source tokens it resembles.")
    vega.draw(attention_charts.signed_heatmap, similarity, list(trace.row_labels), list(src), font_scale=v.fs,
              title="cos(cross-attention output at step t, encoder output j), last layer", value="cosine",
              size=min(60 * len(src) + 40, 420))
    j = int(np.argmax(similarity[t]))
    st.latex(rf"\cos(c_{{{t}}}, m_{{{j}}}) = \frac{{c_{{{t}}} \cdot m_{{{j}}}}}{{\lVert c_{{{t}}} \rVert\,"
             rf"\lVert m_{{{j}}} \rVert}} = {num(similarity[t, j])}\quad(\text{{row {t}'s closest source token: "
             rf"{tex(src[j])}}}),\qquad c, m \in \mathbb{{R}}^{{{trace.d_model}}}")
    st.caption(f"The largest |cosine| here is {np.abs(similarity).max():.2f}: the output is a mix of *values* "
               "(the encoder outputs after W^V) turned by W^O, not of the encoder outputs themselves, so it need not "
               "point where the attention weights above peak — measured, not assumed.")


def candidates_chart(candidates: list[tuple[str, float]], title: str, fs: float, size_text: str | None = None):
    """The most likely next tokens as bars; ``size_text`` (the array's size) on hover and as subtitle."""
    chart = charts.candidates_bar(candidates, title=title, font_scale=fs)
    return chart if size_text is None else charts.with_size(chart, size_text, fs)


def output(trace: lessons.LessonTrace, v: View, greedy: bool) -> None:
    t, tgt = v.t, trace.target_tokens
    candidates = trace.top_candidates(t, k=5)
    st.markdown("Greedy decoding takes the most likely token at every step." if greedy else
                "A linear layer and a softmax turn the last decoder layer's vector at this step into a "
                "probability for every output token" + (" (Spanish)." if trace.family == "attnscope" else "."))
    vega.draw(candidates_chart, candidates, f"after {tgt[t]} → predicts", v.fs, v.sizes.get("P"))
    best, p = candidates[0]
    bias = " + b" if trace.output_bias else ""
    st.latex(rf"\hat y_{{{t + 1}}} = \arg\max_w P(w \mid y_0 \dots y_{{{t}}},\, x) = \text{{{tex(best)}}}"
             rf"\ (p = {num(p)})")
    scale = "" if trace.logits_scale == 1.0 else rf"\cdot {trace.logits_scale:.3g}"
    st.latex(rf"P = \mathrm{{softmax}}(h_{{{t}}}{scale}\, W_{{out}}{bias}),\quad W_{{out}} \in "
             rf"\mathbb{{R}}^{{{trace.d_model} \times {len(trace.target_vocab)}}}")


def sampling(trace: lessons.LessonTrace, v: View) -> None:
    t, tgt = v.t, trace.target_tokens
    vocab = len(trace.target_vocab)
    st.markdown("Instead of always taking the most likely token, a sampler **draws** the next token from the "
                "distribution, after reshaping it: the **temperature** T divides the logits (T < 1 sharpens, "
                "T > 1 flattens), **top-k** keeps only the k most likely tokens, **top-p** keeps the smallest set "
                "of most likely tokens whose probability reaches p. What is kept is renormalised to sum to 1. "
                "This is the loaded decoder's real distribution at the chosen step.")
    st.session_state["lesson_top_k"] = int(np.clip(st.session_state["lesson_top_k"], 1, vocab))  # "all" by default
    a, b, c = st.columns(3)
    a.slider("Temperature T", 0.1, 3.0, step=0.1, key="lesson_temperature")
    b.slider("top-k (k = all: off)", 1, vocab, key="lesson_top_k")
    c.slider("top-p (1.0: off)", 0.05, 1.0, step=0.05, key="lesson_top_p")
    k, p = int(st.session_state["lesson_top_k"]), float(st.session_state["lesson_top_p"])
    step = lessons.sampling_step(trace.probabilities[t], float(st.session_state["lesson_temperature"]),
                                 k if k < vocab else None, p if p < 1.0 else None)
    st.altair_chart(charts.sampling_bars(trace.target_vocab, step.original, step.final,
                                         title=[f"after {tgt[t]}:", "the model's P and what the sampler draws from"],
                                         font_scale=v.fs), width="content")
    best = int(np.argmax(step.original))
    st.latex(rf"P_T(w) = \frac{{e^{{z_w / T}}}}{{\sum_u e^{{z_u / T}}}},\quad \text{{{int(step.kept.sum())} of "
             rf"{vocab} tokens kept}}")
    st.latex(rf"P(\text{{{tex(trace.target_vocab[best])}}}) = {num(step.original[best])} \rightarrow "
             rf"{num(step.final[best])}")
    if step.original[best] > 0.9:
        st.caption(f"The model is very sure here (P = {step.original[best]:.2f}): raise T above 1 to flatten the "
                   "distribution and watch the other tokens grow; lower k or p to cut them off again.")
    glossary.show_code(lessons.sampling_step, "The code: core.lessons.sampling_step")


def next_step(trace: lessons.LessonTrace, v: View) -> None:
    T = len(trace.target_tokens)
    st.markdown("The chosen token is appended to the decoder's input and the decoder runs again, until it "
                "produces `<eos>`.")
    st.dataframe({"step": list(range(1, T + 1)), "after": list(trace.target_tokens),
                  "predicts": list(trace.generated_tokens)}, hide_index=True)
    widgets.show_user_text(trace.output_text, label="Translation")


STAGES = (masked_self, cross, lambda tr, v: output(tr, v, False), lambda tr, v: output(tr, v, True), sampling,
          next_step)
