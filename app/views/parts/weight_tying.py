"""The Architecture page's weight-tying section (the paper's section 3.4): whether the sidebar's model uses its
embedding matrix as its output layer too, measured on one pass (:func:`core.lessons.weight_tying`), and, where it
does not, the same measured on an installed model that does (SmolLM2). Its words are the ``architecture`` messages'
``tying`` section in the session's language."""

from __future__ import annotations

import streamlit as st

from app import resources
from app.services import catalog
from app.ui import language, widgets
from core import lessons

PROBE = {True: "The capital of France is", False: "i have cats"}  # a decoder-only model's input; a translator's
TIE_SETTING = "Tie the decoder's input and output embeddings"  # the Train page's checkbox, as that page shows it


def _tied_example(current: catalog.Entry) -> catalog.Entry | None:
    """An installed pretrained model that ties its weights (SmolLM2), when it is not ``current``."""
    listed = resources.entries()[0]
    return next((e for e in listed if e.pretrained and e.name.startswith("SmolLM2") and e.key != current.key), None)


def _measured(e: catalog.Entry, got: lessons.WeightTying) -> None:
    t = language.words("architecture")
    share = got.saved / got.total
    if got.tied:
        st.markdown(t("tying.tied", name=e.name, first=widgets.code(got.names[0]), second=widgets.code(got.names[1]),
                      vocab=got.vocab, width=got.width, saved=got.saved, share=share, total=got.total,
                      tokens=got.tokens, error=got.max_error, largest=got.largest_logit))
    else:
        st.markdown(t("tying.untied", name=e.name, vocab=got.vocab, width=got.width, saved=got.saved, share=share,
                      total=got.total, setting=TIE_SETTING))


def section(current: catalog.Entry | None, architecture: str | None) -> None:
    """The section's text and the measured numbers of the sidebar's model ``current`` (of ``architecture``:
    encoder, decoder or encoder-decoder), and of a tied one where it does not tie."""
    t = language.words("architecture")
    st.markdown(t("tying.intro"))
    st.latex(r"\text{logits} = h\,E^{\top},\qquad x_{\text{in}} = \sqrt{d_{\text{model}}}\;E[w] + PE")
    shown = []
    e = current if current is not None and architecture not in (None, "encoder") else None
    if e is not None:
        got = widgets.attempt("measure the weight tying", resources.model_lesson, lessons.weight_tying, e,
                              PROBE[architecture == "decoder"])
        if got is not None:
            _measured(e, got)
            shown.append(got.tied)
    elif current is not None:
        st.caption(t("tying.encoder", name=current.name))
    if not any(shown) and (tied := _tied_example(current or resources.entry(catalog.DEFAULT_KEY))) is not None:
        got = widgets.attempt("measure the weight tying", resources.model_lesson, lessons.weight_tying, tied,
                              PROBE[True])
        if got is not None:
            _measured(tied, got)
