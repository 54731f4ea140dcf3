"""The browser benchmark's "page" mode (``bench.browser_page``) on a page whose timeline the test writes: the figure
is the main area's last change once it has been quiet, a run React drew in one render still counts, and the acted
widget's own change is not taken for the page's answer. A static page in Chromium, no server."""

from __future__ import annotations

import pytest

from bench import browser_page as bp
from tests.helpers.browser import CHROMIUM_FLAGS, chromium_path

# A Streamlit-like skeleton: the app's script state, a main area, the acted widget inside it, and a chart slot.
PAGE = """<div data-testid="stApp" data-test-script-state="notRunning"><div data-testid="stMain">
<div class="st-key-knob"><span id="thumb">1</span></div><div id="chart">old</div></div></div>"""
# After the action: the widget's thumb moves at once; the script runs from 20 to 60 ms (its start and end drawn in one
# render when ``batched``), the page changes at 60 ms, and then its chart is drawn in one long task that ends at
# ``late`` ms (as Plotly draws a figure: the main thread busy, no frame in between).
TIMELINE = """({batched, late, answer}) => {
  const app = document.querySelector('[data-testid="stApp"]');
  document.getElementById('thumb').textContent = '2';
  setTimeout(() => { if (!batched) app.setAttribute('data-test-script-state', 'running'); }, 20);
  setTimeout(() => { app.setAttribute('data-test-script-state', 'notRunning');
                     if (answer) document.getElementById('chart').textContent = 'new'; }, 60);
  if (answer) setTimeout(() => { const end = performance.now() + late - 61; while (performance.now() < end) {}
                                 document.getElementById('chart').setAttribute('data-drawn', '1'); }, 61);
}"""


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield browser.new_page()
        browser.close()


def _timed(page, **timeline) -> float:
    page.set_content(PAGE)
    bp.arm(page, "page", need=0, skip=".st-key-knob")
    page.evaluate(TIMELINE, timeline)
    return bp.drawn_ms(page, settle=True)


@pytest.mark.parametrize("batched", [False, True])
def test_the_figure_is_the_last_change_of_the_main_area(page, batched):
    took = _timed(page, batched=batched, late=400, answer=True)
    assert 390 <= took < 400 + bp.SETTLE_MS  # the late chart counts; "script done" at 60 ms would not


def test_a_chart_still_loading_its_code_is_not_drawn(page):
    """Streamlit shows a skeleton where a chart goes while it loads the chart's code (the page quiet meanwhile)."""
    page.set_content(PAGE)
    bp.arm(page, "page", need=0, skip=".st-key-knob")
    page.evaluate("""() => {
      const chart = document.getElementById('chart');
      setTimeout(() => { chart.innerHTML = '<div data-testid="stSkeleton"></div>'; }, 60);
      setTimeout(() => { chart.textContent = 'new'; }, 600);
    }""")
    assert 590 <= bp.drawn_ms(page, settle=True) < 600 + bp.SETTLE_MS


def test_the_acted_widgets_own_change_is_not_the_answer(page, monkeypatch):
    monkeypatch.setattr(bp, "TIMEOUT_MS", 2000)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with pytest.raises(PlaywrightTimeout):  # a batched run that changed nothing but the slider is never "drawn"
        _timed(page, batched=True, late=0, answer=False)
