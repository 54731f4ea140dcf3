"""The Streamlit internals the app leans on are there, in the range requirements.txt pins.

Three modules use Streamlit below its public API, each because the public one cannot do the job:
``app/ui/vega.py`` (``_altair_globals_lock`` and ``_to_arrow_dataset``: a cached Vega-Lite spec drawn without
Altair re-serialising it), ``app/services/hosts.py`` (``is_host_allowed``: the WebSocket's own Host check applied
to every HTTP route) and ``app/ui/presentation.py`` (the frontend's chart modules, preloaded by file name).
``requirements.txt`` pins the minor release they were written against; on another release this test says which
internal moved, before a user meets a broken page.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import streamlit

ROOT = Path(__file__).resolve().parents[2]
INTERNALS = [
    ("streamlit.elements.vega_charts", "_altair_globals_lock", "app/ui/vega.py"),
    ("streamlit.elements.vega_charts", "_to_arrow_dataset", "app/ui/vega.py"),
    ("streamlit.web.server.starlette.starlette_websocket", "is_host_allowed", "app/services/hosts.py"),
]


def _pinned() -> tuple[str, str]:
    line = next(l for l in (ROOT / "requirements.txt").read_text().splitlines() if l.startswith("streamlit"))
    low, high = re.match(r"streamlit>=([\d.]+),<([\d.]+)", line).groups()
    return low, high


def test_the_installed_streamlit_is_the_pinned_minor_release():
    low, high = _pinned()
    installed = tuple(int(x) for x in streamlit.__version__.split(".")[:2])
    assert tuple(int(x) for x in low.split(".")[:2]) <= installed < tuple(int(x) for x in high.split(".")[:2]), (
        f"streamlit {streamlit.__version__} is outside the tested range >={low},<{high}: check the internals "
        "listed in this test's docstring, then move the pin")


@pytest.mark.parametrize("module, name, user", INTERNALS, ids=[n for _, n, _ in INTERNALS])
def test_each_internal_the_app_uses_exists(module, name, user):
    found = getattr(importlib.import_module(module), name, None)
    assert found is not None, f"{user} needs {module}.{name}, which streamlit {streamlit.__version__} lacks"


def test_the_frontend_still_ships_the_chart_module_the_page_preloads():
    from app.ui.presentation import chart_modules
    assert chart_modules(("ArrowVegaLiteChart",)), (
        f"app/ui/presentation.py preloads ArrowVegaLiteChart.*.js, which streamlit {streamlit.__version__} "
        "no longer serves from static/static/js")
