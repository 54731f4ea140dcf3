"""Chart exports are rendered on the click, from the chart itself (its spec is not written on every draw); every
Plotly chart exports as a page; a data export holds what its name says."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import pytest

from app.ui import export
from core import explain
from tests.helpers.paths import REVERSE


def test_a_chart_is_rendered_from_its_own_spec_when_asked():
    chart = alt.Chart(pd.DataFrame({"token": ["a", "b"], "weight": [0.25, 0.75]}), title="weights").mark_bar().encode(
        x="token:N", y="weight:Q")
    svg = export._rendered(chart, "svg", 1.0)
    assert svg.lstrip().startswith(b"<svg") and b"weights" in svg
    assert svg == export._render(chart.to_json(), "svg", 1.0)
    png = export._rendered(chart, "png", 2.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plotly_chart_without_a_template_exports_as_a_standalone_page():
    """The app's figures carry no template (app.charts.look): the HTML export is written anyway, plotly.js inlined."""
    from app.charts import attention as charts

    figure = charts.head_map(np.array([[1.0, 0.0], [0.25, 0.75]]), ["a", "b"], ["a", "b"], title="head 1 of layer 2")
    assert figure.layout.template is None or not figure.layout.template.to_plotly_json()
    page = export._plotly_html(figure)
    assert page.lstrip().lower().startswith("<!doctype html>") and "head 1 of layer 2" in page and "0.75" in page
    assert "<script src=" not in page and len(page) > 1_000_000  # plotly.js inlined, nothing fetched


def test_the_picture_buttons_name_their_chart_and_escape_the_name():
    buttons = export.image_buttons('enc"<b>')
    assert f'{export.IMAGE_ATTRIBUTE}="png"' in buttons and f'{export.IMAGE_ATTRIBUTE}="svg"' in buttons
    assert f'{export.CHART_ATTRIBUTE}="enc&quot;&lt;b&gt;"' in buttons and "<b>" not in buttons


@pytest.mark.skipif(not REVERSE.exists(), reason="the shipped reverse checkpoint is missing")
@pytest.mark.parametrize(("scope", "heads"), [("head", [2]), ("layer", [1, 2, 3, 4])])
def test_the_data_export_holds_what_its_name_says(scope, heads):
    """A CSV of one head holds that head's weights alone (layer and head from 1), equal to the map it exports."""
    from app.views.parts.explore import views

    exp = explain(REVERSE, "abcab")
    every = exp.attention["cross"]  # (L, H, Tq, Tk)
    arrays, table = views._data(exp, "cross", 1, 1, scope)
    frame = table()
    assert sorted(frame["head"].unique()) == heads
    assert sorted(frame["layer"].unique()) == [2]
    one = frame[(frame["layer"] == 2) & (frame["head"] == 2)]
    np.testing.assert_allclose(one["weight"].to_numpy().reshape(every.shape[2:]), every[1, 1], rtol=0, atol=0)
    assert arrays["attention"].shape[1] == len(frame["head"].unique())
