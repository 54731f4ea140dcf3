"""Issue 13's teaching pages in a real browser (Chromium driving a served app), in projector mode at 1280 px:
the strengths-and-limits page and the corrected Playground, Train and Architecture sections, no errors."""

from __future__ import annotations

import pytest

from tests.helpers.browser import app_in_chromium, problems_on, screenshot, wait_until_idle

PAGES = {  # url (projector mode; the link opens the section that holds the fix) → text the page must show
    "self-attention?projector=1&section-cc-permutation=true": "same map, only permuted",
    "playground?projector=1&pg_qkv_mode=decoder%20self&section-pg-projections=true": "own learned W_Q, W_K, W_V",
    "train?projector=1": "KL divergence",
    "architecture?projector=1": "final LayerNorm",
    "positional?projector=1&section-pe-worked=true": "mix two bases",
}


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    with app_in_chromium(tmp_path_factory.mktemp("browser-teach-runs")) as (url, browser):
        yield url, browser.new_page(viewport={"width": 1280, "height": 900})


@pytest.mark.parametrize("path, text", PAGES.items())
def test_teaching_page_shows_its_fix_without_errors(browser_page, path, text):
    url, page = browser_page
    page.goto(f"{url}/{path}")
    page.wait_for_function(
        "t => (document.querySelector('[data-testid=\"stMain\"]')?.innerText || '').includes(t)", arg=text,
        timeout=90_000)
    wait_until_idle(page)
    assert problems_on(page) == [], f"/{path} shows errors"
    screenshot(page, "teach-" + path.split("?")[0])


def test_the_lesson_walks_every_stage_with_the_keyboard(browser_page):
    """Every stage of the Lesson, reached with the keyboard alone (focus Next, press Enter), in projector mode."""
    from app.views.lesson import STAGES

    url, page = browser_page
    page.goto(f"{url}/lesson?projector=1")
    wait_until_idle(page)
    for stage, (title, _) in enumerate(STAGES):
        heading = f"{stage + 1}. {title}"
        page.wait_for_function(
            "t => [...document.querySelectorAll('h2')].some(h => h.innerText.trim().startsWith(t))", arg=heading,
            timeout=60_000)
        wait_until_idle(page)
        assert problems_on(page) == [], f"stage {heading} shows errors"
        if stage < len(STAGES) - 1:
            next_button = page.get_by_role("button", name="Next ▶")
            next_button.focus()
            page.keyboard.press("Enter")
    screenshot(page, "lesson-last-stage")
