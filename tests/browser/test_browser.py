"""Real-browser tests: ``streamlit run`` on loopback, driven by Playwright in Debian's Chromium.

They type, click and look like a user: every page opens without an error, the Explore page
reacts to text, kind, layer, head and the causal mask, and the Train page trains a model that
then appears in the checkpoint picker.
"""

from __future__ import annotations

import re

import pytest

from app import routes
from core import ModelConfig, Tokenizer, Transformer, explain, save_checkpoint
from tests.helpers.paths import REVERSE
from tests.helpers.browser import app_in_chromium, choose_option, overflowing, problems_on, screenshot, wait_until_idle

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
def browser_runs(tmp_path_factory):
    """The served app's runs folder (its server's console output is ``server.log`` there)."""
    runs = tmp_path_factory.mktemp("browser-runs")
    _big_models(runs)
    return runs


@pytest.fixture(scope="module")
def browser_page(browser_runs):
    runs = browser_runs
    with app_in_chromium(runs) as (url, browser):
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        yield url, page, dialogs


def _big_models(runs) -> None:
    """Two random language models: 30 layers × 9 heads ("run:deep-grid"), and one head over 2048 tokens
    ("run:long-head")."""
    import torch

    chars = Tokenizer.train("char", ["abcdefgh"])
    torch.manual_seed(0)
    for name, sizes in (("deep-grid", dict(d_model=18, n_heads=9, d_ff=18, max_len=64, n_decoder_layers=30)),
                        ("long-head", dict(d_model=8, n_heads=1, d_ff=8, max_len=2048, n_decoder_layers=1))):
        model = Transformer(ModelConfig(architecture="decoder", tgt_vocab_size=chars.vocab_size, dropout=0.0,
                                        n_encoder_layers=1, **sizes)).eval()
        save_checkpoint(runs / f"{name}.safetensors", model, {"target": chars}, task="lm")


@pytest.fixture
def big_runs():
    """The models of :func:`_big_models` (written when the served app's runs folder is made)."""
    return ["run:deep-grid", "run:long-head"]


# Explore's attention canvas (app/ui/canvas): its root in the component's shadow root, and the drawing state on it.
CANVAS = "document.querySelector('[data-attnscope-canvas]').shadowRoot.querySelector('.atc')"
CANVAS_PNG_JS = f"() => {CANVAS}.canvas.mapCanvas.toDataURL()"


def _wait_for_canvas(page) -> None:
    page.wait_for_function(f"() => {{ try {{ return {CANVAS}.canvas.id; }} catch (e) {{ return false; }} }}",
                           timeout=90_000)


def _main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def _wait_for_text(page, text: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        "t => (document.querySelector('[data-testid=\"stMain\"]')?.innerText || '').includes(t)", arg=text,
        timeout=timeout_ms,
    )
    wait_until_idle(page)


def _translated(page, url: str):
    """Explore with the shipped translation model, a lecture sentence typed and translated; returns the text area."""
    _open(page, f"{url}/?ckpt=shipped:translation", "Explore attention")
    text = page.locator(".st-key-text textarea")
    text.fill("the small cat sees the red car")
    text.press("Control+Enter")
    _wait_for_text(page, "el gato pequeño ve el coche rojo")
    return text


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
    text = _translated(page, url)

    page.locator(".st-key-kind").get_by_text("Cross-attention").click()
    wait_until_idle(page)
    page.wait_for_function(f"() => {CANVAS}.canvas.h.kind === 'cross'", timeout=30_000)
    for control, key in (("layer", "ArrowDown"), ("head", "ArrowRight")):  # chosen in the browser, keys on the map
        before = page.evaluate(CANVAS_PNG_JS)
        page.evaluate(f"() => {CANVAS}.focus()")
        page.keyboard.press(key)
        assert page.evaluate(CANVAS_PNG_JS) != before, f"changing the {control} did not redraw the map"
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
        choose_option(page, page.locator(f".st-key-{key}"),
                      page.get_by_role("option").filter(has_text=re.compile(f"^{choice}\\b")).first)
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


