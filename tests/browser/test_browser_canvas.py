"""The attention canvas in Chromium (app/ui/canvas): on Explore with the shipped reverse model, one served app for
the module. A head switch repaints the canvas; hovering and switching send nothing to the server; a pinned head
reaches the share link and a reload restores it; the dark theme paints light labels on a dark ground; labels are
at least 12 px (18 px presenting); the lines' widths are the weights; a 2,048-token map draws and zooms; the PNG
export downloads."""

from __future__ import annotations

import base64
import json
import time

import numpy as np
import pytest

from app.ui.canvas import payload
from core import explain
from tests.helpers.browser import app_in_chromium, wait_until_idle
from tests.helpers.paths import REVERSE

TEXT = "abcde"
ROOT = "document.querySelector('[data-attnscope-canvas]').shadowRoot.querySelector('.atc')"
PIXELS = f"() => {ROOT}.canvas.mapCanvas.toDataURL()"
STATE = f"() => {{ const r = {ROOT}; return [r.dataset.view, +r.dataset.layer, +r.dataset.head]; }}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with app_in_chromium(tmp_path_factory.mktemp("browser-canvas-runs")) as (url, chromium):
        yield url, chromium


def _open(chromium, url: str, query: str = "", **context):
    page = chromium.new_context(viewport={"width": 1280, "height": 720}, **context).new_page()
    frames: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: frames.append(payload)))
    page.goto(f"{url}/explore?ckpt=shipped:reverse&text={TEXT}{query}")
    wait_until_idle(page, 90_000)
    page.wait_for_function(f"() => {{ try {{ return {ROOT}.canvas.id; }} catch (e) {{ return false; }} }}",
                           timeout=60_000)
    return page, frames


def _plot(page) -> dict:
    """The head view's plot in page coordinates."""
    return page.evaluate(f"""() => {{ const c = {ROOT}.canvas, r = c.stage.getBoundingClientRect();
        return {{x: r.left + c.plot.x, y: r.top + c.plot.y, w: c.plot.w, h: c.plot.h}}; }}""")


def test_hover_and_switch_repaint_in_the_browser_with_no_message(served):
    url, chromium = served
    page, frames = _open(chromium, url)
    before = page.evaluate(PIXELS)
    page.wait_for_timeout(500)
    sent = len(frames)
    box = _plot(page)
    for i in range(40):  # a hover sweep over every row
        page.mouse.move(box["x"] + box["w"] * (i % 5 + 0.5) / 5, box["y"] + box["h"] * (i / 40))
    status = page.evaluate(f"() => {ROOT}.querySelector('.atc-status').textContent")
    assert "weight" in status and "query" in status
    page.evaluate(f"() => {ROOT}.focus()")
    page.keyboard.press("ArrowRight")  # head 2
    assert page.evaluate(STATE) == ["head", 0, 1]
    after = page.evaluate(PIXELS)
    page.keyboard.press("ArrowDown")  # layer 2
    assert page.evaluate(STATE) == ["head", 1, 1]
    page.evaluate(f"() => {ROOT}.querySelector('button[data-view=model]').click()")
    page.evaluate(f"() => {ROOT}.querySelector('button[data-view=head]').click()")
    page.wait_for_timeout(800)
    assert after != before  # the pixels changed with the head
    assert len(frames) == sent, "hovering and switching heads sent messages to the server"
    page.context.close()


def test_a_pinned_head_reaches_the_link_and_a_reload_restores_it(served):
    url, chromium = served
    page, _ = _open(chromium, url)
    page.evaluate(f"() => {ROOT}.focus()")
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    page.evaluate(f"() => {ROOT}.querySelector('button[data-action=pin]').click()")
    page.wait_for_function("() => location.search.includes('head=3') && location.search.includes('layer=2')",
                           timeout=30_000)
    page.reload()
    wait_until_idle(page, 90_000)
    page.wait_for_function(f"() => {{ try {{ return {ROOT}.canvas.id; }} catch (e) {{ return false; }} }}")
    assert page.evaluate(STATE) == ["head", 1, 2]
    page.context.close()


