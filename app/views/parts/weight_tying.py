"""The Architecture page's weight-tying section (the paper's section 3.4): whether the sidebar's model uses its
embedding matrix as its output layer too, measured on one pass (:func:`core.lessons.weight_tying`), and, where it
does not, the same measured on an installed model that does (SmolLM2)."""

from __future__ import annotations

import streamlit as st

from app import resources
from app.services import catalog
from app.ui import widgets
from core import lessons

PROBE = {True: "The capital of France is", False: "i have cats"}  # a decoder-only model's input; a translator's


def _tied_example(current: catalog.Entry) -> catalog.Entry | None:
    """An installed pretrained model that ties its weights (SmolLM2), when it is not ``current``."""
    listed = resources.entries()[0]
    return next((e for e in listed if e.pretrained and e.name.startswith("SmolLM2") and e.key != current.key), None)


def _measured(e: catalog.Entry, got: lessons.WeightTying) -> None:
    share = got.saved / got.total
    if got.tied:
        st.markdown(f"**{e.name} ties them**: {widgets.code(got.names[0])} and {widgets.code(got.names[1])} are one "
                    f"{got.vocab:,} × {got.width} matrix, counted once: {got.saved:,} parameters, "
                    f"{share:.1%} of its {got.total:,}. Measured on {got.tokens} positions: "
                    f"max |logits − h·Eᵀ| = {got.max_error:.1e} (the largest logit is {got.largest_logit:.1f}), so "
                    "each logit is the final stream's dot product with that token's own embedding row.")
    else:
        st.markdown(f"**{e.name} does not tie them**: its output layer is a matrix of its own ({got.vocab:,} × "
                    f"{got.width}); tying would save {got.saved:,} parameters, {share:.1%} of its {got.total:,}. "
                    "The Train page's advanced setting *Tie the decoder's input and output embeddings* trains one that does.")


def section(current: catalog.Entry | None, architecture: str | None) -> None:
    """The section's text and the measured numbers of the sidebar's model ``current`` (of ``architecture``:
    encoder, decoder or encoder-decoder), and of a tied one where it does not tie."""
    st.markdown("The paper (§3.4) **shares one weight matrix** between the two embedding layers and the linear "
                "transformation before the softmax, and multiplies the embedding by √d_model on the way in. Then the "
                "logit of token w is the final stream's dot product with w's own embedding row: a word is predicted "
                "where the stream points towards that word's embedding.")
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
        st.caption(f"{current.name} is an encoder: it has no output layer over the vocabulary to tie.")
    if not any(shown) and (tied := _tied_example(current or resources.entry(catalog.DEFAULT_KEY))) is not None:
        got = widgets.attempt("measure the weight tying", resources.model_lesson, lessons.weight_tying, tied,
                              PROBE[True])
        if got is not None:
            _measured(tied, got)
