"""Masks: the decoder's look-ahead mask (and why it is needed), padding masks for a batch of
sentences of different lengths, their combination, and the exact zeros they leave in the softmax.

Each section is built only while it is open (``presentation.section``: the first is), and its controls rerun
fragments: the look-ahead length and the scores' seed rerun section 1's one figure of the mask beside the
masked softmax (not its fixed prose and table), the sentences and the tokenizer sections 2 and 3. The tables of numbers
under the charts are built only while their expanders are open (``presentation.opened``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app import resources
from app.ui import export, glossary, presentation, tables, widgets
from app.charts import grids
from app.charts.base import label_tokens
from core import lessons, subsequent_mask

TOKENIZERS = {"whitespace": "Split on spaces", "checkpoint": "The loaded checkpoint's tokenizer"}
DEFAULT_SENTENCES = "I have cats\nthe big dog sees a small cat\nhello"


widgets.restore_from_url({"mask_len": widgets.bounded(1, 24), "mask_sentences": widgets.clipped_text(2000),
                          "mask_tok": widgets.one_of(TOKENIZERS), "mask_seed": widgets.bounded(0, 9999)},
                         {"mask_len": 6, "mask_sentences": DEFAULT_SENTENCES, "mask_tok": "whitespace", "mask_seed": 0})
fs = widgets.font_scale()

with presentation.opening("Masks", (
    "A mask tells attention which keys a query may look at. Here, as everywhere in Attnscope, "
    "**True (✓, blue) means \"may attend\"** and False (✗, orange) means \"masked\". Rows are queries (the token "
    "attending), columns are keys (the token attended to). Masked scores are replaced by −∞ before the softmax, "
    "so their weights come out as exact zeros and the remaining weights still sum to 1.")):
    st.latex(r"a_{ij} = \frac{m_{ij}\, e^{s_{ij}}}{\sum_{l} m_{il}\, e^{s_{il}}} "
             r"\quad\Longleftrightarrow\quad s_{ij} \leftarrow -\infty \text{ where } m_{ij} = \text{False}")

# ----------------------------------------------------------------------------- look-ahead
def look_ahead_section() -> None:
    """Section 1: why the decoder needs a look-ahead mask and what goes wrong without it (both fixed, folded in
    presentation mode), then the mask itself (:func:`look_ahead_demo`)."""
    with presentation.folded("Why a look-ahead mask"):
        st.markdown(
            "During training the decoder reads the whole target sentence at once (shifted right, starting with "
            "<bos>) and at every position predicts the **next** token. Without a mask, position i could simply look at "
            "position i + 1 — which *is* the answer — and copy it: the training loss would drop to almost nothing while "
            "the model learns nothing it can use when generating, where the future does not exist yet. The look-ahead "
            "mask lets position i see positions 0 … i only, exactly what it will have at generation time.")
        st.latex(r"m_{ij} = \begin{cases} \text{True} & j \le i \\ \text{False} & j > i \end{cases}"
                 r"\qquad\text{(lower triangle, diagonal included)}")
        glossary.show_code(subsequent_mask, "The code: core.subsequent_mask")
        st.caption("The Annotated Transformer fills masked scores with −1e9 (`masked_fill(mask == 0, -1e9)`) instead of "
                   "−∞. With at least one visible key, −1e9, the dtype's smallest number and −∞ all give the same "
                   "weights (e^(−1e9) is 0 in floating point). A row with no visible key gives NaN with −∞ and a "
                   "uniform row with −1e9 (every score equal); Attnscope zeroes such rows explicitly after the softmax.")
        st.subheader("What goes wrong without it")
        example = ["<bos>", "Yo", "tengo", "gatos"]  # the decoder writes "I have cats" in Spanish
        targets = ["Yo", "tengo", "gatos", "<eos>"]
        st.dataframe(pd.DataFrame({
            "position": range(4), "decoder input": example, "must predict": targets,
            "sees with the mask": [" ".join(example[: i + 1]) for i in range(4)],
            "sees without the mask": [" ".join(example) for _ in range(4)],
            "answer visible without the mask?": ["yes — it is input " + str(i + 1) if i < 3
                                                 else "no (<eos> is not an input)" for i in range(4)],
        }), hide_index=True, width="content")
    look_ahead_demo()


@st.fragment(key="masks_look_ahead")
def look_ahead_demo() -> None:
    """The look-ahead mask of the chosen length beside random scores through the softmax without it and with it,
    in one figure (the length and the seed rerun this alone)."""
    if not presentation.enabled():  # presentation mode: the figure on the first screen, under the section's title
        st.subheader("The mask and what it does to the softmax")
    length_col, seed_col = st.columns([2, 1])
    with length_col:
        st.slider("Sequence length", 1, 24, key="mask_len")
    with seed_col:
        st.number_input("Random seed for the scores", 0, 9999, step=1, key="mask_seed")
    n = st.session_state["mask_len"]
    look_ahead = lessons.look_ahead_mask(n)  # (n, n)
    positions = [str(i) for i in range(n)]
    demo = lessons.masked_softmax_demo(look_ahead, int(st.session_state["mask_seed"]))  # (n, n) each
    figure = grids.mask_beside(look_ahead, (demo.unmasked, demo.masked),
                               ("Without the mask: weight leaks to the future", "With the look-ahead mask"),
                               mask_title=f"Look-ahead mask, {n} × {n}", x_title="key position",
                               y_title="query position", rows=positions, cols=positions, annotate=n <= 10,
                               font_scale=fs)
    widgets.plot(figure, name="masked-softmax", key="mask_softmax_maps")
    n_masked = int((~look_ahead).sum())
    n_zero = int((demo.masked[~look_ahead] == 0.0).sum())
    future = float(demo.unmasked[~look_ahead].sum() / max(n, 1))
    st.success(f"{n_zero} of the {n_masked} masked cells (✗) are exactly 0.0, and every row still sums to 1. "
               f"Without the mask, on average {future:.0%} of each row's weight would go to future positions.")
    _numbers(look_ahead, demo, positions)
    export.export_chart(figure, "masked-softmax", "mask_softmax_chart")
    export.export_data({"scores": demo.scores, "unmasked": demo.unmasked, "masked": demo.masked,
                        "mask": look_ahead}, pd.DataFrame(demo.masked, columns=positions), "masked-softmax",
                       "mask_softmax_data")
    widgets.write_to_url(["mask_len", "mask_seed"])


def _numbers(look_ahead: np.ndarray, demo: lessons.MaskedSoftmax, positions: list[str]) -> None:
    """The mask, the random scores and the masked weights as tables, each built only while its expander is open."""
    numbers = presentation.opened("The mask as numbers (1 = may attend)", "mask_numbers_open")
    if numbers:
        with numbers:
            st.dataframe(pd.DataFrame(look_ahead.astype(int), index=positions, columns=positions), width="content")
    numbers = presentation.opened("Scores and masked weights as numbers", "mask_softmax_numbers_open")
    if numbers:
        with numbers:
            st.caption("Random scores")
            st.dataframe(pd.DataFrame(demo.scores, index=positions, columns=positions), width="content")
            st.caption("Weights with the mask")
            st.dataframe(pd.DataFrame(demo.masked, index=positions, columns=positions), width="content")


# ----------------------------------------------------------------------------- padding
@st.fragment(key="masks_batch")
def batch_sections() -> None:
    """Sections 2 and 3: a batch of the user's sentences, its padding mask and the decoder's combined masks."""
    presentation.section("2 · Padding masks for a batch", "masks-padding", batch_section)
    presentation.section("3 · In the decoder: look-ahead AND padding", "masks-combined", combined_section)


def batch_section() -> None:
    """Section 2: the sentences, their padded batch and its padding mask."""
    st.markdown(
        "Sentences in a batch have different lengths, but a tensor needs one length: the short ones are filled up "
        "with <pad> tokens. Padding is not text, so no query may attend to it: the padding mask marks each "
        "sentence's real tokens. It is the same for every query, so one row per sentence is enough.")
    st.latex(r"m^{\text{pad}}_{b,j} = \big[\,\text{id}_{b,j} \ne \text{id}_{\text{<pad>}}\,\big]")
    text_col, tok_col = st.columns([2, 1])
    with text_col:
        st.text_area("Sentences, one per line (at most 8 sentences, 24 tokens each)", key="mask_sentences",
                     height=130, max_chars=2000)
    with tok_col:
        st.radio("Tokenize with", list(TOKENIZERS), key="mask_tok", format_func=TOKENIZERS.get)
    widgets.write_to_url(["mask_tok", "mask_sentences"])
    batch = _batch()
    if batch is None:
        return
    ids, tokens, masks, sentence_names = batch
    width = ids.shape[1]
    st.caption("The padded batch (token strings and ids):")
    token_table = pd.DataFrame(tokens, index=sentence_names, columns=[str(j) for j in range(width)])
    st.dataframe(token_table, width="content")
    id_box = presentation.opened("Token ids (0 = <pad>)", "mask_ids_open")
    if id_box:
        with id_box:
            st.dataframe(pd.DataFrame(ids, index=sentence_names, columns=[str(j) for j in range(width)]),
                         width="content")
    pad_chart = grids.mask_heatmap(masks.padding, sentence_names, [str(j) for j in range(width)],
                                   title="Padding mask: which keys are real tokens", x_title="key position",
                                   y_title="sentence", font_scale=fs)
    widgets.plot(pad_chart, name="padding-mask", key="mask_padding_map")
    export.export_chart(pad_chart, "padding-mask", "mask_pad_chart")
    st.dataframe(pd.DataFrame(masks.padding.astype(int), index=sentence_names,
                              columns=[str(j) for j in range(width)]), width="content")
    export.export_data({"ids": ids, "padding": masks.padding, "subsequent": masks.subsequent,
                        "combined": masks.combined}, token_table.reset_index(names="sentence"), "batch-masks",
                       "mask_batch_data")


def _batch() -> tuple[np.ndarray, list[list[str]], Any, list[str]] | None:
    """The session's sentences as a padded batch, split by the chosen tokenizer: (ids (B, T), tokens, masks,
    sentence names); None, with a message, when there is none or splitting fails."""
    sentences = tables.split_sentences(st.session_state["mask_sentences"])
    if not sentences:
        st.info("Type at least one sentence, one per line.")
        return None
    batch = _split(sentences)
    if batch is None:
        return None
    return batch.ids, batch.tokens, lessons.batch_masks(batch.ids), [f"sentence {b + 1}" for b in range(len(sentences))]


def _split(sentences: list[str]):
    """The sentences split by the chosen tokenizer (None, with a message, when that fails)."""
    if st.session_state["mask_tok"] == "checkpoint":
        loaded = widgets.current_checkpoint()
        ckpt = loaded[1] if loaded else None
        if ckpt is None:
            st.warning("No checkpoint is loaded: splitting on spaces instead.")
        else:
            tokenizer = ckpt.source_tokenizer if ckpt.config.has_encoder else ckpt.target_tokenizer
            st.caption(f"The loaded checkpoint's tokenizer: {tokenizer.kind}-level, {tokenizer.vocab_size} tokens.")
            return widgets.attempt("tokenize the sentences", resources.model_lesson, lessons.checkpoint_batch, ckpt,
                                   sentences)
    return widgets.attempt("tokenize the sentences", lessons.whitespace_batch, sentences)


# ----------------------------------------------------------------------------- combined
def combined_section() -> None:
    """Section 3: look-ahead AND padding, one (query × key) mask per sentence of section 2's batch."""
    st.markdown(
        "The decoder's self-attention needs both rules at once: a query may attend to a key only if the key is "
        "not in the future **and** is a real token. The two masks broadcast to one (query × key) mask per sentence.")
    st.latex(r"m_{b,ij} = m^{\text{look-ahead}}_{ij} \;\wedge\; m^{\text{pad}}_{b,j}")
    batch = _batch()
    if batch is None:
        return
    _, tokens, masks, sentence_names = batch
    grid = st.columns(2)
    for b, name in enumerate(sentence_names):
        labels = label_tokens(tokens[b])
        with grid[b % 2]:
            widgets.plot(grids.mask_heatmap(masks.combined[b], labels, labels, title=f"{name}: combined mask",
                                            font_scale=fs, max_width=grids.HALF),
                         name=f"combined-mask-{b + 1}", key=f"mask_combined_{b}")
    st.markdown("**What about the rows of `<pad>` queries?** They still have ✓ cells (a pad query may see the real "
                "tokens before it), so they still compute a row of weights and an output. Nothing uses it: the target "
                "at a pad position is pad, and the loss ignores those positions, so pad rows never affect training.")
    numbers = presentation.opened("The combined masks as numbers (1 = may attend)", "mask_combined_numbers_open")
    if numbers:
        with numbers:
            for b, name in enumerate(sentence_names):
                st.caption(name)
                labels = label_tokens(tokens[b])
                st.dataframe(pd.DataFrame(masks.combined[b].astype(int), index=labels, columns=labels),
                             width="content")


presentation.section("1 · The look-ahead (subsequent) mask", "masks-look-ahead", look_ahead_section, first=True)
batch_sections()
