"""The Lesson's active tour in Chromium at 1280 × 720: a stage asks before it shows, the student answers one
question right (by clicking a token) and one wrong, each reveal puts the model's real answer beside theirs, Skip is
one key away, and the last stage's "Your answers" sums them up. Screenshots go to ``$ATTNSCOPE_SCREENSHOTS``.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import load_checkpoint
from core.lessons import trace_translation
from tests.browser.test_browser_lesson import SHOTS
from tests.helpers.browser import app_in_chromium, problems_on, wait_until_idle
from tests.helpers.paths import SHIPPED

TEXT = "i have cats"
MAIN = '[data-testid="stMain"]'
PILLS = '[class*="st-key-lesson_answer_"] button'


@pytest.fixture(scope="module")
def quiz_page(tmp_path_factory):
    with app_in_chromium(tmp_path_factory.mktemp("browser-quiz-runs")) as (url, chromium):
        page = chromium.new_page(viewport={"width": 1280, "height": 720})
        try:
            yield url, page
        finally:
            page.close()


def _header_is(page, number: int) -> None:
    page.wait_for_function("n => [...document.querySelectorAll('[data-testid=\"stMain\"] h2')]"
                           ".some(h => h.innerText.trim().startsWith(n + '. '))", arg=number, timeout=60_000)
    wait_until_idle(page)


def _click(page, selector: str, text: str | None = None) -> None:
    target = page.locator(selector).filter(has_text=text) if text else page.locator(selector)
    target.first.click()
    page.wait_for_timeout(300)
    wait_until_idle(page)


def test_answer_right_then_wrong_and_read_the_summary(quiz_page):
    url, page = quiz_page
    trace = trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), TEXT)
    src = trace.source_tokens
    page.goto(f"{url}/lesson?lesson_text={TEXT.replace(' ', '+')}")
    page.locator('.st-key-lesson_map .atlm').wait_for(timeout=90_000)
    wait_until_idle(page)
    _click(page, '.st-key-lesson_map button[data-block="self_attention"]')  # stage 3, then Next: stage 4 asks
    _click(page, '.st-key-lesson_next button')
    _header_is(page, 4)
    assert page.locator(f'{MAIN} [data-testid="stVegaLiteChart"]').count() == 0, "the picture came before the answer"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "lesson-question-stage4-1280x720.png"))
    best = int(np.argmax(trace.encoder_head.q[0] @ trace.encoder_head.k.T))  # the model's own q·k, recomputed
    _click(page, PILLS, f"{best}: {src[best]}")
    page.locator(f'{MAIN} [data-testid="stAlertContentSuccess"]').wait_for(timeout=30_000)
    assert f"Right: {src[best]}, as the model says." in page.locator(f'{MAIN} [data-testid="stAlertContentSuccess"]'
                                                                      ).inner_text()
    page.locator(f'{MAIN} [data-testid="stVegaLiteChart"]').first.wait_for(timeout=60_000)  # then the stage shows
    page.screenshot(path=str(SHOTS / "lesson-reveal-stage4-1280x720.png"))

    _click(page, '.st-key-lesson_map button[data-block="cross"]')
    _header_is(page, 14)
    aligned = int(np.argmax(trace.cross_heads.mean(axis=0)[0]))
    wrong = (aligned + 1) % len(src)
    _click(page, PILLS, f"{wrong}: {src[wrong]}")
    warning = page.locator(f'{MAIN} [data-testid="stAlertContentWarning"]')
    warning.wait_for(timeout=30_000)
    assert f"You said {src[wrong]}; the model says {src[aligned]}" in warning.inner_text()

    _click(page, '.st-key-lesson_map button[data-block="output"]')  # stage 15 asks too: Skip is the S key
    _header_is(page, 15)
    assert page.locator(PILLS).count() > 0
    page.keyboard.press("s")
    page.locator(f'{MAIN} [data-testid="stAlertContentInfo"]').filter(has_text="The model's answer").wait_for(
        timeout=30_000)
    _click(page, '.st-key-lesson_map button[data-block="decode"]')  # stage 16, then Next twice: the last stage
    _click(page, '.st-key-lesson_next button')
    _click(page, '.st-key-lesson_next button')
    _header_is(page, 18)
    main = page.locator(MAIN).inner_text()
    assert "Your answers" in main and "1 of 2 answered right, 1 skipped." in main
    page.locator(f'{MAIN} [data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "lesson-answers-stage18-1280x720.png"))
    assert problems_on(page) == []
