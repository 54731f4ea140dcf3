"""The Lesson's decoder stages: masked self-attention, cross-attention, the output distribution, greedy against
beam search, sampling (drawn with a seed), and the next step. Rows of decoder maps read
"after ‹input› → predicts ‹output›"; heads and layers are shown from 1.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import resources
from app.ui import glossary, vega, widgets
from app.charts import attention as attention_charts
from app.charts import lesson as charts
from app.charts.base import phrases
from app.views.parts.lesson_stages import View, chain, num, tex, weights_map
from core import attention, lessons

DRAWS = 100  # tokens the sampling stage draws to show how often each candidate wins


def masked_self(trace: lessons.LessonTrace, v: View) -> None:
    t, dec, tgt = v.t, trace.decoder_head, trace.target_tokens
    st.markdown("The decoder reads `<bos>` and the translation so far. Its self-attention is masked: step t "
                "(counted from 1, as the Decoder step picker) may look only at steps 1…t, never at words not yet "
                "produced — the weights above the diagonal are exactly 0. Each row is labelled by the token it reads "
                "and the token it goes on to predict.")
    vega.draw(weights_map, dec.weights, phrases(trace.row_labels), tgt, f"decoder layer 1, head {v.h + 1} (masked)", v.fs,
              v.sizes.get("A_dec"))
    step = t + 1  # steps from 1 on screen
    st.latex(rf"\text{{step {step}: }} a_{{{step}j}} = 0 \ \text{{for}}\ j > {step},\qquad "
             rf"\textstyle\sum_{{j \le {step}}} a_{{{step}j}} = {num(dec.weights[t, : t + 1].sum())}")


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
    vega.draw(weights_map, weights, phrases(trace.row_labels), src, f"cross-attention, last layer, {name}", v.fs,
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
    """How close each step's cross-attention output points to each encoder output (cosine, on the full ±1 scale)."""
    t, src = v.t, trace.source_tokens
    similarity = lessons.cross_reading(trace.cross_output, trace.memory)  # (T, S)
    st.markdown("**What the output is.** The cross-attention *output* at step t is the attended tokens' *values*, "
                "mixed by W^O: a new d_model vector that the decoder adds to its own stream. It is not a copy of "
                "the encoder outputs: W^V and W^O turn them first. The chart compares it with each encoder output "
                "on the full cosine scale (−1 to 1), so a pale map means they point in unrelated directions.")
    vega.draw(attention_charts.signed_heatmap, similarity, phrases(trace.row_labels), list(src), font_scale=v.fs,
              title="cos(cross-attention output at step t, encoder output j), last layer", value="cosine",
              size=min(60 * len(src) + 40, 420), limit=1.0)
    j = int(np.argmax(np.abs(similarity[t])))
    st.latex(chain(rf"\cos(c_{{{t}}}, m_{{{j}}})", rf"\frac{{c_{{{t}}} \cdot m_{{{j}}}}}{{\lVert c_{{{t}}} "
                   rf"\rVert\,\lVert m_{{{j}}} \rVert}}", num(similarity[t, j])))
    st.latex(rf"c_{{{t}}},\ m_{{{j}}} \in \mathbb{{R}}^{{{trace.d_model}}}")
    st.caption(f"The largest |cosine| here is {np.abs(similarity).max():.2f}"
               + (": close to 0, so the output does not point along any encoder output, even the one the weights "
                  "above attend to — it carries their values through W^V and W^O, not the encoder outputs "
                  "themselves." if np.abs(similarity).max() < 0.3 else
                  ": the output points partly along the encoder outputs here; the weights above say which it "
                  "attends."))


def candidates_chart(candidates: list[tuple[str, float]], title: str, fs: float, size_text: str | None = None):
    """The most likely next tokens as bars; ``size_text`` (the array's size) on hover and as subtitle."""
    chart = charts.candidates_bar(candidates, title=title, font_scale=fs)
    return chart if size_text is None else charts.with_size(chart, size_text, fs)


