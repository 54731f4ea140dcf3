"""Real-browser tests: ``streamlit run`` on loopback, driven by Playwright in Debian's Chromium.

They type, click and look like a user: every page opens without an error, the Explore page
reacts to text, kind, layer, head and the causal mask, and the Train page trains a model that
then appears in the checkpoint picker.
"""

from __future__ import annotations

import re

import pytest

from tests.browser import CHROMIUM_FLAGS, chromium_path, problems_on, screenshot, served_app, wait_until_idle

PAGES = {  # url path → a heading the page must show
    "": "Explore attention",
    "checkpoints": "Checkpoints",
    "train": "Train",
    "positional": "Positional encoding",
    "playground": "Attention playground",
    "masks": "Masks",
    "architecture": "Architecture",
}


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory):
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    runs = tmp_path_factory.mktemp("browser-runs")
    with served_app(runs) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        yield url, page, dialogs
        browser.close()


def _main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def _wait_for_text(page, text: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "t => (document.querySelector('[data-testid=\"stMain\"]')?.innerText || '').includes(t)", arg=text,
        timeout=timeout_ms,
    )
    wait_until_idle(page)


def _open(page, url: str, heading: str) -> None:
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').filter(has_text=heading).first.wait_for(timeout=60_000)
    wait_until_idle(page)


def test_every_page_opens_without_an_error(browser_page):
    url, page, _ = browser_page
    for path, heading in PAGES.items():
        _open(page, f"{url}/{path}", heading)
        assert problems_on(page) == [], f"/{path} shows errors"
        screenshot(page, path or "explore")


def test_explore_reacts_to_text_kind_layer_head_and_the_causal_mask(browser_page):
    url, page, dialogs = browser_page
    _open(page, f"{url}/?ckpt=shipped:translation", "Explore attention")
    text = page.locator(".st-key-text textarea")
    text.fill("the small cat sees the red car")
    text.press("Control+Enter")
    _wait_for_text(page, "el gato pequeño ve el coche rojo")

    page.locator(".st-key-kind").get_by_text("Cross-attention").click()
    wait_until_idle(page)
    for control in ("layer", "head"):
        before = page.locator('[data-testid="stVegaLiteChart"]').first.screenshot()
        page.locator(f".st-key-{control}").get_by_role("slider").press("ArrowRight")
        wait_until_idle(page)
        after = page.locator('[data-testid="stVegaLiteChart"]').first.screenshot()
        assert after != before, f"changing the {control} did not redraw the map"
    screenshot(page, "explore-cross")

    page.get_by_text("Interventions: change how attention works").click()
    wait_until_idle(page)
    before_toggle = _main_text(page)
    page.locator(".st-key-causal label").first.click()
    _wait_for_text(page, "Largest change")
    assert _main_text(page) != before_toggle
    assert problems_on(page) == []
    screenshot(page, "explore-intervention")

    text.fill('<img src=x onerror="alert(1)"> <script>alert(2)</script>')
    text.press("Control+Enter")
    wait_until_idle(page)
    assert dialogs == [], "user text must never run as HTML"


def test_train_page_trains_a_model_that_appears_in_the_picker(browser_page):
    url, page, _ = browser_page
    _open(page, f"{url}/train", "Train")
    for key, choice in (("train_task", "copy"), ("train_preset", "tiny")):
        page.locator(f".st-key-{key}").click()
        page.get_by_role("option").filter(has_text=re.compile(f"^{choice}\\b")).first.click()
        wait_until_idle(page)
    steps = page.locator(".st-key-train_steps input")
    steps.fill("60")
    steps.press("Enter")
    name = page.locator(".st-key-train_name input")
    name.fill("browser-run")
    name.press("Enter")
    wait_until_idle(page)
    page.locator(".st-key-train_start button").click()
    page.wait_for_function(  # the progress advances while the page stays live
        "() => /Step [1-9][0-9]* of 60/.test(document.querySelector('[data-testid=\"stMain\"]').innerText)",
        timeout=120_000,
    )
    screenshot(page, "train-live")
    page.wait_for_selector(".st-key-train_explorebrowser-run button, [class*='st-key-train_explore'] button",
                           timeout=180_000)
    assert problems_on(page) == []
    page.locator("[data-testid='stSidebar'] .st-key-ckpt").click()
    assert page.get_by_role("option", name="my run · browser-run", exact=False).count() >= 1
