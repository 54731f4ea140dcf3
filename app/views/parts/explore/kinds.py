"""The Explore page's sections that depend on the model's kind, drawn only for that kind, for
every model the picker offers (shipped, installed, ``--models DIR`` or uploaded):

* an encoder that gives sentence vectors: its embedding and the similarity of two sentences; a
  pretrained encoder: the head finder (MiniLM's page shows the same parts for MiniLM);
* a decoder: the continuation, greedy or sampled (temperature, top-k, top-p, seed), step by step
  (SmolLM2's page shows the same part for SmolLM2);
* an encoder-decoder: its output step by step, each head's cross-attention row over the source, behind a
  toggle (the translation, every map and the generation view are drawn above).

Each section is a fragment: its own controls rerun it alone, never the head view or the model run above
it. The parts live in ``app/views/parts/pretrained/`` and take the catalog entry.
"""

from __future__ import annotations

import streamlit as st

from app import resources
from app.services import catalog, costs
from app.ui import widgets
from app.views.parts.explore import inputs
from app.views.parts.pretrained import sentences, writing
from app.views.parts.pretrained.steps import translation_steps
from app.views.parts.pretrained.heads import head_finder
from core import Explanation

SENTENCES, HEADS, WRITING, TRANSLATION = ("explore_sentences", "explore_head_finder", "explore_writing",
                                          "explore_translation")


def sections(entry: catalog.Entry, exp: Explanation) -> None:
    """Draw the sections of ``exp``'s kind (the explanation the page drew)."""
    if exp.architecture == "encoder":
        if exp.prediction.kind == "embedding":
            sentence_section(entry, exp)
        if entry.pretrained:
            head_finder_section(entry, exp)
    elif exp.architecture == "decoder":
        writing_section(entry, exp)
    else:
        translation_section(exp)


@st.fragment(key=SENTENCES)
def sentence_section(entry: catalog.Entry, exp: Explanation) -> None:
    """The sentence embedding and the similarity of two sentences."""
    st.subheader("Sentence embedding and similarity")
    sentences.embedding(exp, widgets.font_scale())
    sentences.similarity(entry, prefix="explore_sim")


@st.fragment(key=HEADS)
def head_finder_section(entry: catalog.Entry, exp: Explanation) -> None:
    """Every head ranked by how strongly a chosen word attends to one other word."""
    st.subheader("Head finder: which heads link a word to another?")
    st.caption("Pick a word: every head is ranked by how strongly that word attends to a single other word "
               "(the first and last tokens left out).")
    plain = widgets.attempt("run the model", resources.explain_entry, entry, exp.text)  # what the ranking reads
    if plain is not None:
        head_finder(entry, plain, widgets.font_scale(), prefix="explore_hf", name=entry.name)


@st.fragment(key=WRITING)
def writing_section(entry: catalog.Entry, exp: Explanation) -> None:
    """The continuation of the typed text, greedy or sampled, step by step."""
    st.subheader("Let it write, one step at a time")
    st.caption("Greedy always takes the most likely token; sampled draws one from the model's probabilities, "
               "reshaped by the temperature, top-k and top-p (the seed makes it repeatable). Each step shows where "
               "the token being read looks, head by head. The head view above keeps its own run.")
    writing.write(entry, exp.text, inputs.continuation_start(exp), widgets.font_scale(), prefix="explore_gen",
                  max_tokens=min(40, costs.DECODE_TOKENS))


@st.fragment(key=TRANSLATION)
def translation_section(exp: Explanation) -> None:
    """The output (of the decoding chosen above) step by step: where each head looks in the source."""
    st.subheader("The output step by step: where each head looks in the source")
    st.caption("Each step the decoder reads the token it wrote last and writes the next; its cross-attention row "
               "says where each head looks in the source meanwhile (the generation view above shows one head).")
    if st.toggle("Show every head's row, step by step", key="explore_tr_on"):  # off: the page stays light
        translation_steps(exp, widgets.font_scale(), prefix="explore_tr")
