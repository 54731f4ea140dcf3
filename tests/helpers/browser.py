"""Shared machinery for the real-browser tests: serve the app with ``streamlit run`` on loopback
and drive Debian's Chromium through Playwright (no browser download).

Set ``ATTNSCOPE_SCREENSHOTS=<folder>`` to save the screenshots the README shows.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

from bench.browser_page import Server

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync", "--disable-dev-shm-usage"]


def chromium_path() -> str:
    """Debian's Chromium, or skip (fail in CI, where ATTNSCOPE_REQUIRE_BROWSER=1)."""
    path = shutil.which("chromium")
    if path is None:
        message = "Chromium is not installed (apt-get install chromium)"
        if os.environ.get("ATTNSCOPE_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("playwright is not installed: pip install -r requirements-dev.txt")
    return path


@contextmanager
def served_app(runs_dir: Path) -> Iterator[str]:
    """``streamlit run`` the app on a free loopback port (the benchmark's :class:`Server`); yields its URL."""
    server = Server("app/streamlit_app.py", runs_dir, runs_dir / "server.log")
    try:
        try:
            server.wait_ready(timeout_s=90)
        except RuntimeError as error:
            pytest.fail(f"the app did not start: {error}")
        yield server.url
    finally:
        server.stop()


@contextmanager
def app_in_chromium(runs_dir: Path) -> Iterator[tuple[str, Any]]:
    """The app served with ``runs_dir`` as its runs folder, and Debian's Chromium launched: yields
    (url, Playwright browser); both are stopped on exit."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with served_app(runs_dir) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            yield url, browser
        finally:
            browser.close()


def wait_until_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the app has rendered and no script run is in progress."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') !== 'running'
                && !document.querySelector('[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]');
        }""",
        timeout=timeout_ms,
    )
    page.wait_for_timeout(300)


def problems_on(page) -> list[str]:
    """Tracebacks and error messages visible on the page."""
    found = [e.inner_text() for e in page.locator('[data-testid="stException"]').all()]
    found += [e.inner_text() for e in page.locator('[data-testid="stAlertContentError"]').all()]
    return found


def screenshot(page, name: str) -> None:
    """Save a screenshot when ATTNSCOPE_SCREENSHOTS names a folder."""
    folder = os.environ.get("ATTNSCOPE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)


# Text, buttons and chart containers whose content is wider than their box. Dataframes (a scrolling
# grid by design), tables (st.table scrolls sideways by design) and the text area are left out.
OVERFLOW_JS = """() => {
  const selector = 'h1, h2, h3, h4, p, li, label, button, code, pre, [data-testid="stMetricValue"], '
    + '[data-testid="stVegaLiteChart"], [data-testid="stPlotlyChart"], [data-testid="stCaptionContainer"], '
    + '.katex-display, [data-testid="stExpander"] summary, [data-testid="stSidebarNav"] a, [data-testid="stSidebarNav"] a *, '
    + '[data-testid="stButtonGroup"], [data-testid="stButtonGroup"] button *, '
    + '[data-baseweb="select"] div:not(:has(*)), [data-baseweb="tag"] span';
  const byDesign = '[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stTextArea"], '
    + '[data-testid="stDataFrameResizable"]';
  const found = [];
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const folded = sidebar && (sidebar.getAttribute('aria-expanded') === 'false'
    || sidebar.getBoundingClientRect().right <= 1);  // presentation mode folds it away: off screen by design
  for (const el of document.querySelectorAll(selector)) {
    if (el.closest(byDesign) || el.offsetParent === null || el.clientWidth === 0) continue;
    if (folded && el.closest('[data-testid="stSidebar"]')) continue;
    if (getComputedStyle(el).overflowX === 'auto' || getComputedStyle(el).overflowX === 'scroll') continue;
    if (el.scrollWidth > el.clientWidth + 1) {
      const name = el.getAttribute('data-testid') || el.tagName.toLowerCase();
      found.push(`${name}: "${(el.innerText || '').trim().slice(0, 50)}" (${el.scrollWidth} > ${el.clientWidth})`);
    }
  }
  return found;
}"""


STYLED_JS = "() => getComputedStyle(document.documentElement).getPropertyValue('--attnscope-styled').trim() === '1'"


def overflowing(page, settle_ms: int = 5_000) -> list[str]:
    """Elements of the page whose content is wider than their box (see OVERFLOW_JS for what is measured), once the
    app's style is in (app/ui/presentation.BASE_CSS: the page names wrap) and the layout has settled: a box that
    still overflows after ``settle_ms`` is reported; one caught mid-layout for a frame is not."""
    page.wait_for_function(STYLED_JS, timeout=30_000)
    found = page.evaluate(OVERFLOW_JS)
    for _ in range(settle_ms // 500):
        if not found:
            break
        page.wait_for_timeout(500)
        found = page.evaluate(OVERFLOW_JS)
    return found


# A chart whose margins the app settled (``layout.meta.settled``) that Plotly's automargin still pushed (laid out with
# margins more than 1 px off those set: drawn a second time).
PUSHED_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
  .filter(gd => gd.offsetParent !== null && gd._fullLayout && ((gd._fullLayout.meta || [])[0] || {}).settled)
  .flatMap(gd => { const set = gd._fullLayout.margin, drawn = gd._fullLayout._size;
    const off = ['l', 'r', 't', 'b'].filter(side => Math.abs(drawn[side] - set[side]) > 1);
    const title = (gd._fullLayout.title.text || '').replace(/<[^>]*>/g, '').slice(0, 40);
    const moved = off.map(side => `${side} ${set[side]} → ${drawn[side]}`).join(', ');
    return off.length ? [`[${title}] ${moved}`] : []; })"""


def choose_option(page, box, option) -> None:
    """Open the select ``box`` (a locator) and click ``option`` (a locator in the open list). A redraw that lands
    while the list opens closes it again (on a page still drawing its charts), so the list is opened again, at
    most three times, until the option shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(3):
        box.click()
        try:
            option.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            wait_until_idle(page)
            continue
        option.click()
        wait_until_idle(page)
        return
    raise AssertionError(f"the list never showed {option}")

