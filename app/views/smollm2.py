"""SmolLM2-135M-Instruct, a real Llama-style language model: the next-token candidates for a prompt,
then a greedy or sampled continuation with every step's attention. Always this model, whatever the
sidebar shows; Explore has every map.
"""

from __future__ import annotations

import streamlit as st

from app.ui import presentation, widgets
from app import pretrained_resources
from app.charts import attention as attention_charts
from app.views.parts.pretrained import common
from app.views.parts.pretrained.steps import steps_view

PROMPT = "The capital of France is"
MAX_CHARS = 300
DECODINGS = {"greedy": "Greedy (most likely)", "sample": "Sampled"}

widgets.restore_from_url({"smol_prompt": widgets.clipped_text(MAX_CHARS)}, {"smol_prompt": PROMPT})
st.title("SmolLM2: a small language model")
entry = common.installed(common.SMOLLM)
if entry is None:
    st.stop()
with presentation.folded():
    st.markdown(
        "**SmolLM2-135M-Instruct** is a small real language model by Hugging Face, built like Meta's Llama: "
        "30 decoder layers, each with 9 query heads that share 3 key/value heads, and rotary positions. It reads "
        "left to right — every token attends only to itself and the tokens before it — and predicts the next "
        "token. Here it runs from a 4-bit file, on this computer, with no internet.")
    st.caption(entry.description)
common.sidebar_note(entry)
path, fs = str(entry.path), widgets.font_scale()

# ----------------------------------------------------------------------------- next token
st.header("1 · What comes next?")
prompt = st.text_input("Prompt", key="smol_prompt", max_chars=MAX_CHARS)
if not prompt.strip():
    st.info("Type a prompt to see what the model expects next.")
    st.stop()
exp = widgets.attempt("run SmolLM2", pretrained_resources.pretrained_explanation, path, prompt, {"top_n": 10})
if exp is None:
    st.stop()
widgets.show_user_text(" · ".join(attention_charts.visible(t) for t in exp.target_tokens),
                       f"{len(exp.target_tokens)} tokens (␣ marks a space that belongs to the token):")
for note in exp.notes:
    st.warning(widgets.plain(note), icon=":material/info:")
pred = exp.prediction
st.text(f"Most likely next token: “{attention_charts.visible(pred.labels[0])}” "
        f"({float(pred.probabilities[0]):.1%})")
widgets.bars(attention_charts.probability_bars(pred.labels, pred.probabilities, title="Next-token candidates (top 10)",
                                               x_title="next token", font_scale=fs))

# ----------------------------------------------------------------------------- continuation
st.header("2 · Let it write, one step at a time")
st.markdown(
    "Each step the model reads one more token and writes the next. **Greedy** always takes the most likely "
    "token; **sampled** draws one at random from the model's probabilities (the seed makes it repeatable). "
    "For every step you see where the token being read looks: its attention row over all earlier tokens.")
with st.form("smol_form"):
    left, middle, right = st.columns(3)
    with left:
        tokens = st.slider("New tokens", 1, 20, 6, key="smol_tokens")
        decoding = st.radio("Decoding", list(DECODINGS), format_func=DECODINGS.get, key="smol_decoding",
                            horizontal=True)
    with middle:
        temperature = st.slider("Sampling temperature", 0.1, 2.0, 0.8, 0.1, key="smol_temperature",
                                help="Below 1 sharpens the probabilities, above 1 flattens them (sampling only).")
        top_k = st.slider("Sample from the top k", 1, 100, 40, key="smol_top_k")
    with right:
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="smol_seed")
    generate = st.form_submit_button("Generate", icon=":material/play_arrow:", type="primary")
if generate:
    options = {"continuation": int(tokens), "decoding": decoding}
    if decoding == "sample":
        options.update(sample_temperature=float(temperature), top_k=int(top_k), seed=int(seed))
    st.session_state["smol_run"] = (prompt, options)
run = st.session_state.get("smol_run")
if run is None or run[0] != prompt:
    st.info("Press Generate to let the model continue the prompt (a few seconds per token on a laptop).")
else:
    generation = widgets.attempt("generate with SmolLM2", pretrained_resources.pretrained_explanation, path, prompt, run[1])
    if generation is not None:
        for note in generation.notes:
            st.warning(widgets.plain(note), icon=":material/info:")
        st.caption("Continuation")
        st.code(generation.prediction.text, language=None)
        steps_view(generation, len(exp.target_tokens), fs)
common.explore_link(entry, prompt, key="smol_explore")
widgets.write_to_url(["smol_prompt"])
