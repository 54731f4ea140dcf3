"""Masks and the Lesson in Japanese (and the Lesson in Russian and Chinese) in Chromium at 1280 × 720: a browser
asking for Japanese (Accept-Language) gets the page in Japanese and a share link with ``lang=ja``; its Japanese is
drawn with real glyphs (Noto Sans CJK, not tofu boxes) in the prose and in the charts; and, in normal and
presentation mode, no chart text overlaps, no chart is wider than its column and no text overflows its box (the
layout test's checks). The Lesson's first draw (and a later stage) in ja, ru and zh shows no sentence of its English
messages, and in Japanese and Russian presentation mode its map and first chart share the first screen."""

from __future__ import annotations

import pytest

from app import i18n
from tests.browser.test_browser_layout import OVERLAPS_JS, TOO_WIDE_JS, UNZOOMED
from tests.helpers.browser import (CHROMIUM_FLAGS, chromium_path, overflowing, problems_on, screenshot, served_app,
                                   wait_until_idle)

# Draw ``text`` in ``font`` on a canvas and return its pixels' checksum: two different characters drawn as the same
# box (tofu) give the same sum, and the page's font drawing what Noto Sans CJK JP draws gives Noto's sum.
GLYPHS_JS = """([text, font]) => {
  const canvas = document.createElement('canvas'); canvas.width = 200; canvas.height = 60;
  const ctx = canvas.getContext('2d'); ctx.font = font; ctx.fillStyle = '#000'; ctx.fillText(text, 4, 44);
  const data = ctx.getImageData(0, 0, 200, 60).data; let sum = 0;
  for (let i = 3; i < data.length; i += 4) sum = (sum * 31 + data[i] * (i % 997)) % 1000000007;
  return sum;
}"""
FONT_OF_JS = """selector => { const s = getComputedStyle(document.querySelector(selector));
  return `${s.fontWeight} 32px ${s.fontFamily}`; }"""


@pytest.fixture(scope="module")
def japanese(tmp_path_factory):
    """The app, and a Chromium whose user asks for Japanese: ``--accept-lang`` is what a Japanese Chromium sends
    on every request, the app's websocket included (Playwright's ``locale`` reaches page requests only)."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with served_app(tmp_path_factory.mktemp("browser-i18n-runs")) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable,
                                             args=[*CHROMIUM_FLAGS, "--accept-lang=ja-JP,ja"])
        try:
            yield url, browser.new_page(viewport={"width": 1280, "height": 720})
        finally:
            browser.close()


def _open(page, url: str, query: str) -> None:
    page.goto(f"{url}/masks{query}")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
    wait_until_idle(page)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] .js-plotly-plot .main-svg')",
                           timeout=60_000)
    page.wait_for_timeout(800)  # Plotly's relayout to the column's width


def test_masks_in_japanese_from_the_browsers_language(japanese):
    url, page = japanese
    _open(page, url, "")  # no lang in the link: the browser's Accept-Language chooses
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == i18n.text("ja", "masks", "opening.title")
    page.wait_for_function("() => new URLSearchParams(location.search).get('lang') === 'ja'", timeout=10_000)
    assert problems_on(page) == []


@pytest.mark.parametrize("selector", ['[data-testid="stMain"] h1', '[data-testid="stMain"] [data-testid="stMarkdownContainer"] p',
                                      '[data-testid="stMain"] .js-plotly-plot .gtitle, [data-testid="stMain"] .js-plotly-plot .annotation-text'])
def test_japanese_is_drawn_with_cjk_glyphs_not_tofu(japanese, selector):
    url, page = japanese
    _open(page, url, "?lang=ja")
    font = page.evaluate(FONT_OF_JS, selector)
    glyphs = [page.evaluate(GLYPHS_JS, [text, font]) for text in ("マ", "ス", "重", "文")]
    assert len(set(glyphs)) == 4, f"{selector}: different characters drawn alike (tofu) in {font}"
    noto = font.split(" 32px ")[0] + ' 32px "Noto Sans CJK JP"'
    assert page.evaluate(GLYPHS_JS, ["マスクの重み", font]) == page.evaluate(GLYPHS_JS, ["マスクの重み", noto]), \
        f"{selector}: {font} does not draw Japanese with Noto Sans CJK JP"


# True once every chart of the page has kept its size for one second (polled: the charts' boxes, joined).
SETTLED_JS = """() => {
  const now = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
    .map(c => { const r = c.getBoundingClientRect(); return `${r.width}x${r.height}`; }).join(',');
  const was = window.__chartsSeen, when = window.__chartsSince || 0;
  if (was !== now) { window.__chartsSeen = now; window.__chartsSince = performance.now(); return false; }
  return performance.now() - when > 1000;
}"""


@pytest.mark.parametrize("presentation", [False, True], ids=["normal", "presentation"])
def test_masks_in_japanese_keep_their_layout(japanese, presentation):
    url, page = japanese
    _open(page, url, f"?lang=ja&all_sections=1&projector={int(presentation)}")
    if presentation:
        page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                               "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
        page.wait_for_timeout(800)
        page.wait_for_function(SETTLED_JS, timeout=30_000)  # every chart drawn again to the unfolded width
    screenshot(page, f"masks-ja-{'presentation' if presentation else 'normal'}")
    assert problems_on(page) == []
    assert page.evaluate(f"() => {{ {UNZOOMED} return ({OVERLAPS_JS})(); }}") == []
    assert page.evaluate(f"() => {{ {UNZOOMED} return ({TOO_WIDE_JS})(); }}") == []
    assert overflowing(page) == []


# ----------------------------------------------------------------------------- the Lesson
LESSON_PAGES = ["lesson", "lesson-stages", "lesson-decoder", "lesson-quiz", "charts", "glossary", "common"]


def _open_lesson(page, url: str, query: str) -> str:
    """The Lesson opened with ``query``, drawn and idle (a stage that asks first shows its question); its main
    column's text as the reader sees it."""
    page.goto(f"{url}/lesson?{query}")
    page.locator('.st-key-lesson_map .atlm').wait_for(timeout=90_000)
    wait_until_idle(page)
    page.wait_for_timeout(500)
    return page.locator('[data-testid="stMain"]').inner_text()