# ----------------------------------------------------------------------------- what a class sees
ROUTE_PATHS = ["" if r.script == routes.EXPLORE else r.url_path for pages in routes.SECTIONS.values() for r in pages]
SIZES = [(1280, 720), (1920, 1080)]
THUMB_JS = f"""([layer, head]) => {{ const c = {CANVAS}.canvas, g = c.grid, r = c.stage.getBoundingClientRect();
  return [r.left + g.x + head * (g.tw + g.gap) + g.tw / 2, r.top + g.y + layer * (g.th + g.gap) + g.th / 2]; }}"""
TITLE_JS = f"() => {CANVAS}.querySelector('.atc-title').textContent"


# Streamlit 1.67 shows a select box's value in an <input role="combobox">, which never wraps: a value
# wider than the input is cut off. A segmented control or pills row scrolls sideways when its options
# do not fit (its overflow is "auto", which OVERFLOW_JS leaves out), hiding the options past the edge.
CUT_OFF_JS = """() => {
  const found = [];
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const folded = sidebar && (sidebar.getAttribute('aria-expanded') === 'false'
    || sidebar.getBoundingClientRect().right <= 1);  // presentation mode folds it away: off screen by design
  const boxes = document.querySelectorAll('[data-testid="stSelectbox"] input[role="combobox"], '
    + '[data-testid="stButtonGroup"] > [role]');
  for (const el of boxes) {
    if (el.offsetParent === null || el.clientWidth === 0 || el.scrollWidth <= el.clientWidth + 1) continue;
    if (folded && el.closest('[data-testid="stSidebar"]')) continue;
    const name = el.getAttribute('aria-label') || el.closest('[data-testid]').getAttribute('data-testid');
    const text = (el.value || el.innerText || '').trim().slice(0, 50);
    found.push(`${name}: "${text}" (${el.scrollWidth} > ${el.clientWidth})`);
  }
  return found;
}"""
FIRST_CHART_JS = f"""() => {{ const c = {CANVAS}.canvas, r = c.stage.getBoundingClientRect();
  return {{top: r.top + c.plot.y, bottom: r.top + c.plot.y + c.plot.h, left: r.left + c.plot.x,
          right: r.left + c.plot.x + c.plot.w, width: innerWidth, height: innerHeight}}; }}"""


def _wait_for_plots(page, count: int = 1) -> None:
    page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot .hm image').length >= {count}",
                           timeout=90_000)


@pytest.mark.parametrize("projector", [False, True], ids=["normal", "projector"])
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_every_page_fits_its_boxes(browser_page, size, projector):
    """No text, button or chart is wider than its box on any page (dataframes, tables and the text
    area scroll by design and are left out; see tests/helpers/browser.OVERFLOW_JS)."""
    url, page, _ = browser_page
    page.set_viewport_size({"width": size[0], "height": size[1]})
    try:
        for path in ROUTE_PATHS:
            page.goto(f"{url}/{path}?projector={int(projector)}")
            page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=60_000)
            wait_until_idle(page)
            if path == "":
                _wait_for_canvas(page)
            assert problems_on(page) == [], f"/{path} shows errors"
            assert overflowing(page) == [], f"/{path} at {size} (projector={projector}) overflows"
            assert page.evaluate(CUT_OFF_JS) == [], f"/{path} at {size} (projector={projector}) cuts off a value"
            screenshot(page, f"{path or 'explore'}-{size[0]}x{size[1]}{'-projector' if projector else ''}")
    finally:
        page.set_viewport_size({"width": 1500, "height": 1000})


