"""The Lesson's decoder stages: masked self-attention, cross-attention, the output distribution, greedy against
beam search, sampling (drawn with a seed), and the next step. Rows of decoder maps read
"after ‹input› → predicts ‹output›"; heads and layers are shown from 1. Their words are the ``lesson-decoder``
messages in the session's language (:func:`words`).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import i18n, resources
from app.ui import glossary, language, vega, widgets
from app.charts import attention as attention_charts
from app.charts import lesson as charts
from app.charts.base import phrases
from app.views.parts.lesson_stages import View, axes, chain, num, sentences, tex, weights_map
from core import attention, lessons

DRAWS = 100  # tokens the sampling stage draws to show how often each candidate wins


def words():
    """The ``lesson-decoder`` messages in the session's language."""
    return language.words("lesson-decoder")


def row_labels(trace: lessons.LessonTrace) -> list[str]:
    """The decoder rows as "after ‹input› → predicts ‹output›" in the session's language (spaces kept whole)."""
    w = words()
    return phrases([w("rows.label", after=a, predicts=p) for a, p in zip(trace.target_tokens, trace.generated_tokens)])


def masked_self(trace: lessons.LessonTrace, v: View) -> None:
    t, dec, tgt, w = v.t, trace.decoder_head, trace.target_tokens, words()
    st.markdown(w("masked_self.text"))
    vega.draw(weights_map, dec.weights, row_labels(trace), tgt, w("masked_self.title", head=v.h + 1), v.fs,
              v.sizes.get("A_dec"), lang=language.current())
    step = t + 1  # steps from 1 on screen
    st.latex(rf"\text{{{w('masked_self.step', n=step)}}} a_{{{step}j}} = 0 \ \text{{{w('masked_self.for')}}}\ "
             rf"j > {step},\qquad "
             rf"\textstyle\sum_{{j \le {step}}} a_{{{step}j}} = {num(dec.weights[t, : t + 1].sum())}")


def cross(trace: lessons.LessonTrace, v: View) -> None:
    t, src, tgt, w = v.t, trace.source_tokens, trace.target_tokens, words()
    st.markdown(w("cross.text"))
    st.radio(w("cross.show"), ["mean", "one"], key="lesson_cross", horizontal=True, label_visibility="collapsed",
             format_func=lambda c: w("cross.mean_option") if c == "mean" else w("cross.head_option", head=v.h + 1))
    mean = st.session_state["lesson_cross"] == "mean"
    weights = trace.cross_mean if mean else trace.cross_weights
    name = w("cross.mean_name", n=trace.n_heads) if mean else w("cross.head_name", head=v.h + 1)
    vega.draw(weights_map, weights, row_labels(trace), src, w("cross.title", name=name), v.fs,
              v.sizes.get("A_cross"), lang=language.current())
    j = int(np.argmax(weights[t]))
    row = w("cross.row", t=t, after=tex(tgt[t]), predicts=tex(trace.generated_tokens[t]), source=tex(src[j]))
    st.latex(rf"\text{{{row}}}: a = {num(weights[t, j])}")
    peaks = ", ".join(w("cross.peak", n=n + 1, token=src[p]) for n, p in enumerate(trace.cross_peaks(t)))
    st.caption(w("cross.peaks", peaks=peaks))
    glossary.erratum("cross_sources")
    glossary.show_code(attention, w("cross.code"))
    if trace.cross_output is not None:
        _reading(trace, v)


def _reading(trace: lessons.LessonTrace, v: View) -> None:
    """How close each step's cross-attention output points to each encoder output (cosine, on the full ±1 scale)."""
    t, src, w = v.t, trace.source_tokens, words()
    similarity = lessons.cross_reading(trace.cross_output, trace.memory)  # (T, S)
    st.markdown(w("cross.reading"))
    vega.draw(attention_charts.signed_heatmap, similarity, row_labels(trace), list(src), font_scale=v.fs,
              title=w("cross.reading_title"), value="cosine", size=min(60 * len(src) + 40, 420), limit=1.0,
              axes=axes(language.current(), "cosine"))
    j = int(np.argmax(np.abs(similarity[t])))
    st.latex(chain(rf"\cos(c_{{{t}}}, m_{{{j}}})", rf"\frac{{c_{{{t}}} \cdot m_{{{j}}}}}{{\lVert c_{{{t}}} "
                   rf"\rVert\,\lVert m_{{{j}}} \rVert}}", num(similarity[t, j])))
    st.latex(rf"c_{{{t}}},\ m_{{{j}}} \in \mathbb{{R}}^{{{trace.d_model}}}")
    largest = float(np.abs(similarity).max())
    st.caption(w("cross.largest_low" if largest < 0.3 else "cross.largest_high", largest=largest))


def candidates_chart(candidates: list[tuple[str, float]], title: str, fs: float, size_text: str | None = None, *,
                     lang: str = i18n.DEFAULT):
    """The most likely next tokens as bars; ``size_text`` (the array's size) on hover and as subtitle; its axes in
    ``lang`` (an argument: :func:`app.ui.vega.draw` caches the spec by them)."""
    chart = charts.candidates_bar(candidates, title=title, font_scale=fs, lang=lang)
    return chart if size_text is None else charts.with_size(chart, size_text, fs, lang)


