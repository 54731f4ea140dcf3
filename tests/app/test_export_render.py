"""Chart exports are rendered on the click, from the chart itself (its spec is not written on every draw)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.ui import export


def test_a_chart_is_rendered_from_its_own_spec_when_asked():
    chart = alt.Chart(pd.DataFrame({"token": ["a", "b"], "weight": [0.25, 0.75]}), title="weights").mark_bar().encode(
        x="token:N", y="weight:Q")
    svg = export._rendered(chart, "svg", 1.0)
    assert svg.lstrip().startswith(b"<svg") and b"weights" in svg
    assert svg == export._render(chart.to_json(), "svg", 1.0)
    png = export._rendered(chart, "png", 2.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
