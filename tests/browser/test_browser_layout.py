"""What a class sees (issue 24), in Chromium driving a served app: every page of ``app/routes.py`` (Explore's
head view, model view and an intervention, and a tiny BERT of the models folder with its sections; Checkpoints'
overview and side by side; Train; the Lesson; the Learn pages; MiniLM, SmolLM2 and Whisper) at 1280 × 720 and
1920 × 1080, in normal and presentation mode, in the light and the dark theme, shows

- no two text boxes of a chart, or of neighbouring charts, intersecting (the rendered SVG text, rotation kept),
- no chart wider than its container,
- no error message,
- in presentation mode, the whole first view on the first screen: the first chart's bottom above the screen's
  bottom, and on Explore the model's output and in the Lesson the Next button on it too,
- every slider's value (above its thumb, and its ends) on one line, whole (in presentation mode the wrapping rule for
  prose once broke "3.50" into a column of characters, three of them hidden),
- in the dark theme, a dark page and no Plotly chart painted on a white background,
- every chart whose margins the app computes (``app.charts.margins.settle``) laid out with those margins: Plotly's
  automargin found nothing to push, so the chart was drawn once, not twice.

Screenshots (the whole page, its first screen and its last chart) go to ``$ATTNSCOPE_SCREENSHOTS`` (default
``screenshots-tmp/layout``, gitignored); the README shows first screens at 1280 × 720.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.ui.widgets import DIAGRAM_CLASS
from tests.helpers.browser import PUSHED_JS, app_in_chromium, problems_on, wait_until_idle
from tests.helpers.pretrained_files import write_tiny_bert

SIZES = [(1280, 720), (1920, 1080)]
BERT_TEXT = "the+animal+didn't+cross+the+street+because+it+was+tired"  # a tiny BERT in the models folder
PAGES = {  # name → (path and query, tab to open or None): every page of app/routes.py
    "explore": ("explore", None),  # the attention canvas's head view
    "explore-model-view": ("explore?map=model", None),  # the canvas's model view
    "explore-intervention": ("explore?beta=2", None),  # Before / After / Difference
    "explore-models-bert": (f"explore?ckpt=models:bert&text={BERT_TEXT}", None),  # + similarity, head finder
    "checkpoints-overview": ("checkpoints", None),  # the parameter bars
    "checkpoints-side-by-side": ("checkpoints", "Side by side"),
    "train": ("train", None),
    "research": ("research?ckpt=shipped:translation", None),
    "lesson": ("lesson?lesson_stage=1", None),  # stage 2: its first chart
    "how-it-learns": ("how-it-learns?learn_stage_n=2", None),  # stage 2: the masks, its first chart
    "positional": ("positional", None),
    "playground": ("playground", None),
    "masks": ("masks", None),
    "architecture": ("architecture", None),
    "self-attention": ("self-attention", None),
    "minilm": ("minilm", None),
    "smollm2": ("smollm2", None),
    "whisper": ("whisper", None),
}
SHOTS = Path(os.environ.get("ATTNSCOPE_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "screenshots-tmp" / "layout")

# Every visible SVG text of the charts as a screen quadrilateral (its rotation kept), and the pairs that
# overlap by more than 1 px (separating-axis test on the two quadrilaterals).
OVERLAPS_JS = """() => {
  const quads = [];
  const charts = document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"])');
  charts.forEach((chart, n) => {
    if (chart.offsetParent === null) return;
    const heading = chart.querySelector('.gtitle, .role-title-text');
    const name = `chart ${n + 1} [${heading ? heading.textContent.trim().slice(0, 40) : ''}]`;
    for (const el of chart.querySelectorAll('svg text')) {
      if (!el.textContent.trim() || el.closest('.hoverlayer')) continue;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden' || style.opacity === '0') continue;
      const b = el.getBBox();
      if (b.width === 0 || b.height === 0) continue;
      const m = el.getScreenCTM();
      const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
        .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
      quads.push({chart: name, text: `"${el.textContent.trim().slice(0, 30)}"`, pts});
    }
  });
  const axesOf = pts => [0, 1].map(i => {
    const dx = pts[i + 1][0] - pts[i][0], dy = pts[i + 1][1] - pts[i][1], n = Math.hypot(dx, dy) || 1;
    return [-dy / n, dx / n];
  });
  const span = (pts, ax) => { const v = pts.map(p => p[0] * ax[0] + p[1] * ax[1]); return [Math.min(...v), Math.max(...v)]; };
  const hit = (p, q) => [...axesOf(p), ...axesOf(q)].every(ax => {
    const [a0, a1] = span(p, ax), [b0, b1] = span(q, ax);
    return Math.min(a1, b1) - Math.max(a0, b0) > 1;
  });
  const found = [];
  for (let i = 0; i < quads.length; i++)
    for (let j = i + 1; j < quads.length; j++)
      if (hit(quads[i].pts, quads[j].pts)) found.push(`${quads[i].chart} ${quads[i].text} × ${quads[j].chart} ${quads[j].text}`);
  return found;
}"""

# In the dark theme: the app's background dark, and no chart drawn on a light (white) background.
NOT_DARK_JS = """() => {
  const light = c => { const v = (c.match(/[\\d.]+/g) || []).map(Number);
    return v.length >= 3 && (v.length < 4 || v[3] > 0.5) && v[0] + v[1] + v[2] > 600; };
  const found = [];
  if (light(getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor))
    found.push('the page is light');
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"] .main-svg .bg, '
    + '[data-testid="stMain"] [data-testid="stPlotlyChart"] svg.main-svg:first-of-type').forEach((el, n) => {
    const fill = el.style.fill || getComputedStyle(el).backgroundColor;
    if (el.closest('[data-testid="stPlotlyChart"]').offsetParent !== null && light(fill))
      found.push(`chart ${n + 1} is drawn on white`);
  });
  const dark = c => { const v = (c.match(/[\\d.]+/g) || []).map(Number);
    return v.length >= 3 && v[0] + v[1] + v[2] < 300; };
  document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]').forEach((chart, n) => {
    const text = chart.querySelector('.main-svg :is(.gtitle, .xtick text, .ytick text, .g-xtitle text)');
    if (chart.offsetParent !== null && text && dark(getComputedStyle(text).fill))
      found.push(`chart ${n + 1} writes its title or axes in a dark colour`);  // its light-theme colours kept
  });
  return found;
}"""

# A chart whose drawing reaches past its container's right edge (Streamlit clips it there).
TOO_WIDE_JS = """() => {
  const found = [];
  const charts = document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"])');
  charts.forEach((chart, n) => {
    if (chart.offsetParent === null) return;
    const box = chart.closest('[data-testid="stVerticalBlock"]').getBoundingClientRect();
    for (const drawn of chart.querySelectorAll('.main-svg, canvas, svg.marks')) {
      const r = drawn.getBoundingClientRect();
      if (r.width > 0 && r.right > box.right + 1)
        found.push(`chart ${n + 1}: ${Math.round(r.width)} px drawn, ${Math.round(box.right - r.left)} px room`);
    }
  });
  return found;
}"""

# A slider value (over the thumb or at the ends of the bar) taller than one line: wrapped, partly hidden.
BROKEN_VALUES_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] :is([data-testid="stSliderThumbValue"], [data-testid="stSliderTickBar"] > div)')]
  .filter(el => el.offsetParent !== null && el.innerText.trim())
  .filter(el => el.getBoundingClientRect().height
    > 1.8 * parseFloat(getComputedStyle(el.querySelector("p") || el).fontSize))
  .map(el => `${el.innerText.replace(/\\s+/g, ' ')} (${Math.round(el.getBoundingClientRect().height)} px tall)`)"""
