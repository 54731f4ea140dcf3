"""Explore attention: a sentence in, the prediction out, and every head's attention.

The model runs once per (checkpoint, text, options) through ``resources.explain_entry``;
the kind, layer, head and step controls only slice that cached explanation.

Layout: the chosen head's map is the first chart and lands above the fold. In normal mode the
input, the prediction and the controls fill a left column and the head view the right one; in
projector mode (larger type) they stack. The chosen view, when it is not the head view, follows
at full width, then the tokens, the model's description and vocabulary, the experiments.
The head view is drawn before the prediction, tokens and other views, so its chart is the first
one the browser receives.
"""

from __future__ import annotations

import streamlit as st

from app import resources, ui
from app.views.explore import experiments, views
from app.views.explore import inputs as w

ui.restore_from_url(w.URL_PARSERS)
st.title("Explore attention")
st.caption("Type a sentence and see how the model splits it into tokens, what it predicts, and where every "
           "attention head looks. Rows are the tokens doing the attending, columns the tokens attended to.")

loaded = ui.current_checkpoint()
if loaded is None:
    st.info("Pick a checkpoint in the sidebar, or train one on the Train page, to see its attention.")
    st.stop()
entry, ckpt = loaded
fs = ui.font_scale()
with st.container(key="explore_layout"):  # projector mode stacks the two when the chart would not fit (ui.py)
    input_side, chart_side = st.columns([2, 3], gap="medium")

with input_side:
    text = w.text_input(entry)
    options = w.base_options(ckpt.config.architecture, st.session_state.get("view"))
    if not text.strip():
        st.info("Type some text… (or pick an example above) to see what the model does with it.")
        w.header(entry, ckpt.config)
        w.share(text)
        st.stop()
    exp = ui.attempt("run the model", resources.explain_entry, entry, text, **options)
    if exp is None:
        st.stop()
    prediction_box = st.container()  # filled after the head view: the chart goes out first
    kind, layer, head, view = views.attention_controls(exp)
with chart_side:
    views.head_view(exp, kind, layer, head, fs)
with prediction_box:
    w.prediction(exp, fs)

if view == "model":
    views.model_view(exp, kind, layer, head, fs)
elif view == "lines":
    views.lines_view(exp, kind, layer, head, fs)
elif view == "summary":
    views.summary_view(exp, kind, layer, fs)
elif view == "generation":
    views.generation_view(exp, layer, head, fs)

st.subheader("Tokens and model")
w.tokens(exp)
w.header(entry, ckpt.config)
w.vocabulary(ckpt)
experiments.interventions(entry, exp, options, kind, layer, head, fs)
experiments.compare(entry, exp, options, kind, layer, head, fs)
w.share(text)
