"""The Lesson in Chromium at 1280 × 720 in presentation mode (issues 22 and 24): the model map and the stage's
first chart both on the first screen (bounding boxes, page unscrolled), no sideways scroll, the current
stage's block highlighted, and a click on a block jumps to its stage.

Screenshots go to ``$ATTNSCOPE_SCREENSHOTS`` (default ``screenshots-tmp/lesson``, gitignored).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import app_in_chromium, overflowing, problems_on, wait_until_idle

SHOTS = Path(os.environ.get("ATTNSCOPE_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "screenshots-tmp" / "lesson")
STAGES_SHOWN = range(1, 17)  # 0-based: every stage with a chart (1 and 18 show tables)
FIRST_CHART_JS = """() => {
  const c = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stVegaLiteChart"]')]
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
    with app_in_chromium(tmp_path_factory.mktemp("browser-lesson-runs")) as (url, chromium):
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        try:
            yield url, page
        finally:
            page.close()


def _open(page, url: str, stage: int) -> None:
    page.goto(f"{url}/lesson?projector=1&lesson_stage={stage}")
    page.locator('.st-key-lesson_map').wait_for(timeout=90_000)
    wait_until_idle(page)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                           "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] [data-testid=\"stVegaLiteChart\"]"
                           " :is(svg, canvas)')", timeout=60_000)
    page.wait_for_timeout(500)


@pytest.mark.parametrize("stage", STAGES_SHOWN)
def test_map_and_first_chart_fit_the_first_screen_side_by_side(lesson_page, stage):
    url, page = lesson_page
    _open(page, url, stage)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"lesson-stage{stage + 1}-1280x720-presentation.png"))
    assert problems_on(page) == []
    chart, lesson_map = page.evaluate(FIRST_CHART_JS), page.evaluate(MAP_JS)
    assert chart is not None and lesson_map is not None
    assert 0 <= chart["top"] < 720, f"the stage's first chart starts at {chart['top']:.0f} px"
    assert 0 <= lesson_map["top"] and lesson_map["bottom"] <= 720, f"the map spans {lesson_map} (not on screen)"
    assert lesson_map["right"] <= chart["left"], "the map is not beside the chart"
    assert page.evaluate(SIDEWAYS_JS) <= 0, "the page scrolls sideways"
    assert overflowing(page) == []
    highlighted = page.locator('.st-key-lesson_map [class*="st-key-lesson_map_"]:has([data-testid="stBaseButton-primary"])')
    assert highlighted.count() == 1 and highlighted.first.inner_text().strip().startswith("▶")


def test_clicking_a_map_block_jumps_to_its_stage(lesson_page):
    url, page = lesson_page
    _open(page, url, 1)
    page.locator('.st-key-lesson_map_cross button:visible').first.click()
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stMain\"] h2')]"
                           ".some(h => h.innerText.trim().startsWith('14. '))", timeout=60_000)
    wait_until_idle(page)
    assert page.locator('.st-key-lesson_map_cross [data-testid="stBaseButton-primary"]').count() >= 1
