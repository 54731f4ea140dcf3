"""The chart modules a page has its browser load ahead (app.routes.Route.preload, app.ui.presentation.script)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import streamlit as st

from app import routes
from app.ui import presentation

SERVED = Path(st.__file__).parent / "static" / "static" / "js"


def _config(html: str) -> dict:
    return json.loads(re.search(r"Object\.assign\(window\.__attnscope \|\| \{\}, (\{.*?\})\);", html).group(1))


def test_the_lesson_names_streamlits_chart_modules_as_this_streamlit_serves_them():
    assert routes.preloads("lesson") == ("ArrowVegaLiteChart", "PlotlyChart")
    vega, plotly = presentation.chart_modules(routes.preloads("lesson"))
    assert re.fullmatch(r"ArrowVegaLiteChart\.[\w-]+\.js", vega) and (SERVED / vega).is_file()
    assert re.fullmatch(r"PlotlyChart\.[\w-]+\.js", plotly) and (SERVED / plotly).is_file()
    assert _config(presentation.script(False, routes.preloads("lesson")))["preload"] == [vega, plotly]


def test_other_pages_and_unknown_modules_preload_nothing():
    assert routes.preloads("masks") == routes.preloads("") == routes.preloads("no-such-page") == ()
    assert presentation.chart_modules(("NoSuchChart",)) == ()
    assert _config(presentation.script(True))["preload"] == [] and _config(presentation.script(True))["clicker"]