def output(trace: lessons.LessonTrace, v: View) -> None:
    t, tgt, w = v.t, trace.target_tokens, words()
    candidates = trace.top_candidates(t, k=5)
    spanish = trace.family == "attnscope" and trace.kind == "encoder-decoder"
    st.markdown(sentences(w("output.text_spanish" if spanish else "output.text"), w("output.greedy")))
    vega.draw(candidates_chart, candidates, w("output.title", token=tgt[t]), v.fs, v.sizes.get("P"),
              lang=language.current())
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
    w = words()
    st.dataframe({w("decoding.decoder"): [name for name, _ in rows], w("decoding.output"): [" ".join(d.tokens) for _, d in rows],
                  "log P(output | x)": [round(d.log_prob, 3) for _, d in rows]}, hide_index=True)


def greedy_and_beam(trace: lessons.LessonTrace, v: View, entry) -> None:
    """Greedy against beam search on the whole sentence: the tokens and the log-probability of each."""
    seed, temperature, top_k, top_p = _settings(len(trace.target_vocab))
    both = resources.decoding_comparison(entry, st.session_state["lesson_text"], seed, temperature, top_k, top_p)
    what, w = ("translation" if trace.kind == "encoder-decoder" else "continuation"), words()
    st.markdown(w(f"decoding.text_{what}", n=both.beam_size))
    _outputs_table([(w("decoding.greedy_row"), both.greedy), (w("decoding.beam_row", n=both.beam_size), both.beam)])
    gap = both.beam.log_prob - both.greedy.log_prob
    if both.beam.tokens == both.greedy.tokens:
        st.caption(w(f"decoding.same_{what}", log_p=both.greedy.log_prob))
    else:
        st.caption(w("decoding.differ", beam=both.beam.log_prob, greedy=both.greedy.log_prob, gap=gap))
    st.latex(r"\text{score}(y) = \frac{\log P(y \mid x)}{((5 + |y|)/6)^{\alpha}},\quad \alpha = 0.6")


def _draws_chart(trace: lessons.LessonTrace, draws: lessons.Draws, step: lessons.SamplingStep, fs: float,
                 lang: str = i18n.DEFAULT):
    """The model's and the sampler's distributions beside each candidate's share of the draws: the sampler's
    most likely tokens, then any other drawn token."""
    final = step.final
    order = [int(i) for i in np.argsort(-final, kind="stable")[:8] if final[i] > 0]
    drawn = sorted(set(int(i) for i in np.flatnonzero(draws.counts)) - set(order), key=lambda i: -draws.counts[i])
    shown = order + drawn[:4]
    return charts.draws_bars([trace.target_vocab[i] for i in shown], step.original[shown], final[shown],
                             draws.frequencies[shown], font_scale=fs, lang=lang,
                             title=i18n.text(lang, "lesson-decoder", "sampling.draws_title", n=draws.counts.sum(),
                                             seed=draws.seed))


def sampling(trace: lessons.LessonTrace, v: View, entry) -> None:
    t, tgt, w = v.t, trace.target_tokens, words()
    vocab = len(trace.target_vocab)
    st.markdown(w("sampling.text"))
    st.session_state["lesson_top_k"] = int(np.clip(st.session_state["lesson_top_k"], 1, vocab))  # "all" by default
    a, b, c, d = st.columns([1, 1.3, 1.3, 1.3])
    a.number_input(w("sampling.seed"), 0, 2**31 - 1, step=1, key="lesson_seed")
    b.slider(w("sampling.temperature"), 0.1, 3.0, step=0.1, key="lesson_temperature")
    c.slider(w("sampling.top_k"), 1, vocab, key="lesson_top_k")
    d.slider(w("sampling.top_p"), 0.05, 1.0, step=0.05, key="lesson_top_p")
    seed, temperature, top_k, top_p = _settings(vocab)
    step = lessons.sampling_step(trace.probabilities[t], temperature, top_k, top_p)
    draws = lessons.draw_tokens(trace.probabilities[t], DRAWS, seed, temperature, top_k, top_p)
    first = trace.target_vocab[int(draws.ids[0])]
    vega.draw(_draws_chart, trace, draws, step, v.fs, language.current())
    st.markdown(w("sampling.drawn", after=widgets.plain(tgt[t]), token=widgets.plain(first), seed=seed, n=DRAWS))
    best = int(np.argmax(step.original))
    st.latex(rf"P_\tau(w) = \frac{{e^{{z_w / \tau}}}}{{\sum_u e^{{z_u / \tau}}}},\quad \text{{{w('sampling.kept', kept=int(step.kept.sum()), vocab=vocab)}}},"
             rf"\quad P(\text{{{tex(trace.target_vocab[best])}}}) = "
             rf"{num(step.original[best])} \rightarrow {num(step.final[best])}")
    if step.original[best] > 0.9 and temperature <= 1.0:
        st.caption(w("sampling.sure", p=step.original[best]))
    both = resources.decoding_comparison(entry, st.session_state["lesson_text"], seed, temperature, top_k, top_p)
    st.markdown(w("sampling.whole"))
    _outputs_table([(w("decoding.greedy_row"), both.greedy), (w("decoding.sampled_row", seed=seed), both.sampled)])
    glossary.show_code(lessons.draw_tokens, w("sampling.code"))


def next_step(trace: lessons.LessonTrace, v: View) -> None:
    T, w = len(trace.target_tokens), words()
    st.markdown(w("next_step.text"))
    st.dataframe({w("next_step.step"): list(range(1, T + 1)), w("next_step.after"): list(trace.target_tokens),
                  w("next_step.predicts"): list(trace.generated_tokens)}, hide_index=True)
    widgets.show_user_text(trace.output_text, label=w("next_step.translation") if trace.kind == "encoder-decoder"
                           else w("next_step.continuation"))


STAGES = (masked_self, cross, output, greedy_and_beam, sampling, next_step)
NEEDS_ENTRY = (greedy_and_beam, sampling)  # these decode the whole sentence again: they take the Lesson's model
