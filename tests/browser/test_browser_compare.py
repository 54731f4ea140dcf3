"""Explore's Compare in Chromium, with the shipped reverse model: two sentences of different tokens side by side, and
the second sentence's map labels every one of its tokens, rows and columns, at 12 px or more, as the first's does
(one canvas of three panels labelled the rows of its first panel alone, and squeezed a longer second map until it
labelled every other column)."""

from __future__ import annotations

import pytest

from app.charts import attention as charts
from core import explain
from tests.helpers.browser import app_in_chromium, wait_until_idle
from tests.helpers.paths import REVERSE

FIRST, SECOND = "abcde", "abcdefghijkllkji"  # 5 and 16 letters: maps of different sizes and tokens

# The panel called ``title`` on whichever canvas draws it: its rows and columns, and the labels drawn beside its rows
# (right-aligned, left of the map) and under its columns (turned, under the map), with their font sizes.
LABELS_JS = """title => {
  for (const host of document.querySelectorAll('[data-attnscope-canvas]')) {
    const c = host.shadowRoot?.querySelector('.atc')?.canvas;
    const box = c && c.h && c.h.mode === 'panels' && (c.boxes || []).find(b => b.panel.title === title);
    if (!box) continue;
    const texts = [...c.svg.querySelectorAll('text')].map(t => ({text: t.textContent, x: +t.getAttribute('x'),
      y: +t.getAttribute('y'), turned: !!t.getAttribute('transform'), size: parseFloat(getComputedStyle(t).fontSize)}));
    const rows = texts.filter(t => !t.turned && Math.abs(t.x - (box.x - 6)) < 0.5 && t.y > box.y && t.y < box.y + box.h);
    const cols = texts.filter(t => t.turned && Math.abs(t.y - (box.y + box.h + 6)) < 0.5 && t.x > box.x
      && t.x < box.x + box.w);
    return {rows: rows.map(t => t.text), cols: cols.map(t => t.text), sizes: [...rows, ...cols].map(t => t.size),
            tokens: [box.panel.rows.length, box.panel.cols.length]};
  }
  return null;
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with app_in_chromium(tmp_path_factory.mktemp("browser-compare-runs")) as (url, chromium):
        yield url, chromium


@pytest.mark.parametrize("projector", [False, True], ids=["normal", "presentation"])
def test_the_second_sentence_map_labels_every_token(served, projector):
    """In presentation mode too, where the comparison lies below the first screen: a canvas there is sized to the
    screen it is scrolled into, not to what is left of the first (which once squeezed it to a label every few)."""
    url, chromium = served
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(f"{url}/explore?ckpt=shipped:reverse&text={FIRST}" + ("&projector=1" if projector else ""))
        wait_until_idle(page, 90_000)
        page.get_by_text("Compare: two sentences or two checkpoints side by side").click()
        wait_until_idle(page)
        box = page.get_by_label("Second sentence")
        box.fill(SECOND)
        box.press("Enter")
        page.wait_for_function(f"() => ({LABELS_JS})('Second sentence')", timeout=60_000)
        wait_until_idle(page)
        for title, text in (("This sentence", FIRST), ("Second sentence", SECOND)):
            drawn = page.evaluate(LABELS_JS, title)
            wanted = charts.axes(explain(REVERSE, text), "encoder")[0]  # the labels Explore gives its tokens
            assert drawn["tokens"] == [len(wanted), len(wanted)]
            assert drawn["rows"] == wanted, (title, drawn["rows"])
            assert drawn["cols"] == wanted, (title, drawn["cols"])
            assert min(drawn["sizes"]) >= (18 if projector else 12)
    finally:
        page.close()
