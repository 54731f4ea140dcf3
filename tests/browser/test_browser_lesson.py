"""The Lesson in Chromium at 1280 × 720 in presentation mode (issues 22 and 24): the model map and the stage's
first chart both on the first screen (bounding boxes, page unscrolled), no sideways scroll, every chart laid out
with the margins it was sent with (drawn once), the current stage's block highlighted, and a click on a block
jumps to its stage. The same for a pre-norm T5 model (tiny, random, saved by ``transformers`` into the app's models
folder), whose notes fold into one line.

Screenshots go to ``$ATTNSCOPE_SCREENSHOTS`` (default ``screenshots-tmp/lesson``, gitignored).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.helpers.browser import PUSHED_JS, app_in_chromium, overflowing, problems_on, wait_until_idle

SHOTS = Path(os.environ.get("ATTNSCOPE_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "screenshots-tmp" / "lesson")
STAGES_SHOWN = [*range(1, 15), 16]  # 0-based: every stage with a chart (1, 16 and 18 show tables)
FIRST_CHART_JS = """() => {
  const c = [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stVegaLiteChart"], '
                                          + '[data-testid="stPlotlyChart"])')]
    .filter(c => c.offsetParent !== null)[0];
  if (!c) return null;
  const r = c.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
}"""
MAP_JS = """() => {
  const m = document.querySelector('.st-key-lesson_map');
  if (!m) return null;
  const r = m.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
}"""
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def lesson_page(tmp_path_factory):
    models = tmp_path_factory.mktemp("browser-lesson-models")
    if importlib.util.find_spec("transformers") is not None:
        from tests.helpers import hf_seq2seq_reference as ref
        ref.t5(models / "t5")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNSCOPE_MODELS", str(models))  # the served app lists it as "models:t5"
        with app_in_chromium(tmp_path_factory.mktemp("browser-lesson-runs")) as (url, chromium):
            page = chromium.new_page(viewport={"width": 1280, "height": 720})
            try:
                yield url, page, (models / "t5").is_dir()
            finally:
                page.close()


def _open(page, url: str, stage: int, model: str = "") -> None:
    page.goto(f"{url}/lesson?projector=1&lesson_stage={stage}{model}")
    page.locator('.st-key-lesson_map .atlm').wait_for(timeout=90_000)
    wait_until_idle(page)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] :is([data-testid=\"stVegaLiteChart\"]"
                           ", .js-plotly-plot, [class*=\"st-key-lesson_skip_\"])')", timeout=60_000)
    skip = page.locator('[class*="st-key-lesson_skip_"] button')
    if skip.count():  # a stage that asks first shows its picture after Skip (test_browser_lesson_quiz answers)
        skip.first.click()
        wait_until_idle(page)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                           "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] :is([data-testid=\"stVegaLiteChart\"]"
                           " :is(svg, canvas), .js-plotly-plot .main-svg)')", timeout=60_000)
    page.wait_for_timeout(500)


def _fits(page, name: str) -> None:
    """The map and the first chart on the first screen, side by side, with the current block highlighted."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-1280x720-presentation.png"))
    assert problems_on(page) == []
    chart, lesson_map = page.evaluate(FIRST_CHART_JS), page.evaluate(MAP_JS)
    assert chart is not None and lesson_map is not None
    assert 0 <= chart["top"] < 720, f"the stage's first chart starts at {chart['top']:.0f} px"
    assert 0 <= lesson_map["top"] and lesson_map["bottom"] <= 720, f"the map spans {lesson_map} (not on screen)"
    assert lesson_map["right"] <= chart["left"], "the map is not beside the chart"
    assert page.evaluate(SIDEWAYS_JS) <= 0, "the page scrolls sideways"
    assert overflowing(page) == []
    assert page.evaluate(PUSHED_JS) == [], "a chart was drawn again with the margins automargin found"
    highlighted = page.locator('.st-key-lesson_map button[aria-current="step"]')
    assert highlighted.count() == 1 and highlighted.first.inner_text().strip().startswith("▶")


@pytest.mark.parametrize("stage", STAGES_SHOWN)
def test_map_and_first_chart_fit_the_first_screen_side_by_side(lesson_page, stage):
    url, page, _ = lesson_page
    _open(page, url, stage)
    _fits(page, f"lesson-stage{stage + 1}")


