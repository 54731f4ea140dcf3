"""Lesson: one sentence followed through every stage of the translation model, with its live numbers.

Each stage has a picture, two or three sentences, the formula with the actual numbers of one
highlighted token, a link to the page that explores it further, and Previous / Next buttons.
The stage, sentence, head and highlighted token live in the share link.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import resources, routes, ui
from app.charts import attention
from app.charts import lesson as charts

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


def _num(x: float) -> str:
    return f"{x:.2f}"


def _vec(values: np.ndarray, n: int = 4) -> str:
    shown = ", ".join(_num(v) for v in values[:n])
    more = r", \dots" if len(values) > n else ""
    return f"[{shown}{more}]"


def _tex(token: str) -> str:
    """A token (user text) inside \\text{…}: LaTeX's special characters escaped."""
    special = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
               "%": r"\%", "_": r"\_", "^": r"\^{}", "~": r"\~{}"}
    return "".join(special.get(c, c) for c in token)


def _weights(weights: np.ndarray, rows, cols, title: str, font_scale: float):
    """A small attention map (or mask) on the 0–1 scale, sized to the lesson's few tokens."""
    size = min(60 * max(len(rows), len(cols)) + 40, 420)
    return attention.head_heatmap(weights, rows, cols, title=title, font_scale=font_scale, size=size)


def _go(delta: int) -> None:
    st.session_state["lesson_stage"] = int(np.clip(st.session_state["lesson_stage"] + delta, 0, len(STAGES) - 1))


ui.restore_from_url({"lesson_text": str, "lesson_stage": int, "lesson_head": int, "lesson_token": int,
                     "lesson_step": int},
                    {"lesson_text": DEFAULT_TEXT, "lesson_stage": 0, "lesson_head": 0, "lesson_token": 0,
                     "lesson_step": 0})
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
                      format_func=lambda t: f"{t}: after {trace.target_tokens[t]}")
stage = st.session_state["lesson_stage"]
nav = st.columns([1, 1, 3])  # a row of its own: the buttons never clip, even in projector mode
nav[0].button("◀ Back", on_click=_go, args=(-1,), disabled=stage == 0, help="Previous stage", key="lesson_prev")
nav[1].button("Next ▶", on_click=_go, args=(1,), disabled=stage == len(STAGES) - 1, help="Next stage",
              key="lesson_next", type="primary")
st.progress((stage + 1) / len(STAGES), text=f"Stage {stage + 1} of {len(STAGES)}: {STAGES[stage][0]}")
ui.write_to_url(["lesson_text", "lesson_stage", "lesson_head", "lesson_token", "lesson_step"])

i, t, h, head = st.session_state["lesson_token"], st.session_state["lesson_step"], trace.head, trace.encoder_head
src, tgt = trace.source_tokens, trace.target_tokens
st.header(f"{stage + 1}. {STAGES[stage][0]}")
if stage == 0:
    st.markdown("The tokenizer cuts the sentence into tokens the model knows; each becomes a row of every "
                "matrix that follows. An unknown word becomes `<unk>`.")
    st.dataframe({"position": list(range(S)), "token": list(src)}, hide_index=True)
    st.latex(rf"\text{{{S} tokens}}\;\rightarrow\;X \in \mathbb{{R}}^{{{S} \times {trace.d_model}}}")
elif stage == 1:
    st.markdown("Each token's embedding row is multiplied by √d_model and the sinusoidal positional encoding of "
                "its position is added, so the same word at another position gives another vector.")
    st.altair_chart(charts.vectors(trace.embedded, src, title="x = embedding·√d_model + PE", highlight=i,
                                   font_scale=fs), width="content")
    st.latex(rf"x_{{{i}}} = E[\text{{{_tex(src[i])}}}]\sqrt{{{trace.d_model}}} + PE_{{{i}}} = "
             rf"{_vec(trace.token_embedding[i])} + {_vec(trace.positional[i])} = {_vec(trace.embedded[i])}")
