"""The browser benchmark's floor (``bench.browser_floor``) counts what a real rerun sends: the bare page served by
``streamlit run`` and moved in Chromium, its websocket read back as Streamlit's deltas."""

from __future__ import annotations

import pytest

from bench import browser, browser_floor
from bench import browser_page as bp
from tests.helpers.browser import CHROMIUM_FLAGS, chromium_path


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    runs = tmp_path_factory.mktemp("bench-floor-runs")
    with sync_playwright() as playwright, bp.served(browser.BASE, runs, runs / "base.log") as server:
        chromium = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield server.url, chromium
        chromium.close()


@pytest.mark.parametrize("extra", [0, 5])
def test_a_load_and_a_move_of_the_bare_page_send_its_four_elements_and_the_extra_ones(bare, extra):
    url, chromium = bare
    page = bp.new_page(chromium)
    try:
        counter = browser_floor.DeltaCounter(page)
        # the title, the text area, the slider and the chart, then the unchanged extra elements: on the page's load,
        # and all sent again on every rerun
        assert counter.count(lambda: bp.load_ms(page, f"{url}/?extra={extra}", mode="page")) == 4 + extra
        assert counter.count(lambda: bp.nudge_ms(page, "layer")) == 4 + extra
        assert counter.count(lambda: bp.submit_ms(page, f"a new text {extra}")) == 4 + extra
    finally:
        page.context.close()
