"""The Lesson's Whisper track in Chromium at 1280 × 720, in normal and presentation mode: every one of its six
stages opens from a share link with the installed Whisper tiny.en chosen, with no error or traceback, nothing wider
than its box and no sideways scroll; in presentation mode the map and the stage's first chart start on the first
screen (its top in the upper 70 %); the same in Japanese. Screenshots go to ``$ATTNSCOPE_SCREENSHOTS`` (default ``screenshots-tmp/lesson-whisper``, gitignored)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from core import pretrained_models
from tests.browser.test_browser_lesson import FIRST_CHART_JS, MAP_JS, SIDEWAYS_JS
from tests.helpers.browser import app_in_chromium, overflowing, problems_on, wait_until_idle

pytestmark = pytest.mark.skipif(not any(p.name == "Whisper tiny.en" for p in pretrained_models("audio")),
                                reason="Whisper tiny.en is not installed")
SHOTS = Path(os.environ.get("ATTNSCOPE_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "screenshots-tmp"
             / "lesson-whisper")
STAGES = 6
TITLES = ("Audio", "Convolutional stem", "Encoder self-attention", "Decoder masked", "Cross-attention", "Output")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with app_in_chromium(tmp_path_factory.mktemp("browser-lesson-whisper-runs")) as (url, chromium):
        tab = chromium.new_page(viewport={"width": 1280, "height": 720})
        try:
            yield url, tab
        finally:
            tab.close()


def _open(tab, url: str, stage: int, presentation: bool, lang: str) -> None:
    mode = ("&projector=1" if presentation else "") + f"&lang={lang}"
    tab.goto(f"{url}/lesson?ckpt={quote('pretrained:Whisper tiny.en')}&stage={stage + 1}{mode}")
    tab.locator('.st-key-lesson_map .atlm').wait_for(timeout=180_000)
    wait_until_idle(tab, timeout_ms=180_000)
    tab.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] :is([data-testid=\"stVegaLiteChart\"]"
                          " :is(svg, canvas), .js-plotly-plot .main-svg)')", timeout=90_000)
    tab.wait_for_timeout(800)


@pytest.mark.parametrize(("presentation", "lang"), [(False, "en"), (True, "en"), (True, "ja")],
                         ids=["normal", "presentation", "presentation-ja"])
def test_every_stage_fits_the_screen(page, presentation, lang):
    url, tab = page
    SHOTS.mkdir(parents=True, exist_ok=True)
    for stage in range(STAGES):
        _open(tab, url, stage, presentation, lang)
        name = f"stage{stage + 1}-1280x720-{'presentation' if presentation else 'normal'}-{lang}"
        tab.screenshot(path=str(SHOTS / f"{name}.png"))
        heading = tab.locator('[data-testid="stMain"] h2').first.inner_text()
        assert heading.startswith(f"{stage + 1}. {TITLES[stage]}" if lang == "en" else f"{stage + 1}. "), heading
        assert problems_on(tab) == [], (stage, problems_on(tab))
        assert overflowing(tab) == [], (stage, overflowing(tab))
        assert tab.evaluate(SIDEWAYS_JS) <= 0, stage
        if presentation:
            chart, lesson_map = tab.evaluate(FIRST_CHART_JS), tab.evaluate(MAP_JS)
            assert chart is not None and 0 <= chart["top"] < 0.7 * 720, (stage, chart)  # most of it on screen
            assert lesson_map is not None and 0 <= lesson_map["top"] < 720, (stage, lesson_map)
        _whole_stage(tab, SHOTS / f"{name}-whole.png")


def _whole_stage(tab, path: Path) -> None:
    """A screenshot of the whole stage to read (the main area scrolls inside the page: a tall window shows it)."""
    tab.set_viewport_size({"width": 1280, "height": 2400})
    tab.wait_for_timeout(1500)
    tab.screenshot(path=str(path))
    tab.set_viewport_size({"width": 1280, "height": 720})
