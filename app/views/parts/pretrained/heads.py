"""The head finder of an encoder (MiniLM's page, and Explore for every encoder): pick a word, rank every
head by how strongly that word attends to one other word, and draw the chosen head's map (picked in
the table or the select box).

Everything slices the cached explanation and ``core.analysis.head_finder``'s ranking of it. Widget keys
start with a ``prefix`` (``mini`` on MiniLM's page), so two pages keep their own choices.
"""

from __future__ import annotations

import functools

import streamlit as st

from app.ui import canvas, export, widgets
from app import pretrained_resources
from app.services import catalog
from app.charts import attention as attention_charts
from app.charts import pretrained as charts
from core import Explanation

TOP = 12  # heads listed in the table


def _word_choices(tokens: tuple[str, ...]) -> list[int]:
    """Token positions a user may pick: all but [CLS] and [SEP] (unless the text is a single token)."""
    inner = list(range(1, len(tokens) - 1))
    return inner or list(range(len(tokens)))


def _head_name(record: dict, tokens: tuple[str, ...]) -> str:
    word = attention_charts.visible(tokens[record["key"]]) if record["key"] is not None else "—"
    return f"layer {record['layer'] + 1}, head {record['head'] + 1} → “{word}” ({record['weight']:.2f})"


def _picked_in_table(prefix: str) -> None:
    rows = st.session_state[f"{prefix}_table"].selection.rows
    if rows:
        st.session_state[f"{prefix}_head"] = rows[0]  # the ranking index of the clicked row


def head_finder(entry: catalog.Entry, exp: Explanation, fs: float, *, prefix: str = "mini",
                name: str = "MiniLM") -> tuple[int, int] | None:
    """Draw the head finder for ``exp``, the explanation of a sentence by the encoder ``entry`` (called
    ``name`` in the map's title); returns the chosen (layer, head), 0-based, or None when the text is too
    short."""
    tokens = exp.source_tokens
    choices = _word_choices(tokens)
    default = tokens.index("it") if "it" in tokens[1:-1] else choices[0]
    word_key, head_key = f"{prefix}_word", f"{prefix}_head"
    if st.session_state.get(f"_{prefix}_tokens") != tokens:  # a new sentence: start from its "it" (or first word)
        st.session_state[f"_{prefix}_tokens"] = tokens
        st.session_state[word_key] = default
        st.session_state[head_key] = 0
    widgets.choose(word_key, choices, default)
    query = st.selectbox("Word", choices, key=word_key, format_func=lambda i: f"{i}: {tokens[i]}",
                         help="The word whose attention is followed (its row in every head's map).")
    ranked = widgets.attempt("rank the heads", pretrained_resources.ranked_heads, entry, exp.text, query)
    if not ranked or ranked[0]["key"] is None:
        st.info("Type a sentence of at least two words to rank the heads.")
        return None
    word = attention_charts.visible(tokens[query])
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(f"**The {min(TOP, len(ranked))} heads where “{widgets.plain(word)}” looks hardest at one other word** — click a row "
                    "to draw that head.")
        table = charts.head_table(ranked, tokens, TOP)
        st.dataframe(table, hide_index=True, key=f"{prefix}_table", on_select=functools.partial(_picked_in_table, prefix),
                     selection_mode="single-row", width="stretch",
                     height=35 * (len(table) + 1) + 3)
    with right:
        widgets.bars(charts.winners_chart(ranked, tokens, title=f"Top word of each of the {len(ranked)} heads",
                                          font_scale=fs))
    st.caption("[CLS] and [SEP] are left out: BERT heads park attention there when they have nothing to do. "
               "weight = the attention on that word; share = its part of the weight left on real words.")
    positions = list(range(len(ranked)))
    if st.session_state.get(head_key) not in positions:
        st.session_state[head_key] = 0
    pick = st.selectbox("Head to draw", positions, key=head_key, format_func=lambda i: f"#{i + 1}: "
                        + _head_name(ranked[i], tokens))
    chosen = ranked[pick]
    layer, head = chosen["layer"], chosen["head"]
    matrix = exp.attention["encoder"][layer, head]  # (T, T)
    labels = attention_charts.token_labels(tokens)
    look = canvas.Look(title=name, presentation=fs > 1, theme=canvas.theme())
    maps = canvas.maps_payload(exp.attention["encoder"], labels, labels, kind="encoder", layer=layer, head=head,
                               view="head", look=look)  # every head, opened on the chosen one
    row = charts.row_chart(matrix[query], tokens, font_scale=fs,
                           title=f"“{word}” in layer {layer + 1}, head {head + 1}")
    first, second = st.columns([3, 2], gap="large")
    with first:
        canvas.maps(maps, key=f"{prefix}_canvas")
    with second:
        widgets.bars(row)  # fits the column's width, keeps one bar per token
        top_word = attention_charts.visible(tokens[chosen["key"]])
        st.text(f"“{word}” gives {chosen['weight']:.1%} of its attention to “{top_word}”.")
        export.export_data({"map": matrix, "row": matrix[query]}, table, f"{prefix}-head-finder", f"{prefix}_export")
    return layer, head
