"""The attention canvas's rows (``python -m bench browser``, or ``python -m bench browser_canvas`` alone), on
Explore in Chromium, each timed in the page with ``requestAnimationFrame``:

* hover over the head view's cells → the highlight painted (p95 ≤ 16 ms, 0 websocket frames sent);
* a head or layer switch by key → painted (p95 ≤ 50 ms and ≤ 0.5× the bare page's slider rerun, same run, 0 frames);
* a 2,048 × 2,048 map's bytes handed to the canvas → first paint (≤ 300 ms), a wheel-zoom step (≤ 16 ms p95);
* the payload's bytes per cell for that map (≤ 1.1).

The hover and zoom rows' baseline is the same page's bare frame (p95 of a ``requestAnimationFrame`` with nothing
drawn): the floor the machine's load sets under any in-page timing.
"""

from __future__ import annotations

import base64
import statistics

import numpy as np

from bench import browser_page as bp
from bench.table import Row

EXPLORE = "/explore?ckpt=shipped:translation&text=the+red+cat+sees+the+dog"
ROOT = "document.querySelector('[data-attnscope-canvas]').shadowRoot.querySelector('.atc')"
HOVERS, SWITCHES, ZOOMS, TOKENS = 120, 40, 24, 2048

SWITCH_JS = f"""async (count) => {{
  const root = {ROOT}, out = [];
  for (let i = 0; i < count; i++) {{
    const key = i % 4 === 3 ? (i % 8 === 3 ? 'ArrowDown' : 'ArrowUp') : (i % 8 < 4 ? 'ArrowRight' : 'ArrowLeft');
    const t0 = performance.now();
    root.dispatchEvent(new KeyboardEvent('keydown', {{key, bubbles: true}}));
    await new Promise(r => requestAnimationFrame(() => r()));
    out.push(performance.now() - t0);
  }}
  return out;
}}"""

BARE_JS = """async (count) => {
  const out = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await new Promise(r => requestAnimationFrame(() => r()));
    out.push(performance.now() - t0);
  }
  return out;
}"""

BIG_JS = f"""async ([b64, zooms]) => {{
  const bin = atob(b64), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const c = {ROOT}.canvas, t0 = performance.now();
  c.receive(bytes);
  await new Promise(r => requestAnimationFrame(() => r()));
  const first = performance.now() - t0, steps = [];
  for (let i = 0; i < zooms; i++) {{
    const s = performance.now();
    c.zoom(i < zooms / 2 ? 0.8 : 1.25, c.plot.x + c.plot.w * 0.3, c.plot.y + c.plot.h * 0.6);
    c.redrawMap();
    await new Promise(r => requestAnimationFrame(() => r()));
    steps.push(performance.now() - s);
  }}
  return [first, steps, c.usesGL() ? 'WebGL2' : 'Canvas 2D'];
}}"""


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[18] if len(samples) > 1 else samples[0]


def big_payload(tokens: int = TOKENS) -> bytes:
    """One layer of two heads of ``tokens`` × ``tokens`` synthetic maps (a sharp diagonal in noise)."""
    from app.ui.canvas import payload

    rng = np.random.default_rng(0)
    scores = rng.standard_normal((1, 2, tokens, tokens), dtype=np.float32)
    scores[0, :, np.arange(tokens), np.arange(tokens)] += 12
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    labels = [f"{i}:t{i}" for i in range(tokens)]
    return payload.encode_maps(list(weights), labels, labels, shape=weights.shape, sent=[0],
                               look=payload.Look(title="Synthetic"), pinned={"layer": 0, "head": 0, "view": "head"})


def canvas_rows(browser, app: bp.Server, base: bp.Server, goal_row, with_load) -> list[Row]:
    """The canvas's rows against the bare page's slider rerun (``goal_row`` / ``with_load`` of bench.browser)."""
    from app.ui.canvas import payload

    page, floor = bp.new_page(browser), bp.new_page(browser)
    frames: list[object] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda data: frames.append(data)))
    bp.load_ms(page, app.url + EXPLORE)
    page.wait_for_function(f"() => {{ try {{ return {ROOT}.canvas.id; }} catch (e) {{ return false; }} }}",
                           timeout=60_000)
    bp.load_ms(floor, base.url)
    page.wait_for_timeout(1000)
    sent = len(frames)
    bare = p95(page.evaluate(BARE_JS, HOVERS // 2))
    box = page.evaluate(f"""() => {{ const c = {ROOT}.canvas, r = c.stage.getBoundingClientRect();
        c.stats.hover.length = 0; return [r.left + c.plot.x, r.top + c.plot.y, c.plot.w, c.plot.h]; }}""")
    for i in range(HOVERS):
        page.mouse.move(box[0] + box[2] * ((i * 7) % 19 + 0.5) / 19, box[1] + box[3] * ((i * 5) % 17 + 0.5) / 17)
        page.wait_for_timeout(5)
    hovers = page.evaluate(f"() => {ROOT}.canvas.stats.hover.slice()")
    page.evaluate(f"() => {ROOT}.focus()")
    switches = page.evaluate(SWITCH_JS, SWITCHES)
    quiet = len(frames) == sent
    floor_moves = [bp.nudge_ms(floor, "layer") for _ in range(6)]
    data = big_payload()
    first, zooms, path = page.evaluate(BIG_JS, [base64.b64encode(data).decode(), ZOOMS])
    page.context.close()
    floor.context.close()
    per_cell = payload.bytes_per_cell(data)
    slider = statistics.median(floor_moves)
    return [
        Row("browser", with_load(f"canvas: hover a cell → highlight painted (p95 of {len(hovers)}; "
                                 f"websocket frames sent: {len(frames) - sent}) vs a bare frame (p95)"),
            "≤ 16 ms p95, 0 frames", p95(hovers), "ms", bare, p95(hovers) <= 16 and quiet),
        Row("browser", with_load(f"canvas: head/layer switch by key → painted (p95 of {SWITCHES}) vs the bare "
                                 "page's slider rerun (median of 6)"), "≤ 50 ms p95, ≤ 0.5× bare slider, 0 frames",
            p95(switches), "ms", slider, p95(switches) <= 50 and p95(switches) <= 0.5 * slider and quiet),
        Row("browser", with_load(f"canvas: {TOKENS:,}² map's bytes → first paint"), "≤ 300 ms", first, "ms",
            None, first <= 300),
        Row("browser", with_load(f"canvas: {TOKENS:,}² map zoom step, {path} (p95 of {ZOOMS}) vs a bare frame (p95)"),
            "≤ 16 ms p95", p95(zooms), "ms", bare, p95(zooms) <= 16),
        Row("browser", f"canvas: payload of a {TOKENS:,}² map, 2 heads (colour path; float16 past 1 M cells: none)",
            "≤ 1.1 bytes/cell", per_cell, "bytes/cell", None, per_cell <= 1.1),
    ]


def run() -> list[Row]:
    """The canvas rows alone (the app and the bare page served as ``bench.browser`` serves them)."""
    from bench import browser

    return browser.served_rows(lambda chromium, app, base: browser._shown(
        canvas_rows(chromium, app, base, browser.goal_row, browser.with_load)))