@pytest.mark.parametrize("size", [(1400, 1000), (1280, 720)], ids=["1400x1000", "1280x720"])
def test_the_first_attention_chart_is_in_view_without_scrolling(browser_page, size):
    """A new user's first look at the start page (the default checkpoint and example, normal mode):
    the head view's heatmap lies wholly inside the window, and the prediction is on screen too."""
    url, page, _ = browser_page
    page.set_viewport_size({"width": size[0], "height": size[1]})
    try:
        page.goto(f"{url}/")
        wait_until_idle(page)
        _wait_for_canvas(page)
        box = page.evaluate(FIRST_CHART_JS)
        assert 0 <= box["top"] < box["bottom"] <= box["height"], box
        assert 0 <= box["left"] < box["right"] <= box["width"], box
        assert page.evaluate(TITLE_JS).endswith("layer 1, head 1")
        prediction = page.locator('[data-testid="stMain"] .st-key-prediction').first.bounding_box()
        assert prediction is not None and prediction["y"] + prediction["height"] <= size[1]
        screenshot(page, f"explore-first-look-{size[0]}x{size[1]}")
    finally:
        page.set_viewport_size({"width": 1500, "height": 1000})


def test_head_view_labels_every_token_of_a_12_token_input(browser_page):
    url, page, _ = browser_page
    text = "abcdefghijkl"
    expected = [f"{i}:{t}" for i, t in enumerate(explain(REVERSE, text).source_tokens)]
    assert len(expected) >= 12
    page.goto(f"{url}/?ckpt=shipped:reverse&view=head&kind=encoder&text={text}")
    wait_until_idle(page)
    _wait_for_canvas(page)
    ticks = page.evaluate(f"""() => {{ const c = {CANVAS}.canvas;
        return [[...c.colTicks.values()], [...c.rowTicks.values()]].map(ts => ts.map(t => t.textContent)); }}""")
    assert ticks[0] == expected and ticks[1] == expected  # every token, both axes, in order


def test_typed_lecture_sentences_translate_and_the_cross_attention_swaps_adjective_and_noun(browser_page):
    url, page, _ = browser_page
    page.goto(f"{url}/?ckpt=shipped:translation&view=head&kind=cross&layer=3&head=1")
    wait_until_idle(page)
    text = page.locator(".st-key-text textarea")
    for typed, spanish in (("I have cats", "yo tengo gatos"), ("The black cat", "el gato negro")):
        text.fill(typed)  # capitals as a teacher types them: the page lower-cases and says so
        text.press("Control+Enter")
        _wait_for_text(page, spanish)
    page.wait_for_function(f"() => {CANVAS}.canvas.h.cols.length === 3", timeout=60_000)
    drawn = page.evaluate(f"""() => {{ const c = {CANVAS}.canvas, h = c.h;
        return {{z: h.rows.map((_, q) => h.cols.map((_, k) => c.value(c.layer, c.head, q, k))), x: h.cols}}; }}""")
    assert drawn["x"] == ["0:the", "1:black", "2:cat"]
    looks_at = [max(range(3), key=row.__getitem__) for row in drawn["z"]]  # each decoder row's strongest key
    # the row after "el" predicts "gato" and reads "cat"; the row after "gato" predicts "negro" and reads "black"
    assert looks_at[1:3] == [2, 1], drawn["z"]
    assert "The input was lower-cased" in _main_text(page)


def test_clicking_a_grid_thumbnail_opens_that_head(browser_page):
    url, page, _ = browser_page
    page.goto(f"{url}/?ckpt=shipped:reverse&map=model&kind=encoder")
    wait_until_idle(page)
    _wait_for_canvas(page)
    page.evaluate(f"() => {CANVAS}.scrollIntoView()")
    x, y = page.evaluate(THUMB_JS, [1, 2])  # 0-based: layer 2, head 3
    page.mouse.click(x, y)
    page.wait_for_function(f"() => ({TITLE_JS})().endsWith('layer 2, head 3')", timeout=10_000)
    page.evaluate(f"() => {CANVAS}.querySelector('button[data-action=pin]').click()")
    page.wait_for_url(re.compile(r"layer=2&head=3"), timeout=30_000)  # the share link follows the pinned head
    screenshot(page, "explore-grid-click")


