"""Two attention maps side by side with their difference, used wherever the app compares:
an intervention (before | after), two sentences, two checkpoints, two moments of training.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import streamlit as st

from app.services import catalog
from app.ui import canvas, export, widgets
from app import resources
from app.charts import attention as charts
from core import KIND_LABELS, analysis, Explanation

UNK = "<unk>"
# The canvas writes its labels at LABEL_PX[presentation] px, one every LABEL_PITCH × that many px at most; a map beside
# another in half a 1280-px page (the sidebar open) gets a side of about HALF_SIDE px.
LABEL_PX, LABEL_PITCH, HALF_SIDE = (12, 18), 1.2, 280

Axes = tuple[Sequence[str], Sequence[str]]  # (query tokens, key tokens)


def draw(first: np.ndarray, second: np.ndarray, first_axes: Axes, second_axes: Axes, *, titles: tuple[str, str],
         difference_title: str, name: str, y_title: str = charts.QUERY_TITLE) -> None:
    """First | second | second − first on the attention canvas (the two maps on one 0–1 scale, the difference on
    a diverging one; hover a cell for its value in all three), the largest change, and the numbers to export.

    ``first_axes`` / ``second_axes``: (row labels, column labels), unique (``charts.token_labels``). The difference
    covers the block both maps share. Maps of one set of tokens share one canvas (rows labelled once, on the left);
    maps of different tokens get one canvas each (:func:`separately`), so the second labels its own tokens too.
    """
    diff, same = analysis.difference(second, first)
    queries, keys = second_axes
    shared = (list(queries)[:diff.shape[0]], list(keys)[:diff.shape[1]])
    labelled = tuple(map(tuple, first_axes)) == tuple(map(tuple, second_axes))
    maps = [canvas.Panel(first, *first_axes, titles[0]), canvas.Panel(second, *second_axes, titles[1]),
            canvas.Panel(diff, *shared, difference_title, scale="change")]
    if labelled:  # one set of tokens: the canvas labels its rows once, on the left, for the three panels
        canvas.panels(maps, key=f"canvas-{name}", title=f"{titles[0]}, {titles[1]} and the difference", name=name,
                      font_scale=widgets.font_scale(), row_title=y_title)
    else:
        separately(maps, name=name, row_title=y_title)
    st.metric("Largest change of one weight in this head", f"{np.abs(diff).max(initial=0.0):.3f}")
    if not same:
        st.caption(f"The maps differ in shape ({first.shape[0]}×{first.shape[1]} vs {second.shape[0]}×"
                   f"{second.shape[1]}): the difference covers the {diff.shape[0]}×{diff.shape[1]} cells both share.")
    elif not labelled:
        st.caption("The two maps label different tokens: the difference lines up positions, not tokens.")
    table = charts.tidy_maps(diff[None, None], *shared)
    export.export_data({"first": first, "second": second, "difference": diff}, table, name, f"export-{name}")


def separately(maps: Sequence[canvas.Panel], *, name: str, row_title: str) -> None:
    """Maps of different tokens, each on a canvas of its own (a canvas labels the rows of its first panel alone, and
    gives every panel one side, so a longer map gets smaller cells and fewer labels), so each labels every one of its
    own tokens wherever its cells are tall enough for a label: the first two side by side and their difference under
    the first while half the page holds a label for each of their tokens, else one under the other."""
    font = LABEL_PX[widgets.font_scale() > 1]
    longest = max(max(len(panel.rows), len(panel.cols)) for panel in maps[:2])
    if longest * LABEL_PITCH * font <= HALF_SIDE:
        columns = [*st.columns(2), st.columns(2)[0]]
    else:
        columns = [st.container() for _ in maps]
    for column, panel, role in zip(columns, maps, ("first", "second", "difference")):
        with column:
            canvas.panels([panel], key=f"canvas-{name}-{role}", title=panel.title, name=f"{name}-{role}",
                          font_scale=widgets.font_scale(), row_title=row_title)


def vocabulary_warning(names: tuple[str, str], sides: tuple[Explanation, Explanation]) -> None:
    """Warn when one side reads unknown tokens the other does not: its vocabulary is different."""
    unknown = [(e.source_tokens or e.target_tokens).count(UNK) for e in sides]
    for name, count, other in zip(names, unknown, unknown[::-1]):
        if count > other:
            st.warning(f"{widgets.plain(name)} does not know {count} of these tokens (shown as `{UNK}`): its "
                       "vocabulary differs, so it reads a different input and the maps compare unlike things.",
                       icon=":material/warning:")


def predictions(sides: Sequence[tuple[str, Explanation]]) -> None:
    """Each side's prediction, in columns."""
    for column, (title, exp) in zip(st.columns(len(sides)), sides):
        with column:
            st.caption(f"{title}: prediction")
            widgets.output_text(exp.prediction.text or "(empty)")


def explanations(first: Explanation, second: Explanation, kind: str, layer: int, head: int, *,
                 titles: tuple[str, str], difference_title: str, name: str) -> None:
    """Two explanations' predictions and one head of ``kind`` (clamped to each model) compared."""
    predictions([(titles[0], first), (titles[1], second)])
    if kind not in first.attention or kind not in second.attention:
        st.info(f"{KIND_LABELS[kind]} is not available on both sides.")
        return
    vocabulary_warning(titles, (first, second))
    maps = []
    for exp in (first, second):
        layers, heads = exp.shape(kind)
        maps.append(exp.attention[kind][min(layer, layers - 1), min(head, heads - 1)])
    first_rows, first_cols, y_title = charts.axes(first, kind)
    second_rows, second_cols, _ = charts.axes(second, kind)
    draw(maps[0], maps[1], (first_rows, first_cols), (second_rows, second_cols), titles=titles,
         difference_title=difference_title, name=name, y_title=y_title)


def other_checkpoint(key: str, label: str, default: str | None = None) -> catalog.Entry | None:
    """A second checkpoint to compare with (None until one is chosen)."""
    everything = resources.entries()[0]
    names = {e.key: e.label for e in everything}
    if st.session_state.get(key) not in names:
        st.session_state.pop(key, None)
        if default in names:
            st.session_state[key] = default
    chosen = st.selectbox(label, list(names), key=key, index=None if default is None else 0,
                          format_func=names.get, placeholder="Choose a checkpoint")
    return resources.entry(chosen) if chosen else None