@pytest.mark.parametrize("stage", (1, 4, 9, 10, 13))
def test_a_pre_norm_t5_model_fits_too_with_its_notes_folded(lesson_page, stage):
    url, page, has_t5 = lesson_page
    if not has_t5:
        pytest.skip("transformers (test-only) is not installed")
    _open(page, url, stage, "&ckpt=models%3At5&lesson_text=the+cat+sat+on+a+mat")
    assert "pre-norm" in page.locator('.st-key-lesson_map').inner_text()
    _fits(page, f"lesson-t5-stage{stage + 1}")
    assert "differs from the paper here" in page.locator('[data-testid="stMain"]').inner_text()


def test_clicking_a_map_block_jumps_to_its_stage(lesson_page):
    url, page, _ = lesson_page
    _open(page, url, 1)
    page.locator('.st-key-lesson_map button[data-block="cross"]').first.click()
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stMain\"] h2')]"
                           ".some(h => h.innerText.trim().startsWith('14. '))", timeout=60_000)
    wait_until_idle(page)
    assert page.locator('.st-key-lesson_map button[data-block="cross"][aria-current="step"]').count() >= 1


MODULES_JS = """() => performance.getEntriesByType('resource').map(r => r.name.split('/').pop())
  .filter(n => n.startsWith('ArrowVegaLiteChart.') || n.startsWith('PlotlyChart.')).sort()"""


def test_the_first_stage_loads_the_next_stages_chart_modules_while_idle(lesson_page):
    """Stage 1 draws neither a Vega-Lite nor a Plotly chart; its page script imports Streamlit's modules for both
    while the page is idle, so Next (stage 2: Vega-Lite; stage 3: Plotly) draws without fetching them: each module is
    fetched once, before the clicks."""
    url, page, _ = lesson_page
    page.goto(f"{url}/lesson?lesson_stage=0")
    page.locator('.st-key-lesson_map .atlm').wait_for(timeout=90_000)
    wait_until_idle(page)
    charts = '[data-testid="stMain"] :is([data-testid="stVegaLiteChart"], [data-testid="stPlotlyChart"])'
    assert page.locator(charts).count() == 0
    page.wait_for_function(f"() => ({MODULES_JS})().length === 2", timeout=30_000)
    fetched = page.evaluate(MODULES_JS)
    assert fetched == sorted(page.evaluate("() => [...window.__attnscope.warmed]"))
    for drawn in ('[data-testid="stVegaLiteChart"] :is(svg, canvas)', '.js-plotly-plot .main-svg'):
        page.locator('.st-key-lesson_next button').first.click()
        page.wait_for_function("selector => document.querySelector(selector)", arg=f'[data-testid="stMain"] {drawn}',
                               timeout=60_000)
        wait_until_idle(page)
    assert page.evaluate(MODULES_JS) == fetched
    assert problems_on(page) == []


PICKER_TOPS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stTextInput"], '
                                                          + '[data-testid="stSelectbox"])')]
  .map(e => Math.round(e.getBoundingClientRect().top))"""
STAGE_HEADER_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] h2')]
  .filter(h => /^\\d+\\. /.test(h.innerText.trim())).map(h => h.getBoundingClientRect().top)[0] ?? null"""


def test_without_presentation_mode_the_stage_starts_high_on_the_first_screen(lesson_page):
    """T19: the intro folded, the sentence beside the stage in one row, head, token and step folded beside Next
    (the title, intro, model line and five pickers once filled 470 px and the stage's picture started at the
    fold); opened, that popover holds the three pickers."""
    url, page, _ = lesson_page
    page.goto(f"{url}/lesson?lesson_stage=13")
    page.locator('.st-key-lesson_map .atlm').wait_for(timeout=90_000)
    wait_until_idle(page)
    tops = page.evaluate(PICKER_TOPS_JS)
    assert len(tops) == 2 and tops[0] == tops[1], f"the sentence and the stage are not one row: {tops}"
    header = page.evaluate(STAGE_HEADER_JS)
    assert header is not None and 0 <= header < 480, f"the stage's header starts at {header} px"
    assert problems_on(page) == [] and overflowing(page) == []
    page.get_by_role("button", name="Head, token, step…").click()
    body = page.locator('[data-testid="stPopoverBody"]')
    body.wait_for(timeout=30_000)
    assert body.locator('[data-testid="stSelectbox"]').count() == 3  # head, token, step
    page.keyboard.press("Escape")
    page.screenshot(path=str(SHOTS / "lesson-stage14-1280x720.png"))