def test_a_30_layer_9_head_grid_and_a_2048_token_head_are_drawn(browser_page, big_runs):
    """The canvas's model view of 270 maps, and a 2048 × 2048 head as a max-pooled overview with its notice; the
    draw times are printed (not asserted: CI machines vary)."""
    url, page, _ = browser_page
    page.goto(f"{url}/?ckpt=run:deep-grid&map=model&text=abcdefghabcdefghabcdefgh")
    wait_until_idle(page)
    started = page.evaluate("() => performance.now()")
    _wait_for_canvas(page)
    grid_ms = page.evaluate("() => performance.now()") - started
    assert page.evaluate(f"() => [{CANVAS}.canvas.h.layers, {CANVAS}.canvas.h.heads, {CANVAS}.dataset.view]") == [
        30, 9, "model"]
    long_text = "ab" * 1023 + "a"  # 2047 characters + <bos> = 2048 tokens
    page.goto(f"{url}/?ckpt=run:long-head&map=head&kind=decoder")
    wait_until_idle(page)
    box = page.locator(".st-key-text textarea")
    box.fill(long_text)
    started = page.evaluate("() => performance.now()")
    box.press("Control+Enter")
    page.wait_for_function(f"() => {{ try {{ return {CANVAS}.canvas.h.tq === 2048; }} catch (e) {{ return false; }} }}",
                           timeout=180_000)  # a loaded CI machine is slow
    head_ms = page.evaluate("() => performance.now()") - started
    assert "max-pooled" in page.evaluate(f"() => {CANVAS}.querySelector('.atc-note').textContent")
    print(f"model view 30×9 drawn in {grid_ms:.0f} ms; 2048-token head in {head_ms:.0f} ms")
    screenshot(page, "explore-2048-head")


# ----------------------------------------------------------------------------- each chart drawn once
# Counts every full Plotly draw (``plotly_beforeplot``: a redraw that changes nothing is not one) of each chart
# <div> created after this call: its event emitter is caught as Plotly gives it one, before the first draw.
COUNT_DRAWS_JS = """() => {
  const kept = new WeakMap(), draws = window.__draws = new Map();
  Object.defineProperty(HTMLDivElement.prototype, '_ev', {configurable: true, get() { return kept.get(this); },
    set(emitter) {
      kept.set(this, emitter);
      emitter?.on?.('plotly_beforeplot', () => { draws.set(this, (draws.get(this) || 0) + 1); });
    }});
}"""
SIDEBAR_WATCH_JS = """() => { window.__sidebarChanges = [];
  new MutationObserver(records => window.__sidebarChanges.push(...records.map(r => r.type + ' ' + (r.attributeName || ''))))
    .observe(document.querySelector('[data-testid="stSidebar"]'),
             {subtree: true, childList: true, attributes: true, characterData: true}); }"""


def test_a_text_edit_reruns_the_explore_body_and_leaves_the_sidebar_alone(browser_page):
    """Explore's body is one fragment (issue 23): a new text reruns it and redraws what it shows; the sidebar (the
    checkpoint picker, the toggles, the page list) is neither rerun nor redrawn."""
    url, page, _ = browser_page
    text = _translated(page, url)
    page.evaluate(SIDEBAR_WATCH_JS)
    text.fill("the red car")
    text.press("Control+Enter")
    page.wait_for_function("t => !document.querySelector('[data-testid=\"stMain\"]').innerText.includes(t)",
                           arg="el gato pequeño", timeout=60_000)  # the body ran again: a new translation
    wait_until_idle(page)
    assert page.evaluate("window.__sidebarChanges") == []


DRAWS_JS = """() => [...window.__draws].filter(([div]) => div.isConnected && div._fullLayout?.width !== undefined)
  .map(([, n]) => n)"""


