"""What a sentence encoder makes of sentences (MiniLM's page, and Explore for every encoder that gives
sentence vectors): the embedding of one sentence as a chart, and the cosine similarity of two.

The embedding is the cached explanation's prediction; the similarity one call of
``pretrained_resources.similarity`` (gated, cached). Widget keys start with a ``prefix`` (``mini`` on
MiniLM's page).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import pretrained_resources
from app.charts import pretrained as charts
from app.services import catalog
from app.ui import widgets
from core import Explanation

MAX_CHARS = 300
PAIR = ("A man is playing a guitar.", "Someone plays an instrument.")


def embedding(exp: Explanation, fs: float) -> None:
    """The sentence embedding of ``exp`` (a sentence encoder's explanation) as a chart, and how to read it."""
    vector = exp.prediction.vector
    widgets.chart(charts.embedding_chart(vector, title=f"Sentence embedding: {vector.size} numbers", font_scale=fs))
    pooling = "scaled to length 1 " if np.isclose(np.linalg.norm(vector), 1.0, atol=1e-4) else ""
    st.caption(f"The model's pooled last layer, {pooling}(length now {np.linalg.norm(vector):.4f}). No single number "
               "means anything by itself; the direction of the whole vector does.")


def similarity(entry: catalog.Entry, *, prefix: str = "mini") -> float | None:
    """Two sentences (keys ``<prefix>_a``, ``<prefix>_b``, the paraphrase pair by default) and the cosine of
    their embeddings by the encoder ``entry``; returns it (None until both are typed, or on failure)."""
    for key, default in zip(("a", "b"), PAIR):
        st.session_state.setdefault(f"{prefix}_{key}", default)
    a, b = st.columns(2)
    with a:
        first = widgets.read_at_most(st.text_input("First sentence", key=f"{prefix}_a"), MAX_CHARS)
    with b:
        second = widgets.read_at_most(st.text_input("Second sentence", key=f"{prefix}_b"), MAX_CHARS)
    if not (first.strip() and second.strip()):
        st.info("Type two sentences to compare them.")
        return None
    value = widgets.attempt("compare the sentences", pretrained_resources.similarity, entry, first, second)
    if value is not None:
        st.metric("Cosine similarity", f"{value:.3f}")
        st.caption("The cosine of the angle between the two embeddings: 1 = same direction (same meaning), "
                   "around 0 = unrelated. For a trained sentence encoder, paraphrases typically score above 0.5.")
    return value
