"""Explore attention: a sentence in, the prediction out, and every head's attention.

The model runs once per (checkpoint, text, options) through ``resources.explain_entry``; the text
and decoding options rerun everything under the title (one fragment: not the sidebar), everything else
reruns only the fragment it touches (``panels``): the kind, layer, head and view controls rerun the head view,
the chosen view and the experiment panels from the cached explanation, never the model.

Layout: the chosen head's map is the first chart and lands above the fold. The input, the prediction and the
controls fill a left column and the head view the right one; in presentation mode (larger type) the page's
introduction is left out and the examples fold into a popover, so the input, the model's output and the whole map (drawn
smaller where it would not fit) share the first screen; on a narrower screen the two columns stack. The chosen view, when it is not the head view, follows
at full width, then the sections of the model's kind (``kinds``: an encoder's sentence similarity and
head finder, a decoder's sampled continuation step by step), the model's description, then three expanders
whose content is built only while they are open: the tokens with the model's vocabulary, the interventions and the
comparison. The input, then the head view, then the prediction go out first; the rest of the page after them.
The first screen needs one chart library in the browser (Plotly): no Vega-Lite, table or code highlighter
scripts load before something below is opened.
"""

from __future__ import annotations

import streamlit as st

from app import resources, routes
from app.ui import presentation, widgets
from app.views.parts.explore import experiments, kinds, panels
from app.views.parts.explore import inputs as w

TOKENS_OPEN = "tokens_open"
widgets.restore_from_url(w.URL_PARSERS)
st.title("Explore attention")
if not presentation.enabled():  # presentation mode: the input, the output and the map on the first screen
    st.caption("Type a sentence and see how the model splits it into tokens, what it predicts, and where every "
               "attention head looks. Rows are the tokens doing the attending, columns the tokens attended to.")


@st.fragment(key="explore_body")
def explore_body() -> None:
    """Everything under the title: the model's input, prediction, head view, views and panels. A fragment:
    a text edit or a decoding option reruns it alone, not the sidebar and the page's frame."""
    loaded = widgets.current_checkpoint(pretrained=True)
    if loaded is None:
        st.info("Pick a checkpoint in the sidebar, or train one on the Train page, to see its attention.")
        return
    entry, ckpt = loaded
    with st.container(key="explore_layout"):  # projector mode stacks the two when the chart would not fit
        input_side, chart_side = st.columns([2, 3], gap="medium")
    view_box = st.container()  # the chosen view, below the two columns

    with input_side:
        text = w.text_input(entry)
        options = w.base_options(ckpt.config.architecture)
        if not text.strip():
            st.info("Type some text… (or pick an example above) to see what the model does with it.")
            w.header(entry, ckpt.config)
            w.share(text)
            return
        exp = widgets.attempt("run the model", resources.explain_entry, entry, text, **options)
        if exp is None:
            return
        prediction_box = st.container()  # filled after the head view: the chart goes out first
        w.notes(exp)  # how the input was read, under the answer: the prediction stays on the first screen
        panels.head_panel(entry, exp, options, chart_side)
    with prediction_box:
        w.prediction(exp, widgets.font_scale())
    with view_box:
        panels.view_panel(entry, exp, options)
    kinds.sections(entry, exp)

    w.header(entry, ckpt.config)
    # built only while open: a text edit redraws what is on screen
    if tokens_box := presentation.opened("Tokens: what the model read, and the words it knows", TOKENS_OPEN,
                                         icon=":material/token:"):
        with tokens_box:
            w.tokens(exp)
            w.vocabulary(ckpt)
    experiments.interventions(entry, exp, options)
    experiments.compare(entry, exp, options)
    st.page_link(routes.RESEARCH, label="Read this model as a researcher: logit lens, head sweep, head types, diff",
                 icon=":material/biotech:", query_params={"research_text": text})


explore_body()
