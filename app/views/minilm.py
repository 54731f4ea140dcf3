"""MiniLM (all-MiniLM-L6-v2), a real BERT sentence encoder: the sentence embedding of a typed
sentence, the cosine similarity of two sentences, and the head finder (which heads link "it" to
"animal"?). Always this model, whatever the sidebar shows; Explore has every map.
"""

from __future__ import annotations

import streamlit as st

from app.ui import widgets
from app import pretrained_resources
from app.views.parts.pretrained import common, sentences
from app.views.parts.pretrained.heads import head_finder
from core import lessons

COREFERENCE = "The animal didn't cross the street because it was too tired."
MAX_CHARS = sentences.MAX_CHARS

widgets.restore_from_url({"mini_text": widgets.clipped_text(MAX_CHARS), "mini_a": widgets.clipped_text(MAX_CHARS),
                          "mini_b": widgets.clipped_text(MAX_CHARS)},
                         {"mini_text": COREFERENCE, "mini_a": sentences.PAIR[0], "mini_b": sentences.PAIR[1]})
entry, target = common.page_top("MiniLM: what a sentence means", common.MINILM, (
    "**all-MiniLM-L6-v2** is a small real BERT encoder (6 layers × 12 heads, 384 numbers wide) trained by "
    "sentence-transformers on a billion sentence pairs. It reads a whole sentence at once — every token attends "
    "to every other, in both directions — and averages its last layer into one **sentence embedding**: "
    "sentences that mean similar things get vectors pointing the same way."))
fs = widgets.font_scale()

# ----------------------------------------------------------------------------- the embedding
text, exp, _, chart = common.first_section(
    "1 · A sentence becomes one vector", target, label="Sentence", key="mini_text", max_chars=MAX_CHARS,
    hint="Type a sentence to see its embedding and its heads.", tokens=lambda e: e.source_tokens,
    tokens_note="WordPiece tokens (lower-cased; ## marks the rest of a split word):", wide=True)
with chart:
    sentences.embedding(exp, fs)

# ----------------------------------------------------------------------------- similarity
st.header("2 · How close are two sentences?")
sentences.similarity(target, prefix="mini")

# ----------------------------------------------------------------------------- head finder
st.header("3 · Head finder: which heads link a word to another?")
st.markdown(
    "Pick a word and every one of the 72 heads is ranked by how strongly that word attends to a single other "
    "word. The top of the ranking is often a *position* head (a word looking at its neighbour) rather than a "
    "head that links meanings; the sentence below says where the *it → animal* heads of the classic example "
    "actually rank.")
head_finder(target, exp, fs, prefix="mini", name="MiniLM")
if "it" in exp.source_tokens[1:-1] and "animal" in exp.source_tokens:
    ranked = widgets.attempt("rank the heads", pretrained_resources.ranked_heads, target, exp.text,
                              exp.source_tokens.index("it"))
    if ranked:
        report = lessons.links_from_ranking(ranked, exp.source_tokens, "it", "animal")
        best = ", ".join(f"{link.name} (#{link.rank}, {link.weight:.2f})" for link in report.links[:3]) or "none"
        first = report.top[0]
        st.info(f"Measured on this sentence: the head ranked #1 from “it” is layer {first[1] + 1} head "
                f"{first[2] + 1} → “{first[3]}” ({first[4]:.2f}). {len(report.links)} of {report.n_heads} heads "
                f"have “animal” as their strongest link from “it”; the strongest of them: {best}.")
st.caption("Attention weights are not an explanation: a head that looks at “animal” shows where information "
           "can flow in one layer, not that the model's output depends on it or that it “resolved” the pronoun.")
common.explore_link(entry, text, key="mini_explore")
widgets.write_to_url(["mini_text", "mini_a", "mini_b"])
