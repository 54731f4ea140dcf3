"""The charts' look and their drawn-once contract (app/charts/look.py): the figures the app sends carry Streamlit's
light theme under their own settings, no template, a constant data revision and their meta as a list, and are
sent with Streamlit's theme off (the browser test ``test_each_chart_is_drawn_once_per_rerun`` counts the draws)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from app.charts import grids, look, maps, speech
from tests.helpers.apptest_helpers import charts, is_plotly, open_page, spec


def _sent(figure: go.Figure) -> dict:
    return json.loads(pio.to_json(figure, validate=False))


def test_a_lean_figure_has_the_look_under_its_own_settings_and_no_template():
    figure = look.lean_figure(
        [dict(type="heatmap", z=np.eye(2)), dict(type="scatter", x=[0, 1], y=[0, 1])],
        dict(font=dict(size=18), xaxis=dict(title=dict(text="key", standoff=7)), xaxis2=dict(domain=[0.6, 1]),
             meta={"note": "n", "settled": True}))
    layout = _sent(figure)["layout"]
    assert layout["template"] is None and layout["datarevision"] == look.DATA_REVISION
    assert layout["font"] == dict(size=18, color=look.TEXT, family=look.FONT, weight=400)  # its size kept
    assert layout["xaxis"]["title"] == dict(text="key", standoff=7, font=dict(color=look.TEXT, size=14))
    assert layout["xaxis2"]["tickfont"]["color"] == look.TEXT and layout["yaxis"]["title"]["standoff"] == 24
    assert layout["title"]["font"]["weight"] == 700 and layout["paper_bgcolor"] == "rgba(0,0,0,0)"
    assert layout["meta"] == [{"note": "n", "settled": True}] and look.meta(figure) == {"note": "n", "settled": True}
    assert figure.data[1].marker.line.width == 0 and "marker" not in _sent(figure)["data"][0]  # scatter only
    np.testing.assert_array_equal(figure.data[0].z, np.eye(2))  # arrays stay arrays


def test_a_subplot_figure_is_restyled_with_its_arrays_and_without_its_template():
    built = make_subplots(rows=1, cols=2)
    built.add_trace(go.Heatmap(z=np.arange(4.0).reshape(2, 2)), 1, 1)
    built.add_trace(go.Heatmap(z=np.ones((2, 2))), 1, 2)
    figure = look.restyled(built)
    layout = _sent(figure)["layout"]
    assert layout["template"] is None and layout["xaxis2"]["tickfont"]["color"] == look.TEXT
    assert isinstance(figure.data[0].z, np.ndarray) and figure.data[0].z[1, 1] == 3.0
    assert layout["xaxis2"]["domain"] == list(built.layout.xaxis2.domain)


def test_every_chart_builder_makes_a_drawn_once_figure():
    head = maps.heatmap(np.full((3, 3), 1 / 3), ["a", "b", "c"], ["a", "b", "c"], title="t", x_title="k",
                        y_title="q")
    grid = grids.grid_heatmap(np.eye(3), title="t", x_title="x", y_title="y")
    audio = speech.spectrogram_and_cross(np.zeros((4, 8)), np.full((2, 4), 0.25), ["a", "b"], title="t", step=1)
    for figure in (head, grid, audio):
        layout = _sent(figure)["layout"]
        assert layout["template"] is None and layout["datarevision"] == look.DATA_REVISION
        assert not isinstance(layout.get("meta"), dict)  # an object would be a new one to Plotly after each copy
    assert look.meta(head)["settled"] and maps.note(head) is None


def test_the_app_sends_its_charts_without_streamlits_theme(runs):
    at = open_page("masks")
    sent = [chart for chart in charts(at) if is_plotly(chart)]
    assert sent, "the Masks page draws its look-ahead mask and masked softmax"
    for chart in sent:
        assert chart.proto.theme == "" and spec(chart)["layout"]["template"] is None