@pytest.mark.parametrize(("path", "act"), [
    ("masks", lambda page: page.locator(".st-key-mask_len").get_by_role("slider").press("ArrowRight")),
    ("?ckpt=shipped:translation&view=summary", lambda page: (page.locator(".st-key-text textarea").fill(
        "the small dog sees a cat"),
                                                page.locator(".st-key-text textarea").press("Control+Enter"))),
], ids=["masks-slider", "explore-edit"])
def test_each_chart_is_drawn_once_per_rerun(browser_page, path, act):
    """Streamlit's theme step hands Plotly a restyled copy of every figure after its first draw, which Plotly drew
    again in full; the app's figures carry their look themselves (app/charts/look.py), so a rerun draws each once."""
    url, page, _ = browser_page
    page.goto(f"{url}/{path}")
    _wait_for_plots(page)
    wait_until_idle(page)
    page.evaluate(COUNT_DRAWS_JS)
    act(page)
    page.wait_for_function(f"() => ({DRAWS_JS})().length > 0", timeout=60_000)
    wait_until_idle(page)
    page.wait_for_timeout(1500)  # a second draw comes a frame or more after the first
    draws = page.evaluate(DRAWS_JS)
    assert draws and all(n == 1 for n in draws), f"draws per redrawn chart: {draws}"


def test_the_server_starts_and_serves_every_page_without_a_console_warning(browser_page, browser_runs):
    """``streamlit run`` prints its banner and nothing else while it starts and every page opens (the warm-up's
    caches once warned of a missing script run context and runtime)."""
    url, page, _ = browser_page
    for path, heading in PAGES.items():
        _open(page, f"{url}/{path}", heading)
    log = (browser_runs / "server.log").read_text(errors="replace").splitlines()
    banner = ("You can now view your Streamlit app", "URL: http")
    info = re.compile(r"^\S+ \S+ INFO \S")  # the INFO log of the app and of core (bench.browser_serve adds it)
    printed = [line for line in log if line.strip() and not line.strip().startswith(banner) and not info.match(line)]
    assert printed == [], "\n".join(printed)


@pytest.mark.parametrize("fmt", ["png", "svg", "html"])
def test_a_plotly_chart_exports_as_png_svg_and_html_named_after_what_it_shows(browser_page, fmt):
    """The Export chart menu's buttons save the chart drawn on screen (the positional-encoding table): a PNG and an
    SVG drawn by Plotly in the browser and a standalone page, each named after the chart."""
    url, page, _ = browser_page
    _open(page, f"{url}/positional", "Positional encoding")
    _wait_for_plots(page)
    page.locator('[data-testid="stMain"] [data-testid="stPopover"] button').filter(has_text="Export chart").first.click()
    menu = page.locator('[data-testid="stPopoverBody"]')
    assert "vector picture" in menu.inner_text() and "interactive web page" in menu.inner_text()
    with page.expect_download(timeout=60_000) as download:
        menu.get_by_role("button", name=fmt.upper(), exact=True).click()
    saved = download.value
    assert saved.suggested_filename == f"positional-encoding.{fmt}"
    content = open(saved.path(), "rb").read()
    starts = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<svg", "html": b"<!doctype html>"}[fmt]
    assert content.lstrip()[:len(starts)].lower() == starts.lower()
    assert fmt == "png" or b"PE for" in content
    page.keyboard.press("Escape")


def test_the_model_uploader_says_its_real_limit(browser_page):
    """The drop zone reads the server's limit, 600 MB (Streamlit's own text rounded it to "1GB per file")."""
    url, page, _ = browser_page
    _open(page, f"{url}/masks?projector=0", "Masks")
    expand = page.locator('[data-testid="stExpandSidebarButton"]')
    if expand.count() and expand.first.is_visible():  # folded by a presentation-mode test before this one
        expand.first.click()
    page.locator('[data-testid="stSidebar"]').get_by_text("Upload a model").click()
    zone = page.locator('[data-testid="stSidebar"] [data-testid="stFileUploaderDropzoneInstructions"] span').first
    zone.wait_for(timeout=30_000)
    shown = zone.evaluate("el => [getComputedStyle(el).fontSize, getComputedStyle(el, '::after').content]")
    assert shown == ["0px", '"600 MB per file"']
    label = page.locator('[data-testid="stSidebar"] [data-testid="stFileUploader"] label').first.inner_text()
    assert label.endswith("up to 600 MB")
