"""Margins set before the browser draws (``app.charts.margins``): each side holds what it must, estimated from
the labels' text, so Plotly's automargin has nothing to push (the browser check of the promise is in
``tests/browser/test_browser_layout.py``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.charts import grids, look, maps
from app.charts.margins import _nice_ticks, settle, text_width


def test_text_width_adds_each_characters_advance_and_wide_scripts_take_a_full_em():
    assert text_width("", 12) == 0
    assert text_width("ii", 10) == pytest.approx(2 * 0.26 * 10)
    assert text_width("mm", 10) == pytest.approx(2 * 0.84 * 10)
    assert text_width("日本", 10) == pytest.approx(2 * 1.05 * 10)
    assert text_width("Жж", 10) == pytest.approx(2 * 0.85 * 10)
    assert text_width("token", 18) == pytest.approx(1.5 * text_width("token", 12))


@pytest.mark.parametrize(("low", "high", "expected"), [
    (0.0, 1.0, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
    (-1.0, 1.0, ["−1.0", "−0.5", "0.0", "0.5", "1.0"]),
    (0.0, 0.08, ["0.00", "0.02", "0.04", "0.06", "0.08"]),
    (0.0, 300.0, ["0", "50", "100", "150", "200", "250", "300"]),
    (2.0, 2.0, ["2"]),
])
def test_colour_bar_ticks_are_round_values_about_five_of_them(low, high, expected):
    assert _nice_ticks(low, high) == expected


def _layout(labels: list[str], title: str = "query", angle: int = 0, size: float = 12) -> dict:
    axis = dict(ticktext=labels, tickvals=labels, tickfont=dict(size=size), title=dict(text=title), tickangle=angle)
    return dict(width=600, font=dict(size=size), margin=dict(l=10, r=10, t=40, b=10), xaxis=dict(axis),
                yaxis=dict(axis, title=dict(text=title)))


def test_longer_labels_and_tilted_ones_get_more_room_and_a_title_its_line():
    short, long_ = _layout(["a", "b"]), _layout(["a long token", "b"])
    settle([], short), settle([], long_)
    grown = text_width("a long token", 12) - text_width("a", 12)
    assert long_["margin"]["l"] - short["margin"]["l"] == pytest.approx(grown, abs=2)  # each rounded up
    assert long_["margin"]["b"] == short["margin"]["b"]  # upright labels: one line high, however long
    tilted = _layout(["a long token", "b"], angle=-60)
    settle([], tilted)
    assert tilted["margin"]["b"] > short["margin"]["b"] + 0.8 * grown
    untitled = _layout(["a", "b"], title="")
    settle([], untitled)
    assert short["margin"]["l"] - untitled["margin"]["l"] > 12  # the title's line and its standoff
    assert short["yaxis"]["title"]["standoff"] == round(0.6 * 12)


def test_margins_only_grow_and_unknown_labels_leave_a_side_alone():
    layout = _layout(["a", "b"])
    layout["margin"] = dict(l=300, r=10, t=40, b=10)
    layout["xaxis"].pop("ticktext"), layout["xaxis"].pop("tickvals")
    settle([], layout)
    assert layout["margin"]["l"] == 300 and layout["margin"]["b"] == 10 and layout["meta"]["settled"]


def test_a_colour_bar_takes_its_ticks_and_title_and_a_horizontal_or_hidden_one_nothing():
    def right(**bar) -> int:
        layout = _layout(["a"])
        settle([dict(type="heatmap", z=np.eye(2), zmin=0, zmax=1, colorbar=dict(thickness=14, **bar))], layout)
        return layout["margin"]["r"]

    assert right(ticktext=["masked", "may attend"]) - right() == pytest.approx(
        text_width("may attend", 12) - text_width("0.0", 12), abs=1)
    assert right(title=dict(text="cell")) < right(title=dict(text="weight"))
    assert right(title=dict(text="weight " * 10)) - right() == pytest.approx(2.5 * 12, abs=1)  # a capped title
    assert right(orientation="h") == 10
    layout = _layout(["a"])
    settle([dict(type="heatmap", z=np.eye(2), showscale=False)], layout)
    assert layout["margin"]["r"] == 10


def test_the_colour_bar_of_a_trace_without_a_range_spans_its_data():
    wide, narrow = _layout(["a"]), _layout(["a"])
    settle([dict(type="heatmap", z=np.array([[-12345.0, 0.0]]), colorbar={})], wide)
    settle([dict(type="heatmap", z=np.array([[0.0, 1.0]]), colorbar={})], narrow)
    assert wide["margin"]["r"] > narrow["margin"]["r"]
    empty = _layout(["a"])
    settle([dict(type="heatmap", z=np.full((2, 2), np.nan), colorbar={})], empty)  # no number: a 0–1 scale's room
    assert empty["margin"]["r"] == narrow["margin"]["r"]


def test_the_apps_heatmaps_are_settled_and_their_margins_follow_their_labels():
    tokens = ["the", "cat", "sat"]
    head = maps.heatmap(np.full((3, 3), 1 / 3), tokens, tokens, title="t", x_title="key", y_title="query")
    longer = maps.heatmap(np.full((3, 3), 1 / 3), ["an extraordinarily", "cat", "sat"], tokens, title="t",
                          x_title="key", y_title="query")
    assert look.meta(head)["settled"] and longer.layout.margin.l > head.layout.margin.l + 50
    grid = grids.grid_heatmap(np.eye(3), title="t", x_title="x", y_title="y", font_scale=1.5)
    small = grids.grid_heatmap(np.eye(3), title="t", x_title="x", y_title="y")
    assert grid.layout.margin.l > small.layout.margin.l and look.meta(grid)["settled"]
    mask = grids.mask_heatmap(np.tril(np.ones((3, 3), bool)), tokens, tokens, title="t")
    assert mask.layout.margin.r > small.layout.margin.r  # "may attend" is wider than "1.0"


def test_a_category_axis_without_ticks_gets_room_for_its_widest_category():
    """Plotly shows some of a category axis' labels when none are set (W_qkv's 128 rows): the widest of them all
    bounds the room; a numeric axis without ticks is still left alone."""
    rows = [str(r) for r in range(128)]
    trace = dict(type="heatmap", z=np.zeros((128, 4)), x=[0, 1, 2, 3], y=rows, showscale=False)
    layout = dict(width=600, font=dict(size=12), margin=dict(l=10, r=10, t=40, b=10),
                  xaxis=dict(title=dict(text="column")), yaxis=dict(type="category", title=dict(text="input")))
    settle([trace], layout)
    assert layout["margin"]["b"] == 10  # numbers Plotly picks: unknown
    room = layout["margin"]["l"]
    wider = dict(layout, margin=dict(l=10, r=10, t=40, b=10), yaxis=dict(type="category", title=dict(text="input")))
    settle([dict(trace, y=rows[:-1] + ["a much longer row name"])], wider)
    assert 10 < room < wider["margin"]["l"]
    # pad, the widest label, automargin's edge, the title's standoff (0.6 em) and its line
    assert room == math.ceil(4 + text_width("127", 12) + 17 + round(0.6 * 12) + 1.36 * 12)
