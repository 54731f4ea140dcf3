"""Masks: the decoder's look-ahead mask (and why it is needed), padding masks for a batch of
sentences of different lengths, their combination, and the exact zeros they leave in the softmax.

Each section is built only while it is open (``presentation.section``: the first is), and its controls rerun
fragments: the look-ahead length and the scores' seed rerun section 1's one figure of the mask beside the
masked softmax (not its fixed prose and table), the sentences and the tokenizer sections 2 and 3. The tables of numbers
under the charts are built only while their expanders are open (``presentation.opened``). Every word shown comes
from the ``masks`` messages in the session's language (:mod:`app.ui.language`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from app import resources
from app.ui import export, glossary, language, presentation, tables, widgets
from app.charts import grids
from app.charts.base import label_tokens
from core import lessons, subsequent_mask

TOKENIZERS = {"whitespace": "padding.whitespace", "checkpoint": "padding.checkpoint"}  # choice → its label's message
DEFAULT_SENTENCES = "I have cats\nthe big dog sees a small cat\nhello"


widgets.restore_from_url({"mask_len": widgets.bounded(1, 24), "mask_sentences": widgets.clipped_text(2000),
                          "mask_tok": widgets.one_of(TOKENIZERS), "mask_seed": widgets.bounded(0, 9999)},
                         {"mask_len": 6, "mask_sentences": DEFAULT_SENTENCES, "mask_tok": "whitespace", "mask_seed": 0})
fs = widgets.font_scale()
lang = language.current()
t = language.words("masks")

with presentation.opening(t("opening.title"), t("opening.intro")):
    st.latex(r"a_{ij} = \frac{m_{ij}\, e^{s_{ij}}}{\sum_{l} m_{il}\, e^{s_{il}}} "
             r"\quad\Longleftrightarrow\quad s_{ij} \leftarrow -\infty \text{ " + t("opening.where")
             + r" } m_{ij} = \text{False}")

# ----------------------------------------------------------------------------- look-ahead
def look_ahead_section() -> None:
    """Section 1: why the decoder needs a look-ahead mask and what goes wrong without it (both fixed, folded in
    presentation mode), then the mask itself (:func:`look_ahead_demo`)."""
    with presentation.folded(t("look_ahead.folded")):
        st.markdown(t("look_ahead.why"))
        st.latex(r"m_{ij} = \begin{cases} \text{True} & j \le i \\ \text{False} & j > i \end{cases}"
                 r"\qquad\text{" + t("look_ahead.lower") + "}")
        glossary.show_code(subsequent_mask, t("look_ahead.code"))
        st.caption(t("look_ahead.fill"))
        st.subheader(t("look_ahead.wrong"))
        example = ["<bos>", "Yo", "tengo", "gatos"]  # the decoder writes "I have cats" in Spanish
        targets = ["Yo", "tengo", "gatos", "<eos>"]
        st.dataframe(pd.DataFrame({
            t("look_ahead.position"): range(4), t("look_ahead.decoder_input"): example,
            t("look_ahead.must_predict"): targets,
            t("look_ahead.sees_with"): [" ".join(example[: i + 1]) for i in range(4)],
            t("look_ahead.sees_without"): [" ".join(example) for _ in range(4)],
            t("look_ahead.visible"): [t("look_ahead.visible_yes", n=i + 1) if i < 3 else t("look_ahead.visible_no")
                                      for i in range(4)],
        }), hide_index=True, width="content")
    look_ahead_demo()


@st.fragment(key="masks_look_ahead")
def look_ahead_demo() -> None:
    """The look-ahead mask of the chosen length beside random scores through the softmax without it and with it,
    in one figure (the length and the seed rerun this alone)."""
    if not presentation.enabled():  # presentation mode: the figure on the first screen, under the section's title
        st.subheader(t("demo.subheader"))
    length_col, seed_col = st.columns([2, 1])
    with length_col:
        st.slider(t("demo.length"), 1, 24, key="mask_len")
    with seed_col:
        st.number_input(t("demo.seed"), 0, 9999, step=1, key="mask_seed")
    n = st.session_state["mask_len"]
    look_ahead = lessons.look_ahead_mask(n)  # (n, n)
    positions = [str(i) for i in range(n)]
    demo = lessons.masked_softmax_demo(look_ahead, int(st.session_state["mask_seed"]))  # (n, n) each
    figure = grids.mask_beside(look_ahead, (demo.unmasked, demo.masked),
                               (t("demo.without"), t("demo.with")), mask_title=t("demo.mask_title", n=n),
                               x_title=t("demo.key_position"), y_title=t("demo.query_position"), rows=positions,
                               cols=positions, annotate=n <= 10, font_scale=fs, value=t("demo.weight"), lang=lang)
    widgets.plot(figure, name="masked-softmax", key="mask_softmax_maps")
    n_masked = int((~look_ahead).sum())
    n_zero = int((demo.masked[~look_ahead] == 0.0).sum())
    future = float(demo.unmasked[~look_ahead].sum() / max(n, 1))
    st.success(t("demo.result", n_zero=n_zero, n_masked=n_masked, future=future))
    _numbers(look_ahead, demo, positions)
    export.export_chart(figure, "masked-softmax", "mask_softmax_chart")
    export.export_data({"scores": demo.scores, "unmasked": demo.unmasked, "masked": demo.masked,
                        "mask": look_ahead}, pd.DataFrame(demo.masked, columns=positions), "masked-softmax",
                       "mask_softmax_data")
    widgets.write_to_url(["mask_len", "mask_seed"])


def _numbers(look_ahead: np.ndarray, demo: lessons.MaskedSoftmax, positions: list[str]) -> None:
    """The mask, the random scores and the masked weights as tables, each built only while its expander is open."""
    numbers = presentation.opened(t("demo.numbers"), "mask_numbers_open")
    if numbers:
        with numbers:
            st.dataframe(pd.DataFrame(look_ahead.astype(int), index=positions, columns=positions), width="content")
    numbers = presentation.opened(t("demo.softmax_numbers"), "mask_softmax_numbers_open")
    if numbers:
        with numbers:
            st.caption(t("demo.scores"))
            st.dataframe(pd.DataFrame(demo.scores, index=positions, columns=positions), width="content")
            st.caption(t("demo.masked"))
            st.dataframe(pd.DataFrame(demo.masked, index=positions, columns=positions), width="content")


# ----------------------------------------------------------------------------- padding
@st.fragment(key="masks_batch")
def batch_sections() -> None:
    """Sections 2 and 3: a batch of the user's sentences, its padding mask and the decoder's combined masks."""
    presentation.section(t("padding.title"), "masks-padding", batch_section)
    presentation.section(t("combined.title"), "masks-combined", combined_section)


def batch_section() -> None:
    """Section 2: the sentences, their padded batch and its padding mask."""
    st.markdown(t("padding.intro"))
    st.latex(r"m^{\text{pad}}_{b,j} = \big[\,\text{id}_{b,j} \ne \text{id}_{\text{<pad>}}\,\big]")
    text_col, tok_col = st.columns([2, 1])
    with text_col:
        st.text_area(t("padding.sentences"), key="mask_sentences", height=130, max_chars=2000)
    with tok_col:
        st.radio(t("padding.tokenize"), list(TOKENIZERS), key="mask_tok", format_func=lambda k: t(TOKENIZERS[k]))
    widgets.write_to_url(["mask_tok", "mask_sentences"])
    batch = _batch()
    if batch is None:
        return
    ids, tokens, masks, sentence_names = batch
    width = ids.shape[1]
    st.caption(t("padding.batch"))
    token_table = pd.DataFrame(tokens, index=sentence_names, columns=[str(j) for j in range(width)])
    st.dataframe(token_table, width="content")
    id_box = presentation.opened(t("padding.ids"), "mask_ids_open")
    if id_box:
        with id_box:
            st.dataframe(pd.DataFrame(ids, index=sentence_names, columns=[str(j) for j in range(width)]),
                         width="content")
    pad_chart = grids.mask_heatmap(masks.padding, sentence_names, [str(j) for j in range(width)],
                                   title=t("padding.chart_title"), x_title=t("padding.key_position"),
                                   y_title=t("padding.sentence_axis"), font_scale=fs, lang=lang)
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
        st.info(t("padding.none"))
        return None
    batch = _split(sentences)
    if batch is None:
        return None
    names = [t("padding.sentence", n=b + 1) for b in range(len(sentences))]
    return batch.ids, batch.tokens, lessons.batch_masks(batch.ids), names


def _split(sentences: list[str]):
    """The sentences split by the chosen tokenizer (None, with a message, when that fails)."""
    if st.session_state["mask_tok"] == "checkpoint":
        loaded = widgets.current_checkpoint()
        ckpt = loaded[1] if loaded else None
        if ckpt is None:
            st.warning(t("padding.no_checkpoint"))
        else:
            tokenizer = ckpt.source_tokenizer if ckpt.config.has_encoder else ckpt.target_tokenizer
            st.caption(t("padding.tokenizer", kind=tokenizer.kind, size=tokenizer.vocab_size))
            return widgets.attempt("tokenize the sentences", resources.model_lesson, lessons.checkpoint_batch, ckpt,
                                   sentences)
    return widgets.attempt("tokenize the sentences", lessons.whitespace_batch, sentences)


# ----------------------------------------------------------------------------- combined
def combined_section() -> None:
    """Section 3: look-ahead AND padding, one (query × key) mask per sentence of section 2's batch."""
    st.markdown(t("combined.intro"))
    st.latex(r"m_{b,ij} = m^{\text{look-ahead}}_{ij} \;\wedge\; m^{\text{pad}}_{b,j}")
    batch = _batch()
    if batch is None:
        return
    _, tokens, masks, sentence_names = batch
    grid = st.columns(2)
    for b, name in enumerate(sentence_names):
        labels = label_tokens(tokens[b])
        with grid[b % 2]:
            widgets.plot(grids.mask_heatmap(masks.combined[b], labels, labels, title=t("combined.chart_title", name=name),
                                            font_scale=fs, max_width=grids.HALF, lang=lang),
                         name=f"combined-mask-{b + 1}", key=f"mask_combined_{b}")
    st.markdown(t("combined.pad_rows"))
    numbers = presentation.opened(t("combined.numbers"), "mask_combined_numbers_open")
    if numbers:
        with numbers:
            for b, name in enumerate(sentence_names):
                st.caption(name)
                labels = label_tokens(tokens[b])
                st.dataframe(pd.DataFrame(masks.combined[b].astype(int), index=labels, columns=labels),
                             width="content")


presentation.section(t("look_ahead.title"), "masks-look-ahead", look_ahead_section, first=True)
batch_sections()
