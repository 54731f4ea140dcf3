"""The Architecture page's Whisper section in a real browser (Chromium) at 1280 × 720: the diagram drawn,
the parameter table shown, no error and nothing wider than its box. Needs a Whisper package (skipped
without it, failed where ``ATTNSCOPE_REQUIRE_PRETRAINED=1``)."""

from __future__ import annotations

from tests.helpers.browser import app_in_chromium, overflowing, problems_on, screenshot, wait_until_idle
from tests.helpers.pretrained_files import installed

MAIN = '[data-testid="stMain"]'
HEADING = "7 · A real encoder-decoder: Whisper"


def test_the_architecture_page_draws_whisper_and_its_parameters(tmp_path):
    installed("Whisper tiny.en")
    with app_in_chromium(tmp_path) as (url, browser):
        page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        page.goto(f"{url}/architecture?section-arch-whisper=true")  # the link opens the section
        page.wait_for_function(f"t => (document.querySelector('{MAIN}')?.innerText || '').includes(t)", arg=HEADING,
                               timeout=180_000)
        wait_until_idle(page)
        page.get_by_text(HEADING).scroll_into_view_if_needed()
        assert problems_on(page) == [] and overflowing(page) == []
        diagram = page.locator(".st-key-arch_whisper_diagram img")
        diagram.wait_for(timeout=60_000)
        assert diagram.get_attribute("alt") == "Block diagram: Encoder layer × 4; Decoder layer × 4"  # tiny.en
        drawn = diagram.evaluate("img => [img.complete, img.naturalWidth, img.getBoundingClientRect().width, "
                                 "img.parentElement.getBoundingClientRect().width]")
        assert drawn[0] and drawn[1] > 0 and 0 < drawn[2] <= drawn[3] + 0.5  # drawn, within its column
        page.locator('[data-testid="stDataFrame"]').last.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        screenshot(page, "architecture-whisper")
        assert page.get_by_role("link", name="Hear it: the Whisper page").count() == 1