def output(trace: lessons.LessonTrace, v: View) -> None:
    t, tgt = v.t, trace.target_tokens
    candidates = trace.top_candidates(t, k=5)
    st.markdown("A linear layer and a softmax turn the last decoder layer's vector at this step into a "
                "probability for every output token" + (" (Spanish)." if trace.family == "attnscope" and trace.kind == "encoder-decoder" else ".")
                + " Greedy decoding takes the most likely one.")
    vega.draw(candidates_chart, candidates, f"after {tgt[t]} → predicts", v.fs, v.sizes.get("P"))
    best, p = candidates[0]
    bias = " + b" if trace.output_bias else ""
    history = "y_0" if t == 0 else rf"y_0 \dots y_{{{t}}}"
    st.latex(rf"\hat y_{{{t + 1}}} = \arg\max_w P(w \mid {history},\, x) = \text{{{tex(best)}}}"
             rf"\ (p = {num(p)})")
    scale = "" if trace.logits_scale == 1.0 else rf"\cdot {trace.logits_scale:.3g}"
    st.latex(rf"P = \mathrm{{softmax}}(h_{{{t}}}{scale}\, W_{{out}}{bias}),\quad W_{{out}} \in "
             rf"\mathbb{{R}}^{{{trace.d_model} \times {len(trace.target_vocab)}}}")


def _settings(vocab: int) -> tuple[int, float, int | None, float | None]:
    """The sampler's seed, temperature, top-k and top-p as chosen (None: that filter is off; k = ``vocab``: all)."""
    k, p = int(st.session_state["lesson_top_k"]), float(st.session_state["lesson_top_p"])
    return (int(st.session_state["lesson_seed"]), float(st.session_state["lesson_temperature"]),
            k if k < vocab else None, p if p < 1.0 else None)


def _outputs_table(rows: list[tuple[str, lessons.Decoded]]) -> None:
    st.dataframe({"decoder": [name for name, _ in rows], "output": [" ".join(d.tokens) for _, d in rows],
                  "log P(output | x)": [round(d.log_prob, 3) for _, d in rows]}, hide_index=True)


def greedy_and_beam(trace: lessons.LessonTrace, v: View, entry) -> None:
    """Greedy against beam search on the whole sentence: the tokens and the log-probability of each."""
    seed, temperature, top_k, top_p = _settings(len(trace.target_vocab))
    both = resources.decoding_comparison(entry, st.session_state["lesson_text"], seed, temperature, top_k, top_p)
    what = "translation" if trace.kind == "encoder-decoder" else "continuation"
    st.markdown(f"Greedy keeps one partial {what} and takes the best token at each step. **Beam search** keeps "
                f"the {both.beam_size} best partial {what}s at every step (ranked by their log-probability, "
                "with a length penalty) and returns the best finished one, so a step that looks worse now can win "
                "later. Both are this model's outputs for the sentence.")
    _outputs_table([("greedy", both.greedy), (f"beam search, {both.beam_size} beams", both.beam)])
    gap = both.beam.log_prob - both.greedy.log_prob
    if both.beam.tokens == both.greedy.tokens:
        st.caption(f"Here beam search finds greedy's own {what}: no path that starts with a less likely token "
                   f"ends better (log P {both.greedy.log_prob:.3f}).")
    else:
        st.caption(f"The two differ: beam search's output has log P {both.beam.log_prob:.3f} against greedy's "
                   f"{both.greedy.log_prob:.3f} ({gap:+.3f}).")
    st.latex(r"\text{score}(y) = \frac{\log P(y \mid x)}{((5 + |y|)/6)^{\alpha}},\quad \alpha = 0.6")


def _draws_chart(trace: lessons.LessonTrace, draws: lessons.Draws, step: lessons.SamplingStep, fs: float):
    """The model's and the sampler's distributions beside each candidate's share of the draws: the sampler's
    most likely tokens, then any other drawn token."""
    final = step.final
    order = [int(i) for i in np.argsort(-final, kind="stable")[:8] if final[i] > 0]
    drawn = sorted(set(int(i) for i in np.flatnonzero(draws.counts)) - set(order), key=lambda i: -draws.counts[i])
    shown = order + drawn[:4]
    return charts.draws_bars([trace.target_vocab[i] for i in shown], step.original[shown], final[shown],
                             draws.frequencies[shown],
                             title=f"{draws.counts.sum()} draws (seed {draws.seed})", font_scale=fs)