elif stage == 2:
    st.markdown(f"Layer 0 projects every token three ways with learned matrices: a query (what it looks for), a "
                f"key (what it offers) and a value (what it passes on). Head {h} uses its own d_k = {trace.d_k} "
                "columns of each.")
    cols = st.columns(3)
    for col, name, matrix in zip(cols, "QKV", (head.q, head.k, head.v)):
        col.altair_chart(charts.vectors(matrix, src, title=name, highlight=i, max_dims=16, font_scale=fs), width="content")
    st.latex(rf"q_{{{i}}} = x_{{{i}}} W^Q_{{{h}}} = {_vec(head.q[i])},\quad k_{{{i}}} = {_vec(head.k[i])},"
             rf"\quad v_{{{i}}} = {_vec(head.v[i])}")
elif stage in (3, 4):
    scaled = stage == 4
    matrix = head.scaled if scaled else head.dot
    st.markdown("Each query is compared with every key by a dot product: a large value means a good match. "
                + ("Dividing by √d_k keeps the scores in a range where the softmax does not saturate as d_k grows."
                   if scaled else "These raw dot products grow with d_k."))
    st.altair_chart(attention.signed_heatmap(matrix, src, src, title="q·k / √d_k" if scaled else "q·k (raw dot products)",
                                             value="score", font_scale=fs, size=min(60 * S + 40, 420)),
                    width="content")
    j = int(np.argmax(head.dot[i]))
    if scaled:
        st.latex(rf"s_{{{i}{j}}} = \frac{{q_{{{i}}} \cdot k_{{{j}}}}}{{\sqrt{{d_k}}}} = "
                 rf"\frac{{{_num(head.dot[i, j])}}}{{\sqrt{{{trace.d_k}}}}} = {_num(head.scaled[i, j])}")
    else:
        terms = " + ".join(f"({_num(a)})({_num(b)})" for a, b in zip(head.q[i][:3], head.k[j][:3]))
        st.latex(rf"q_{{{i}}} \cdot k_{{{j}}} = {terms} + \dots = {_num(head.dot[i, j])}")
elif stage == 5:
    st.markdown("A mask says which keys a query may see (True = may attend). In the encoder every token sees "
                "every other token of the sentence; masked cells would get −∞ before the softmax.")
    st.altair_chart(_weights(head.mask.astype(float), src, src, title="encoder mask (1 = may attend)",
                                          font_scale=fs), width="content")
    st.latex(r"s_{ij} \leftarrow -\infty \ \text{where}\ m_{ij} = \text{False}")
elif stage == 6:
    st.markdown("The softmax turns each row of scores into weights that are positive and sum to 1.")
    st.altair_chart(_weights(head.weights, src, src, title=f"encoder layer 0, head {h}", font_scale=fs), width="content")
    j = int(np.argmax(head.weights[i]))
    denominator = " + ".join(f"e^{{{_num(s)}}}" for s in head.scaled[i][:4]) + (" + \\dots" if S > 4 else "")
    st.latex(rf"a_{{{i}{j}}} = \frac{{e^{{{_num(head.scaled[i, j])}}}}}{{{denominator}}} = {_num(head.weights[i, j])}"
             rf",\qquad \textstyle\sum_j a_{{{i}j}} = {_num(head.weights[i].sum())}")
elif stage == 7:
    st.markdown("The head's output for each token is the average of all value vectors, weighted by its row "
                "of attention weights.")
    st.altair_chart(charts.vectors(head.output, src, title=f"head {h} output z = A V", highlight=i, max_dims=16,
                                   font_scale=fs), width="content")
    parts = " + ".join(f"{_num(a)}\\,v_{{{j}}}" for j, a in enumerate(head.weights[i][:4]))
    more = r" + \dots" if S > 4 else ""
    st.latex(rf"z_{{{i}}} = {parts}{more} = {_vec(head.output[i])}")
elif stage == 8:
    st.markdown(f"The {trace.n_heads} heads' outputs are placed side by side and mixed by the output "
                "projection W^O, back to d_model numbers per token.")
    st.altair_chart(charts.vectors(trace.attention_out, src, title="MultiHead(X) = [z¹; …; zᴴ] Wᴼ", highlight=i,
                                   font_scale=fs), width="content")
    st.latex(rf"\mathrm{{MultiHead}}_{{{i}}} = [z^1_{{{i}}}; \dots; z^{{{trace.n_heads}}}_{{{i}}}]\,W^O = "
             rf"{_vec(trace.attention_out[i])}")
