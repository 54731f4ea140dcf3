"""SmolLM2-135M-Instruct, a real Llama-style language model: the next-token candidates for a prompt,
then a greedy or sampled continuation with every step's attention. Always this model, whatever the
sidebar shows; Explore has every map.
"""

from __future__ import annotations

import streamlit as st

from app.ui import widgets
from app.charts import attention as attention_charts
from app.views.parts.pretrained import common, writing

PROMPT = "The capital of France is"
MAX_CHARS = 300

widgets.restore_from_url({"smol_prompt": widgets.clipped_text(MAX_CHARS)}, {"smol_prompt": PROMPT})
entry, target = common.page_top("SmolLM2: a small language model", common.SMOLLM, (
    "**SmolLM2-135M-Instruct** is a small real language model by Hugging Face, built like Meta's Llama: "
    "30 decoder layers, each with 9 query heads that share 3 key/value heads, and rotary positions. It reads "
    "left to right — every token attends only to itself and the tokens before it — and predicts the next "
    "token. Here it runs from a 4-bit file, on this computer, with no internet."))
fs = widgets.font_scale()

# ----------------------------------------------------------------------------- next token
prompt, exp, controls, chart = common.first_section(
    "1 · What comes next?", target, label="Prompt", key="smol_prompt", max_chars=MAX_CHARS,
    hint="Type a prompt to see what the model expects next.",
    tokens=lambda e: [attention_charts.visible(t) for t in e.target_tokens],
    tokens_note="tokens (␣ marks a space that belongs to the token):", top_n=10)
pred = exp.prediction
controls.text(f"Most likely next token: “{attention_charts.visible(pred.labels[0])}” "
              f"({float(pred.probabilities[0]):.1%})")
with chart:
    widgets.candidate_bars(pred.labels, pred.probabilities, title="Next-token candidates (top 10)",
                           x_title="next token", font_scale=fs)

# ----------------------------------------------------------------------------- continuation
st.header("2 · Let it write, one step at a time")
st.markdown(
    "Each step the model reads one more token and writes the next. **Greedy** always takes the most likely "
    "token; **sampled** draws one at random from the model's probabilities, reshaped by the temperature, top-k "
    "and top-p (the seed makes it repeatable). "
    "For every step you see where the token being read looks: its attention row over all earlier tokens.")
writing.write(target, prompt, len(exp.target_tokens), fs, prefix="smol",
              hint="Press Generate to let the model continue the prompt (a few seconds per token on a laptop).")
common.explore_link(entry, prompt, key="smol_explore")
widgets.write_to_url(["smol_prompt"])