def sampling(trace: lessons.LessonTrace, v: View, entry) -> None:
    t, tgt = v.t, trace.target_tokens
    vocab = len(trace.target_vocab)
    st.markdown("Instead of always taking the most likely token, a sampler **draws** it at random, from the "
                "distribution reshaped: the **temperature** τ divides the logits (τ < 1 sharpens, τ > 1 flattens), "
                "**top-k** keeps the k most likely tokens, **top-p** the fewest whose probability reaches p; the "
                "rest is renormalised. The **seed** fixes the draws.")
    st.session_state["lesson_top_k"] = int(np.clip(st.session_state["lesson_top_k"], 1, vocab))  # "all" by default
    a, b, c, d = st.columns([1, 1.3, 1.3, 1.3])
    a.number_input("Seed", 0, 2**31 - 1, step=1, key="lesson_seed")
    b.slider("Temperature τ", 0.1, 3.0, step=0.1, key="lesson_temperature")
    c.slider("top-k (k = all: off)", 1, vocab, key="lesson_top_k")
    d.slider("top-p (1.0: off)", 0.05, 1.0, step=0.05, key="lesson_top_p")
    seed, temperature, top_k, top_p = _settings(vocab)
    step = lessons.sampling_step(trace.probabilities[t], temperature, top_k, top_p)
    draws = lessons.draw_tokens(trace.probabilities[t], DRAWS, seed, temperature, top_k, top_p)
    first = trace.target_vocab[int(draws.ids[0])]
    vega.draw(_draws_chart, trace, draws, step, v.fs)
    st.markdown(f"After ‹{widgets.plain(tgt[t])}› the sampler draws **{widgets.plain(first)}** (seed {seed}); the "
                f"chart counts {DRAWS} draws with this seed.")
    best = int(np.argmax(step.original))
    st.latex(rf"P_\tau(w) = \frac{{e^{{z_w / \tau}}}}{{\sum_u e^{{z_u / \tau}}}},\quad \text{{{int(step.kept.sum())} "
             rf"of {vocab} tokens kept}},\quad P(\text{{{tex(trace.target_vocab[best])}}}) = "
             rf"{num(step.original[best])} \rightarrow {num(step.final[best])}")
    if step.original[best] > 0.9 and temperature <= 1.0:
        st.caption(f"The model is very sure here (P = {step.original[best]:.2f}): raise τ above 1 to flatten the "
                   "distribution and watch other tokens win draws; lower k or p to cut them off again.")
    both = resources.decoding_comparison(entry, st.session_state["lesson_text"], seed, temperature, top_k, top_p)
    st.markdown("The whole sentence, sampled step by step with these settings, beside greedy's:")
    _outputs_table([("greedy", both.greedy), (f"sampled (seed {seed})", both.sampled)])
    glossary.show_code(lessons.draw_tokens, "The code: core.lessons.draw_tokens (as core.generate.sample draws)")


def next_step(trace: lessons.LessonTrace, v: View) -> None:
    T = len(trace.target_tokens)
    st.markdown("The chosen token is appended to the decoder's input and the decoder runs again, until it "
                "produces `<eos>`.")
    st.dataframe({"step": list(range(1, T + 1)), "after": list(trace.target_tokens),
                  "predicts": list(trace.generated_tokens)}, hide_index=True)
    widgets.show_user_text(trace.output_text, label="Translation" if trace.kind == "encoder-decoder" else
                           "Prompt and continuation")


STAGES = (masked_self, cross, output, greedy_and_beam, sampling, next_step)
NEEDS_ENTRY = (greedy_and_beam, sampling)  # these decode the whole sentence again: they take the Lesson's model