# The topmost chart (a diagram, Architecture's drawing of the model: app.ui.widgets.diagram, counting as one): the top
# and bottom of its element's box as drawn on the unscrolled page (presentation mode draws a chart that would end
# below the first screen smaller: app/ui/presentation.js), and the bottom of what the page names in ``below``
# (Explore's output, the Lesson's Next), each null when absent.
FIRST_VIEW_JS = """selectors => {
  const boxes = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]'
    + ':not(:has([data-testid="stElementContainer"])):has(:is([data-testid="stPlotlyChart"], '
    + '[data-testid="stVegaLiteChart"], [data-attnscope-canvas], img.DIAGRAM))')]
    .filter(c => c.offsetParent !== null).map(c => c.getBoundingClientRect());
  const first = boxes.reduce((top, box) => (top === null || box.top < top.top ? box : top), null);
  const bottom = selector => { const el = document.querySelector(selector);
    return el && el.offsetParent !== null ? el.getBoundingClientRect().bottom : null; };
  return {top: first && first.top, bottom: first && first.bottom, below: selectors.map(bottom)};
}""".replace("DIAGRAM", DIAGRAM_CLASS)
OUTPUT = '[data-testid="stMain"] .st-key-prediction'  # Explore's output (app/views/parts/explore/inputs.py)
NEXT = '[data-testid="stMain"] .st-key-lesson_next'  # the Lesson's Next
# Unscaled first (presentation mode's fitted charts, app/ui/presentation.js): a chart's text and width are measured as
# Plotly and Vega laid them out; the page script scales it again on its next tick.
UNZOOMED = ("document.querySelectorAll('[data-testid=\"stMain\"] [style*=\"scale(\"]')"
            ".forEach(el => { el.style.transform = ''; el.style.marginBottom = ''; });")