elif stage == 9:
    where = "after the sum (post-norm, the paper)" if trace.norm == "post" else "before the sublayer (pre-norm)"
    st.markdown(f"The residual connection adds the sublayer's input back, and LayerNorm — {where} — rescales "
                "each token's vector to mean 0 and variance 1 (then a learned gain and shift b).")
    st.altair_chart(charts.vectors(trace.add_norm1, src, title="LayerNorm(x + MultiHead(x))", highlight=i,
                                   font_scale=fs), width="content")
    summed = trace.embedded[i] + trace.attention_out[i]
    st.latex(rf"x_{{{i}}} + \mathrm{{MultiHead}}_{{{i}}}:\ \mu = {_num(summed.mean())},\ \sigma = {_num(summed.std())}"
             rf"\ \rightarrow\ {_vec(trace.add_norm1[i])}")
elif stage == 10:
    active = int((trace.ffn_hidden[i] > 0).sum())
    st.markdown(f"The same two-layer network is applied to every position separately: widen to d_ff = "
                f"{trace.d_ff}, ReLU, and back. For the highlighted token {active} of {trace.d_ff} hidden units "
                "are active.")
    st.altair_chart(charts.vectors(trace.layer_out, src, title="layer 0 output", highlight=i, font_scale=fs), width="content")
    st.latex(rf"\mathrm{{FFN}}(x) = \max(0, xW_1 + b_1)W_2 + b_2 = {_vec(trace.ffn_out[i])}")
elif stage == 11:
    st.markdown("After every encoder layer, each source token is a vector that has mixed in what it attended to: "
                "the encoder output (the memory) that every decoder layer will read.")
    st.altair_chart(charts.vectors(trace.memory, src, title="encoder output (memory)", highlight=i, font_scale=fs), width="content")
    st.latex(rf"\mathrm{{memory}}_{{{i}}} = {_vec(trace.memory[i])}")
elif stage == 12:
    dec = trace.decoder_head
    st.markdown("The decoder reads `<bos>` and the translation so far. Its self-attention is masked: step t may "
                "look only at steps 0…t, never at words not yet produced — the weights above the diagonal are exactly 0.")
    st.altair_chart(_weights(dec.weights, tgt, tgt, title=f"decoder layer 0, head {h} (masked)",
                                          font_scale=fs), width="content")
    st.latex(rf"a_{{{t}j}} = 0 \ \text{{for}}\ j > {t},\qquad \textstyle\sum_{{j \le {t}}} a_{{{t}j}} = "
             rf"{_num(dec.weights[t, : t + 1].sum())}")
elif stage == 13:
    j = int(np.argmax(trace.cross_weights[t]))
    st.markdown("Cross-attention: queries come from the decoder, keys and values from the encoder output. Each "
                "output step looks back at the source words it translates.")
    st.altair_chart(_weights(trace.cross_weights, tgt, src, title=f"cross-attention, last layer, head {h}",
                                          font_scale=fs), width="content")
    st.latex(rf"\text{{step {t} (after }}\text{{{_tex(tgt[t])}) attends most to {_tex(src[j])}}}: a = {_num(trace.cross_weights[t, j])}")
elif stage in (14, 15):
    candidates = trace.top_candidates(t, k=5)
    st.markdown("A linear layer and a softmax turn the decoder's last vector into a probability for every "
                "Spanish token." if stage == 14 else "Greedy decoding takes the most likely token at every step.")
    st.altair_chart(charts.candidates_bar(candidates, title=f"after {tgt[t]} → predicts", font_scale=fs), width="content")
    best, p = candidates[0]
    st.latex(rf"\hat y_{{{t}}} = \arg\max_w P(w \mid \text{{{_tex(tgt[t])}}}, \dots) = \text{{{_tex(best)}}}\ (p = {_num(p)})")
else:
    st.markdown("The chosen token is appended to the decoder's input and the decoder runs again, until it "
                "produces `<eos>`.")
    st.dataframe({"step": list(range(T)), "after": list(tgt), "predicts": list(trace.generated_tokens)},
                 hide_index=True)
    ui.show_user_text(trace.output_text, label="Translation")
st.page_link(STAGES[stage][1], label="Go deeper on this topic", icon=":material/arrow_forward:")