def test_a_new_input_keeps_the_head_the_reader_chose(served):
    """The reader's head and layer (chosen in the browser, not pinned) stay when new maps arrive for a new input: the
    canvas keeps them while Python's pin is unchanged, as BertViz keeps its head across inputs."""
    url, chromium = served
    page, _ = _open(chromium, url)
    page.evaluate(f"() => {ROOT}.focus()")
    for key in ("ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    first = page.evaluate(f"() => {ROOT}.canvas.id")
    text = page.locator(".st-key-text textarea")
    text.fill("abcdefg")
    text.press("Control+Enter")
    page.wait_for_function(f"id => {ROOT}.canvas.id !== id", arg=first, timeout=60_000)
    wait_until_idle(page)
    assert page.evaluate(f"() => {ROOT}.canvas.h.tq") == len(explain(REVERSE, "abcdefg").source_tokens)
    assert page.evaluate(STATE) == ["head", 1, 1]
    page.context.close()


def test_dark_theme_paints_light_labels_on_a_dark_ground(served):
    url, chromium = served
    page, _ = _open(chromium, url, color_scheme="dark")
    assert page.evaluate(f"() => {ROOT}.classList.contains('dark')")
    stage = page.evaluate(f"() => {{ const r = {ROOT}.canvas.stage.getBoundingClientRect(); "
                          "return [r.left, r.top]; }")
    box = _plot(page)
    shot = page.screenshot(clip={"x": stage[0], "y": box["y"], "width": box["x"] - stage[0] - 2, "height": box["h"]})
    from io import BytesIO

    from PIL import Image
    grey = np.asarray(Image.open(BytesIO(shot)).convert("L"), dtype=np.float32)  # the row labels' strip
    assert np.median(grey) < 60 and grey.max() > 170  # a dark ground, light label text
    page.context.close()


@pytest.mark.parametrize("projector, smallest", [("0", 12), ("1", 18)])
def test_labels_are_large_enough(served, projector, smallest):
    url, chromium = served
    page, _ = _open(chromium, url, f"&projector={projector}")
    for view in ("head", "model", "lines", "neuron"):
        page.evaluate(f"() => {ROOT}.querySelector('button[data-view={view}]').click()")
        if view == "neuron":  # its queries and keys come in one rerun
            page.wait_for_function(f"() => {ROOT}.canvas.h.neurons && {ROOT}.dataset.view === 'neuron'",
                                   timeout=60_000)
        sizes = page.evaluate(f"() => [...{ROOT}.querySelectorAll('svg text')]"
                              ".map(t => parseFloat(getComputedStyle(t).fontSize))")
        assert sizes and min(sizes) >= smallest, (view, min(sizes))
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 1280  # nothing wider than the screen
    page.context.close()


def test_line_widths_are_the_weights(served):
    url, chromium = served
    page, _ = _open(chromium, url)
    page.evaluate(f"() => {ROOT}.querySelector('button[data-view=lines]').click()")
    lines = page.evaluate(f"""() => [...{ROOT}.querySelectorAll('.atc-lines line')].map(l => [
        +l.dataset.head, +l.dataset.q, +l.dataset.k, parseFloat(l.getAttribute('stroke-width'))])""")
    expected = explain(REVERSE, TEXT).attention["encoder"][0]  # (H, Tq, Tk) layer 1
    sent = expected.astype(np.float16).astype(np.float32)  # what the payload carries for hover and lines
    drawn = {(h, q, k) for h, q, k, _ in lines}
    wanted = {tuple(int(i) for i in at) for at in np.argwhere(sent >= 0.01)}
    assert drawn == wanted, (wanted - drawn, [sent[c] for c in wanted - drawn])  # a line for each weight ≥ 0.01
    for head, q, k, width in lines:
        assert width / 8 == pytest.approx(expected[head, q, k], abs=1e-3)
    page.evaluate(f"() => {ROOT}.querySelector('.atc-legend [data-head=\"0\"]').dispatchEvent(new MouseEvent('dblclick'))")
    shown = page.evaluate(f"() => new Set([...{ROOT}.querySelectorAll('.atc-lines line')].map(l => l.dataset.head)).size")
    assert shown == 1  # a double-click shows that head alone
    page.context.close()


def test_a_2048_token_map_draws_and_zooms(served):
    url, chromium = served
    page, _ = _open(chromium, url)
    tokens = 2048
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((1, 2, tokens, tokens), dtype=np.float32)
    scores[0, :, np.arange(tokens), np.arange(tokens)] += 12  # a sharp diagonal the overview must keep
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    labels = [f"{i}:t{i}" for i in range(tokens)]
    data = payload.encode_maps(list(weights), labels, labels, shape=weights.shape, sent=[0], look=payload.Look(
        title="Synthetic"), pinned={"layer": 0, "head": 0, "view": "head"})
    assert payload.bytes_per_cell(data) <= 1.1
    took = page.evaluate(f"""(b64) => {{ const bin = atob(b64), bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        const c = {ROOT}.canvas, t0 = performance.now(); c.gpu = 'off'; c.receive(bytes);
        return performance.now() - t0; }}""",
                         base64.b64encode(data).decode())
    assert took < 3000
    diagonal, off = page.evaluate(f"""() => {{ const c = {ROOT}.canvas, p = c.plot, ctx = c.mapCanvas.getContext('2d'),
        d = window.devicePixelRatio || 1;
        const brightest = (x, y) => {{ const px = ctx.getImageData((x - 3) * d, (y - 3) * d, 7 * d, 7 * d).data;
          let top = 0; for (let i = 0; i < px.length; i += 4) top = Math.max(top, px[i] + px[i + 1] + px[i + 2]);
          return top; }};
        return [brightest(p.x + p.w / 2, p.y + p.h / 2), brightest(p.x + p.w * 0.8, p.y + p.h * 0.2)]; }}""")
    assert diagonal > 450 and off < 250, (diagonal, off)  # the overview keeps the diagonal's peaks (max-pooled)
    whole = page.evaluate(PIXELS)
    box = _plot(page)
    page.mouse.move(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    started = time.monotonic()
    for _ in range(12):
        page.mouse.wheel(0, -120)
    page.wait_for_timeout(300)
    window = page.evaluate(f"() => {ROOT}.canvas.window")
    assert window["w"] < tokens / 8 and time.monotonic() - started < 10
    assert page.evaluate(PIXELS) != whole
    page.wait_for_function(f"() => {ROOT}.canvas.drawnLevel === 0", timeout=20_000)  # refined to one cell a cell
    cell, drawn = page.evaluate(f"""() => {{ const c = {ROOT}.canvas, p = c.plot, w = c.window,
        d = window.devicePixelRatio || 1, q = Math.floor(w.y0 + w.h * 0.61), k = Math.floor(w.x0 + w.w * 0.37);
        const x = p.x + (k + 0.5 - w.x0) / w.w * p.w, y = p.y + (q + 0.5 - w.y0) / w.h * p.h;
        return [[q, k], [...c.mapCanvas.getContext('2d').getImageData(Math.floor(x * d), Math.floor(y * d), 1, 1)
          .data]]; }}""")
    sections = payload.decode(data)[1]
    colour = sections["colour"][0, 0, cell[0], cell[1]]
    assert drawn[:3] == sections["lut"][colour].tolist()  # the cell's own colour, not a pooled block's
    labels_shown = page.evaluate(f"() => {ROOT}.querySelectorAll('svg .tick text').length")
    assert labels_shown > 0
    gl_shot = f"() => {ROOT}.canvas.glCanvas.toDataURL()"
    page.evaluate(f"() => {{ const c = {ROOT}.canvas; c.gpu = 'on'; c.window = null; c.render(); }}")
    assert page.evaluate(f"() => {ROOT}.canvas.glCanvas.style.display") == "block"  # WebGL2 (software here)
    overview = page.evaluate(gl_shot)
    for _ in range(6):
        page.mouse.wheel(0, -120)
    page.wait_for_timeout(300)
    assert page.evaluate(f"() => {ROOT}.canvas.window.w") < tokens / 2 and page.evaluate(gl_shot) != overview
    page.context.close()


def test_the_neuron_view_shows_the_pairs_q_k_and_score_with_no_message(served):
    url, chromium = served
    page, frames = _open(chromium, url)
    assert page.evaluate(f"() => {ROOT}.canvas.h.neurons") is None  # not sent until asked for
    page.evaluate(f"() => {ROOT}.querySelector('button[data-view=neuron]').click()")
    page.wait_for_function(f"() => {ROOT}.canvas.h.neurons && {ROOT}.dataset.view === 'neuron'", timeout=60_000)
    page.wait_for_timeout(500)
    sent, box = len(frames), _plot(page)
    for i in range(30):  # a sweep over the map, ending on query 3, key 1
        page.mouse.move(box["x"] + box["w"] * (i % 5 + 0.5) / 5, box["y"] + box["h"] * (i / 30))
    page.mouse.move(box["x"] + box["w"] * 1.5 / 5, box["y"] + box["h"] * 3.5 / 5)
    page.wait_for_timeout(200)
    shown = json.loads(page.evaluate(f"() => {ROOT}.dataset.neuron"))
    traced = explain(REVERSE, TEXT, maps="on_demand").attention["encoder"]
    q = traced.q[0, 0, 3].astype(np.float16).astype(np.float64)  # what the payload carries
    k = traced.k[0, traced.kv_head_of[0], 1].astype(np.float16).astype(np.float64)
    assert (shown["q"], shown["k"]) == (3, 1)
    assert shown["dot"] == pytest.approx(q @ k, rel=1e-6)
    assert shown["score"] == pytest.approx(q @ k / np.sqrt(q.size), rel=1e-6)  # scale 1/√d_k
    assert shown["weight"] == pytest.approx(explain(REVERSE, TEXT).attention["encoder"][0, 0, 3, 1], abs=1e-3)
    status = page.evaluate(f"() => {ROOT}.querySelector('.atc-status').textContent")
    assert f"score {shown['score']:.3f}" in status
    assert len(frames) == sent, "hovering the neuron view sent messages to the server"
    page.context.close()


GL_VS_2D = f"""() => {{ const c = {ROOT}.canvas, p = c.plot, d = window.devicePixelRatio || 1, h = c.h;
    const at = (ctx, x0, y0) => {{ const out = [];
      for (let q = 0; q < h.tq; q++) for (let k = 0; k < h.tk; k++) {{
        const x = Math.floor(x0 + (k + 0.5) * p.w / h.tk * d), y = Math.floor(y0 + (q + 0.5) * p.h / h.tq * d);
        out.push([...ctx.getImageData(x, y, 1, 1).data]); }}
      return out; }};
    c.gpu = 'off'; c.render();
    const flat = at(c.mapCanvas.getContext('2d'), p.x * d, p.y * d), gl2d = c.glCanvas.style.display;
    c.gpu = 'on'; c.render();
    const copy = document.createElement('canvas'); copy.width = c.glCanvas.width; copy.height = c.glCanvas.height;
    const ctx = copy.getContext('2d'); ctx.drawImage(c.glCanvas, 0, 0);
    return [flat, at(ctx, 0, 0), gl2d, c.glCanvas.style.display, !!c.glMap]; }}"""


def test_webgl2_and_canvas_2d_paint_the_same_colours_and_2d_is_the_fallback(served):
    url, chromium = served
    page, _ = _open(chromium, url)
    flat, gl, shown_2d, shown_gl, has_gl = page.evaluate(GL_VS_2D)
    assert has_gl and shown_2d == "none" and shown_gl == "block"  # WebGL2 (in software here) drew the second
    flat, gl = np.array(flat), np.array(gl)  # (cells, RGBA) at each cell's centre
    weights = explain(REVERSE, TEXT).attention["encoder"][0, 0]  # (Tq, Tk) the head shown
    expected = payload.lut("Viridis")[payload.quantise(weights)].reshape(-1, 3)
    assert np.array_equal(flat[:, :3], expected) and len(set(map(tuple, flat))) > 3  # the 2D path's colours
    assert np.abs(flat.astype(int) - gl.astype(int)).max() <= 2  # WebGL2's, within 2/255
    page.evaluate(f"""() => {{ const c = {ROOT}.canvas, real = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {{
          return kind === 'webgl2' ? null : real.call(this, kind, ...rest); }};
        c.glMap = undefined; c.gpu = 'on'; c.render(); HTMLCanvasElement.prototype.getContext = real; }}""")
    fallback = page.evaluate(f"() => [{ROOT}.canvas.glMap, {ROOT}.canvas.glCanvas.style.display]")
    assert fallback == [None, "none"]
    assert page.evaluate(PIXELS) != page.evaluate(f"() => {{ const c = document.createElement('canvas'); "
                                                  f"c.width = {ROOT}.canvas.mapCanvas.width; "
                                                  f"c.height = {ROOT}.canvas.mapCanvas.height; return c.toDataURL(); }}")
    page.context.close()


def test_the_png_export_downloads(served):
    url, chromium = served
    page, _ = _open(chromium, url)
    with page.expect_download() as download:
        page.evaluate(f"() => {ROOT}.querySelector('button[data-action=png]').click()")
    path = download.value.path()
    assert download.value.suggested_filename == "encoder-layer1-head1.png"
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    page.context.close()