ON_THE_FIRST_SCREEN = {"explore": [OUTPUT], "explore-model-view": [OUTPUT], "explore-intervention": [OUTPUT],
                       "explore-models-bert": [OUTPUT], "lesson": [NEXT]}


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    models = tmp_path_factory.mktemp("browser-layout-models")
    write_tiny_bert(models / "bert")  # Explore's encoder sections, for a model of the models folder
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNSCOPE_MODELS", str(models))
        with app_in_chromium(tmp_path_factory.mktemp("browser-layout-runs")) as (url, chromium):
            yield url, chromium


def _open(page, url: str, path: str, tab: str | None, presentation: bool) -> None:
    # every section of a Learn page open (they open their first alone otherwise), so each chart is checked
    page.goto(f"{url}/{path}{'&' if '?' in path else '?'}projector={int(presentation)}&all_sections=1")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
    wait_until_idle(page)
    if presentation:  # presentation mode folds the sidebar away once it is on
        page.wait_for_function("() => document.querySelector('[data-testid=\"stSidebar\"]')"
                               "?.getAttribute('data-collapsed') === 'true'", timeout=30_000)
    if tab:
        page.get_by_role("tab", name=tab).click()
        wait_until_idle(page)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] :is(.js-plotly-plot .main-svg, "
                           "[data-testid=\"stVegaLiteChart\"] :is(svg, canvas))') || document.querySelector("
                           "'[data-attnscope-canvas]')?.shadowRoot?.querySelector('.atc')?.canvas?.id",
                           timeout=60_000)
    page.wait_for_timeout(500)  # Plotly's relayout to the column's width


# Both themes at both sizes in both modes. Each page takes about 2 minutes on CI's 2 cores: CI checks every size and
# mode once, in alternating themes (each theme twice); the other four run with ``-m slow``.
MODES = [pytest.param(size, presentation, theme,
                      id=f"{size[0]}x{size[1]}-{'presentation' if presentation else 'normal'}-{theme}",
                      marks=[pytest.mark.slow] if (i + j + k) % 2 else [])
         for k, theme in enumerate(("light", "dark")) for i, size in enumerate(SIZES)
         for j, presentation in enumerate((False, True))]
DARK_JS = """paths => { for (const path of paths)
  localStorage.setItem(`stActiveTheme-${path}-v2`, JSON.stringify('Dark')); }"""  # what the ⋮ menu's "Dark" stores


def _dark(page) -> None:
    """Open every page in the dark theme, as the ⋮ menu's "Dark" does (before the app's own scripts run)."""
    paths = ["/"] + [f"/{path.split('?')[0]}" for path, _ in PAGES.values()]
    page.add_init_script(f"({DARK_JS})({paths!r})")


@pytest.mark.parametrize(("size", "presentation", "theme"), MODES)
def test_charts_fit_and_their_text_never_overlaps(browser, size, presentation, theme):
    url, chromium = browser
    page = chromium.new_page(viewport={"width": size[0], "height": size[1]})
    if theme == "dark":
        _dark(page)
    mode = ("presentation" if presentation else "normal") + ("-dark" if theme == "dark" else "")
    SHOTS.mkdir(parents=True, exist_ok=True)
    failures = []
    try:
        for name, (path, tab) in PAGES.items():
            _open(page, url, path, tab, presentation)
            failures += [f"{name}: shows an error: {problem[:200]}" for problem in problems_on(page)]
            first = _first_view(page, name, size[1]) if presentation else None
            shot = SHOTS / f"{name}-{size[0]}x{size[1]}-{mode}"
            page.screenshot(path=f"{shot}.png", full_page=True)
            page.screenshot(path=f"{shot}-first-screen.png")  # what the class sees first (the README's pictures)
            overlaps = page.evaluate(f"() => {{ {UNZOOMED} return ({OVERLAPS_JS})(); }}")
            wide = page.evaluate(f"() => {{ {UNZOOMED} return ({TOO_WIDE_JS})(); }}")
            last = page.locator('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], '
                                '[data-testid="stVegaLiteChart"]):visible')  # not those of hidden tabs
            if last.count():
                last.last.screenshot(path=f"{shot}-last-chart.png")
            failures += [f"{name}: text overlaps {overlap}" for overlap in overlaps]
            failures += [f"{name}: too wide {w}" for w in wide]
            failures += [f"{name}: margins pushed by automargin {pushed}" for pushed in page.evaluate(PUSHED_JS)]
            failures += [f"{name}: slider value broken over lines: {v}" for v in page.evaluate(BROKEN_VALUES_JS)]
            if presentation:
                failures += _first_view_cut(name, first, size[1])
            if theme == "dark":
                failures += [f"{name}: {bad}" for bad in page.evaluate(NOT_DARK_JS)]
    finally:
        page.close()
    assert failures == [], "\n".join(failures)