def _english_left(text: str, lang: str) -> list[str]:
    """The English messages' sentences (four words or more) in ``text``, but for names the translation keeps as
    written (the paper's title)."""
    from tests.app.test_app_i18n import sentences

    kept = "\n".join(m for page in LESSON_PAGES for m in i18n.catalog(lang, page).values())
    return [s for page in LESSON_PAGES for s in sentences(page) if s in text and s not in kept]


@pytest.mark.parametrize("lang", ["ja", "ru", "zh"])
def test_the_lessons_first_draw_has_no_english_sentence(japanese, lang):
    url, page = japanese
    first = _open_lesson(page, url, f"lang={lang}")
    assert i18n.text(lang, "lesson", "opening.title") in first
    assert i18n.text(lang, "lesson", "map.title").replace("**", "") in first
    assert _english_left(first, lang) == [], "the first draw"
    later = _open_lesson(page, url, f"lang={lang}&stage=9")  # Softmax: its question first
    assert _english_left(later, lang) == [], "stage 9"
    assert problems_on(page) == []
    screenshot(page, f"lesson-{lang}-stage9-normal")


def _settle_presentation(page) -> None:
    page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                           "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
    skip = page.locator('[class*="st-key-lesson_skip_"] button')
    if skip.count():  # the stage's picture after Skip
        skip.first.click()
        wait_until_idle(page)
# ----------------------------------------------------------------------------- the Learn pages in every language
# Each page's first draw (its first section open, as a student opens it) shows no English sentence of its messages
# or of the messages it shares, in Japanese, Russian and Chinese; and passes the layout checks in Japanese and
# Russian presentation mode.
LEARN_PAGES = ["positional", "architecture", "self-attention"]
FIRST_DRAWS = [(page, lang) for page in LEARN_PAGES for lang in ("ja", "ru", "zh")]
PRESENTED = [(page, lang) for page in LEARN_PAGES for lang in ("ja", "ru")]
SHARED_WORDS = ["glossary", "common", "charts", "sidebar", "nav"]


def _open_learn(page, url: str, path: str, query: str) -> None:
    """``path`` in ``page``, its title drawn and every chart settled at its size."""
    page.goto(f"{url}/{path}{query}")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
    wait_until_idle(page)
    page.wait_for_timeout(800)
    page.wait_for_function(SETTLED_JS, timeout=30_000)


@pytest.mark.parametrize("lang", ["ja", "ru"])
@pytest.mark.parametrize("stage", [1, 3, 12, 14])
def test_the_lesson_in_presentation_mode_keeps_its_layout(japanese, lang, stage):
    """Japanese and Russian in presentation mode: the map and the stage's first chart on the first screen, side
    by side; no chart text overlapping, no chart wider than its column, no text overflowing its box."""
    from tests.browser.test_browser_lesson import FIRST_CHART_JS, MAP_JS, SIDEWAYS_JS

    url, page = japanese
    _open_lesson(page, url, f"lang={lang}&projector=1&stage={stage}")
    _settle_presentation(page)
    screenshot(page, f"lesson-{lang}-stage{stage}-presentation")
    assert problems_on(page) == []
    chart, lesson_map = page.evaluate(FIRST_CHART_JS), page.evaluate(MAP_JS)
    if stage != 1:  # stage 1 shows a table
        assert chart is not None and 0 <= chart["top"] < 720, f"the first chart starts at {chart}"
        assert lesson_map["right"] <= chart["left"], "the map is not beside the chart"
    assert 0 <= lesson_map["top"] and lesson_map["bottom"] <= 720, f"the map spans {lesson_map}"
    assert page.evaluate(SIDEWAYS_JS) <= 0, "the page scrolls sideways"
@pytest.mark.parametrize(("path", "lang"), FIRST_DRAWS)
def test_a_learn_pages_first_draw_has_no_english_sentence(japanese, path, lang):
    from tests.app.test_app_i18n import sentences

    url, page = japanese
    _open_learn(page, url, path, f"?lang={lang}")
    shown = page.locator('[data-testid="stApp"]').inner_text()
    english = [s for name in (path, *SHARED_WORDS) for s in sentences(name)]
    assert [s for s in english if s in shown] == []
    assert i18n.text(lang, path, "opening.title") in shown
    assert problems_on(page) == []


@pytest.mark.parametrize(("path", "lang"), PRESENTED)
def test_a_learn_page_keeps_its_layout_in_presentation_mode(japanese, path, lang):
    url, page = japanese
    _open_learn(page, url, path, f"?lang={lang}&projector=1")
    page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                           "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
    page.wait_for_timeout(800)
    page.wait_for_function(SETTLED_JS, timeout=30_000)
    screenshot(page, f"{path}-{lang}-presentation")
    assert problems_on(page) == []
    assert page.evaluate(f"() => {{ {UNZOOMED} return ({OVERLAPS_JS})(); }}") == []
    assert page.evaluate(f"() => {{ {UNZOOMED} return ({TOO_WIDE_JS})(); }}") == []
    assert overflowing(page) == []
