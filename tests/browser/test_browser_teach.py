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


def test_a_beta_move_redraws_the_playgrounds_charts_in_place(browser_page):
    """β moves only the numbers: the page keeps both charts' Vega views (the same SVG elements) and draws the new
    weights on them (vega.draw_rows); hard attention changes the weights chart's title, so that view is new."""
    url, page = browser_page
    page.goto(f"{url}/playground")
    views = "[...document.querySelectorAll('[data-testid=\"stVegaLiteChart\"] svg.marks')]"  # Vega's SVG renderer
    page.wait_for_function(f"() => {views}.length === 2", timeout=90_000)
    wait_until_idle(page)
    drawn = page.evaluate_handle(views)
    marks = "views => views.map(v => v.outerHTML)"
    before = drawn.evaluate(marks)
    assert len(before) == 2
    slider = page.locator(".st-key-pg_beta").get_by_role("slider")
    for _ in range(30):
        slider.press("ArrowRight")  # β 1.0 → 4.0
    page.wait_for_function("() => new URLSearchParams(location.search).get('pg_beta') === '4.0'", timeout=30_000)
    wait_until_idle(page)
    assert drawn.evaluate("views => views.map(v => v.isConnected)") == [True, True]
    after = drawn.evaluate(marks)
    assert after[0] != before[0] and after[1] != before[1]  # the bars and the dots' areas moved
    page.locator(".st-key-pg_hard label").click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('pg_hard') === '1'", timeout=30_000)
    wait_until_idle(page)
    assert drawn.evaluate("views => views.map(v => v.isConnected)") == [False, True]
    assert problems_on(page) == []
