"""Lesson: one sentence followed through every stage of the translation model, with its live numbers.

Each stage has a picture, two or three sentences, the formula with the actual numbers of one
highlighted token, a link to the page that explores it further, and Previous / Next buttons.
The stage, sentence, head and highlighted token live in the share link.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import resources, routes, ui
from app.charts import lesson as charts
from app.views import lesson_stages as stages
from app.views.lesson_stages import View, num, tex, weights_map

DEFAULT_TEXT = "I have cats"  # core lower-cases it as the model was trained (and says so)
STAGES = (
    ("Tokens", routes.EXPLORE), ("Embeddings + positional encoding", routes.POSITIONAL),
    ("Q, K, V of one head", routes.PLAYGROUND), ("Scores q·k", routes.PLAYGROUND),
    ("÷ √d_k", routes.PLAYGROUND), ("Mask", routes.MASKS), ("Softmax", routes.PLAYGROUND),
    ("Weighted sum of values", routes.PLAYGROUND), ("Heads concatenated", routes.ARCHITECTURE),
    ("Add & Norm", routes.ARCHITECTURE), ("Feed-forward network", routes.ARCHITECTURE),
    ("Encoder output", routes.EXPLORE), ("Decoder masked self-attention", routes.MASKS),
    ("Cross-attention", routes.EXPLORE), ("Output distribution", routes.EXPLORE),
    ("Greedy choice", routes.EXPLORE), ("Next step", routes.EXPLORE),
)


def _go(delta: int) -> None:
    st.session_state["lesson_stage"] = int(np.clip(st.session_state["lesson_stage"] + delta, 0, len(STAGES) - 1))


ui.restore_from_url({"lesson_text": str, "lesson_stage": int, "lesson_head": int, "lesson_token": int,
                     "lesson_step": int},
                    {"lesson_text": DEFAULT_TEXT, "lesson_stage": 0, "lesson_head": 0, "lesson_token": 0,
                     "lesson_step": 0, "lesson_cross": "mean"})
fs = ui.font_scale()
st.title("Lesson: one sentence, every stage")
st.markdown("Follow one English sentence through the **encoder-decoder** model of *Attention Is All You Need* "
            "as it is translated into Spanish. Every number below is computed live by the loaded model.")

entry = resources.lesson_entry(ui.current_entry())
if entry is None:
    st.warning("The lesson needs a translation (encoder-decoder) checkpoint; none is available.")
    st.stop()
st.caption(f"Model: {entry.label}")
st.text_input("Sentence (English)", key="lesson_text", max_chars=200)
trace = ui.attempt("follow the sentence", resources.lesson_trace, entry, st.session_state["lesson_text"],
                   int(np.clip(st.session_state["lesson_head"], 0, 63)))
if trace is None:
    st.stop()

S, T = len(trace.source_tokens), len(trace.target_tokens)
st.session_state["lesson_stage"] = int(np.clip(st.session_state["lesson_stage"], 0, len(STAGES) - 1))
st.session_state["lesson_token"] = int(np.clip(st.session_state["lesson_token"], 0, S - 1))
st.session_state["lesson_step"] = int(np.clip(st.session_state["lesson_step"], 0, T - 1))
st.session_state["lesson_head"] = int(np.clip(st.session_state["lesson_head"], 0, trace.n_heads - 1))

controls = [*st.columns([3, 1]), *st.columns(2)]  # two rows: values stay readable in projector mode
controls[0].selectbox("Stage", range(len(STAGES)), key="lesson_stage",
                      format_func=lambda i: f"{i + 1}. {STAGES[i][0]}")
controls[1].selectbox("Head", range(trace.n_heads), key="lesson_head", format_func=lambda h: f"head {h + 1}")
controls[2].selectbox("Highlighted source token", range(S), key="lesson_token",
                      format_func=lambda i: f"{i}: {trace.source_tokens[i]}")
controls[3].selectbox("Decoder step", range(T), key="lesson_step",
                      format_func=lambda t: f"step {t + 1}: after {trace.target_tokens[t]}")
stage = st.session_state["lesson_stage"]
nav = st.columns([1, 1, 3])  # a row of its own: the buttons never clip, even in projector mode
nav[0].button("◀ Back", on_click=_go, args=(-1,), disabled=stage == 0, help="Previous stage", key="lesson_prev")
nav[1].button("Next ▶", on_click=_go, args=(1,), disabled=stage == len(STAGES) - 1, help="Next stage",
              key="lesson_next", type="primary")
st.progress((stage + 1) / len(STAGES), text=f"Stage {stage + 1} of {len(STAGES)}: {STAGES[stage][0]}")
ui.write_to_url(["lesson_text", "lesson_stage", "lesson_head", "lesson_token", "lesson_step"])

i, t, h = st.session_state["lesson_token"], st.session_state["lesson_step"], trace.head
view = View(i, t, h, fs)
src, tgt = trace.source_tokens, trace.target_tokens
st.header(f"{stage + 1}. {STAGES[stage][0]}")
ENCODER = (stages.tokens, stages.embeddings, stages.projections, lambda tr, v: stages.scores(tr, v, False),
           lambda tr, v: stages.scores(tr, v, True), stages.mask, stages.softmax, stages.weighted_sum,
           stages.concatenated, stages.add_norm, stages.ffn, stages.encoder_output)
if stage < len(ENCODER):
    ENCODER[stage](trace, view)
elif stage == 12:
    dec = trace.decoder_head
    st.markdown("The decoder reads `<bos>` and the translation so far. Its self-attention is masked: step t may "
                "look only at steps 0…t, never at words not yet produced — the weights above the diagonal are "
                "exactly 0. Each row is labelled by the token it reads and the token it goes on to predict.")
    st.altair_chart(weights_map(dec.weights, trace.row_labels, tgt, f"decoder layer 1, head {h + 1} (masked)", fs),
                    width="content")
    st.latex(rf"a_{{{t}j}} = 0 \ \text{{for}}\ j > {t},\qquad \textstyle\sum_{{j \le {t}}} a_{{{t}j}} = "
             rf"{num(dec.weights[t, : t + 1].sum())}")
elif stage == 13:
    st.markdown("Cross-attention: queries come from the decoder, keys and values from the encoder output. Row t "
                "reads decoder input t and predicts the next output token, so its weights show which source "
                "words the model looks at while choosing that token. **Heads differ**: some align each output "
                "word with the source word it translates, others do not — the mean over heads is the steadier "
                "picture.")
    st.radio("Show", ["mean", "one"], key="lesson_cross", horizontal=True,
             format_func=lambda c: "mean of the heads" if c == "mean" else f"head {h + 1} (the Head selector)")
    mean = st.session_state["lesson_cross"] == "mean"
    cross = trace.cross_mean if mean else trace.cross_weights
    name = f"mean of {trace.n_heads} heads" if mean else f"head {h + 1}"
    st.altair_chart(weights_map(cross, trace.row_labels, src, f"cross-attention, last layer, {name}", fs),
                    width="content")
    j = int(np.argmax(cross[t]))
    st.latex(rf"\text{{row {t} (after {tex(tgt[t])} → predicts {tex(trace.generated_tokens[t])}) attends most to "
             rf"{tex(src[j])}}}: a = {num(cross[t, j])}")
    peaks = ", ".join(f"head {n + 1} → {src[p]}" for n, p in enumerate(trace.cross_peaks(t)))
    st.caption(f"Where each head of the last layer looks most from this row: {peaks}.")
elif stage in (14, 15):
    candidates = trace.top_candidates(t, k=5)
    st.markdown("A linear layer and a softmax turn the last decoder layer's vector at this step into a "
                "probability for every Spanish token." if stage == 14 else
                "Greedy decoding takes the most likely token at every step.")
    st.altair_chart(charts.candidates_bar(candidates, title=f"after {tgt[t]} → predicts", font_scale=fs),
                    width="content")
    best, p = candidates[0]
    st.latex(rf"\hat y_{{{t + 1}}} = \arg\max_w P(w \mid y_0 \dots y_{{{t}}},\, x) = \text{{{tex(best)}}}"
             rf"\ (p = {num(p)}),\quad P = \mathrm{{softmax}}(h_{{{t}}} W_{{out}} + b),\ W_{{out}} \in "
             rf"\mathbb{{R}}^{{{trace.d_model} \times {len(trace.target_vocab)}}}")
else:
    st.markdown("The chosen token is appended to the decoder's input and the decoder runs again, until it "
                "produces `<eos>`.")
    st.dataframe({"step": list(range(1, T + 1)), "after": list(tgt), "predicts": list(trace.generated_tokens)},
                 hide_index=True)
    ui.show_user_text(trace.output_text, label="Translation")
st.page_link(STAGES[stage][1], label="Go deeper on this topic", icon=":material/arrow_forward:")