def _first_view(page, name: str, height: int) -> dict:
    """The first view's boxes (:data:`FIRST_VIEW_JS`), once the page script has fitted it (at most 3 s)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    below = ON_THE_FIRST_SCREEN.get(name, [])
    try:
        page.wait_for_function(f"s => ({FIRST_VIEW_JS})(s).bottom <= {height}", arg=below, timeout=3_000)
    except PlaywrightTimeout:
        pass  # measured as it is: the failure says where it ends
    return page.evaluate(FIRST_VIEW_JS, below)


def _first_view_cut(name: str, first: dict, height: int) -> list[str]:
    """What of a page's first view lies below its first screen (``height`` px): the first chart's bottom, and the
    output or Next button the page must show."""
    if first["top"] is None:
        return [f"{name}: no chart on the page"]
    cut = [f"{name}: the first chart runs from {first['top']:.0f} to {first['bottom']:.0f} px, past the first "
           f"{height} px"] if first["bottom"] > height else []
    return cut + [f"{name}: {what} ends at {bottom} px, past the first {height} px"
                  for what, bottom in zip(ON_THE_FIRST_SCREEN.get(name, []), first["below"])
                  if bottom is None or bottom > height]


STAGE_JS = "() => ([...document.querySelectorAll('[data-testid=\"stMain\"] h2')].map(h => h.innerText.trim())"
STAGE_JS += ".find(t => /^\\d+\\. /.test(t)) || '')"


def _stage_is(page, number: int, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(f"() => ({STAGE_JS})().startsWith('{number}. ')", timeout=timeout_ms)
    wait_until_idle(page)


def _press_until(page, key: str, stage: int) -> None:
    """Press ``key`` and wait for ``stage``; once more if the press landed while the page was still re-running
    (on a loaded machine Streamlit can drop a click made mid-run — a teacher would press again too)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.keyboard.press(key)
    try:
        _stage_is(page, stage, 20_000)
    except PlaywrightTimeout:
        wait_until_idle(page)
        page.keyboard.press(key)
        _stage_is(page, stage)


def test_clicker_keys_turn_the_lesson_pages_without_focusing_a_button(browser):
    """→ / PageDown / Space press Next and ← / PageUp press Back, from the page itself (nothing focused)."""
    url, chromium = browser
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(f"{url}/lesson?projector=1&lesson_stage=0")
        _stage_is(page, 1)
        page.wait_for_function("() => window.__attnscope?.clicker === true", timeout=30_000)  # the page script ran
        page.evaluate("() => document.activeElement?.blur()")  # nothing focused: the keys go to the page
        for key, stage in (("ArrowRight", 2), ("PageDown", 3), ("Space", 4), ("ArrowLeft", 3), ("PageUp", 2)):
            _press_until(page, key, stage)
            assert page.evaluate("() => document.activeElement.tagName") != "BUTTON"
        next_row = page.locator('.st-key-lesson_next').bounding_box()
        assert 0 <= next_row["y"] < 720, "the Next button is off the first screen"
    finally:
        page.close()


def test_the_dark_theme_is_kept_on_reload_of_another_page(browser):
    url, chromium = browser
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    background = "() => getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor"
    try:
        page.goto(f"{url}/train")
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
        wait_until_idle(page)
        light = page.evaluate(background)
        # What the ⋮ menu's "Dark" stores: Streamlit keeps it under the path the app was opened at.
        page.evaluate("() => localStorage.setItem('stActiveTheme-/train-v2', JSON.stringify('Dark'))")
        page.reload()
        page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
        dark = page.evaluate(background)
        assert dark != light
        page.wait_for_function("() => localStorage.getItem('stActiveTheme-/checkpoints-v2') === JSON.stringify('Dark')",
                               timeout=30_000)  # the page script copies the choice to every page's key
        for path in ("checkpoints", "lesson", ""):
            page.goto(f"{url}/{path}")
            page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
            assert page.evaluate(background) == dark, f"/{path} reloads in the light theme"
    finally:
        page.close()
