"""Explore attention: a sentence in, the prediction out, and every head's attention.

The model runs once per (checkpoint, text, options) through ``resources.explain_entry``;
the kind, layer, head and step controls only slice that cached explanation.
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
w.header(entry, ckpt.config)

text = w.text_input(entry)
options = w.base_options(ckpt.config.architecture, st.session_state.get("view"))
if not text.strip():
    st.info("Type some text… (or pick an example above) to see what the model does with it.")
    w.share(text)
    st.stop()
exp = ui.attempt("run the model", resources.explain_entry, entry, text, **options)
if exp is None:
    st.stop()

fs = ui.font_scale()
tokens_column, prediction_column = st.columns([3, 2], gap="large")
with tokens_column:
    st.subheader("Tokens")
    w.tokens(exp)
    w.vocabulary(ckpt)
with prediction_column:
    st.subheader("Prediction")
    w.prediction(exp, fs)

st.subheader("Attention")
kind, layer, head, view = views.attention_controls(exp)
if view == "model":
    views.model_view(exp, kind, layer, head, fs)
elif view == "head":
    views.head_view(exp, kind, layer, head, fs)
elif view == "lines":
    views.lines_view(exp, kind, layer, head, fs)
elif view == "summary":
    views.summary_view(exp, kind, layer, fs)
else:
    views.generation_view(exp, layer, head, fs)

experiments.interventions(entry, exp, options, kind, layer, head, fs)
experiments.compare(entry, exp, options, kind, layer, head, fs)
w.share(text)
