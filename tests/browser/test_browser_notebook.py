"""The notebook widget's module in Chromium, driven as anywidget drives it (a model with get / set / save_changes
/ on): it draws the payload with the app's canvas.js, a head switch repaints, and a pin is set on the model and
saved, which is what reaches the notebook's kernel. No server: the page is the widget alone."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("anywidget")

from attnscope import notebook  # noqa: E402
from core import explain  # noqa: E402
from tests.helpers.browser import CHROMIUM_FLAGS, chromium_path  # noqa: E402
from tests.helpers.paths import REVERSE  # noqa: E402

HOST = """async ({esm, css, data}) => {
  const style = document.createElement('style'); style.textContent = css; document.head.appendChild(style);
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const values = {payload: new DataView(bytes.buffer), pinned: {}}, saved = [], handlers = {};
  const model = {get: k => values[k], set: (k, v) => { values[k] = v; }, save_changes: () => saved.push(values.pinned),
                 on: (e, f) => { handlers[e] = f; }, off: () => {}};
  const url = URL.createObjectURL(new Blob([esm], {type: 'text/javascript'}));
  const widget = (await import(url)).default;
  const el = document.createElement('div'); el.style.width = '900px'; document.body.appendChild(el);
  await widget.render({model, el});
  window.saved = saved;
  return true;
}"""
ROOT = "document.querySelector('.atc')"


def test_the_widget_draws_switches_and_pins_through_the_model():
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    widget = notebook.show(explain(REVERSE, "abcab"), kind="cross")
    data = base64.b64encode(widget.payload).decode()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_content("<!doctype html><html><body></body></html>")
            assert page.evaluate(HOST, {"esm": widget._esm, "css": widget._css, "data": data})
            page.wait_for_function(f"() => {ROOT} && {ROOT}.canvas.id", timeout=30_000)
            before = page.evaluate(f"() => {ROOT}.canvas.mapCanvas.toDataURL()")
            page.evaluate(f"() => {ROOT}.focus()")
            page.keyboard.press("ArrowRight")  # head 2
            page.keyboard.press("ArrowDown")  # layer 2
            assert page.evaluate(f"() => {ROOT}.canvas.mapCanvas.toDataURL()") != before
            page.evaluate(f"() => {ROOT}.querySelector('button[data-action=pin]').click()")
            assert page.evaluate("() => window.saved") == [{"kind": "cross", "layer": 1, "head": 1, "view": "head"}]
        finally:
            browser.close()
