"""The block diagrams' labels measured in Chromium (issue 23): the server lays the diagram out from an estimate
of each line's width (``app.charts.diagram.GLYPH``), and the image is drawn with the diagram's own fonts; every
line of every diagram the app draws (each architecture, both LayerNorm placements, Whisper), at the normal and
the projector's font scale, must fit inside its box, and a column's title inside its frame."""

from __future__ import annotations

import pytest

from app.charts.architecture import architecture_diagram, whisper_diagram
from app.charts.diagram import svg
from core.model.families.whisper import WhisperConfig
from tests.helpers.browser import CHROMIUM_FLAGS, chromium_path
from tests.helpers.tiny import tiny_model

# Whisper base's sizes: the widest numbers the app's Whisper diagram writes
WHISPER_BASE = WhisperConfig(vocab_size=51_865, d_model=512, n_encoder_layers=6, n_decoder_layers=6, n_heads=8,
                             d_ff=2048, eot_id=50_256, sot_id=50_257, no_timestamps_id=50_362, n_mels=80,
                             n_frames=1500, max_len=448)
# Every text element against the rectangle that holds it: its box (same group) or, for a title, its frame.
OUTSIDE_JS = """() => {
  const svg = document.querySelector('svg'), found = [];
  const frames = [...svg.children].filter(e => e.tagName === 'rect').map(r => r.getBBox());
  for (const text of svg.querySelectorAll('text')) {
    const t = text.getBBox(), own = text.parentNode === svg ? null : text.parentNode.querySelector(':scope > rect');
    const boxes = own ? [own.getBBox()] : frames;
    if (!boxes.some(b => t.x >= b.x && t.x + t.width <= b.x + b.width && t.y >= b.y && t.y + t.height <= b.y + b.height)
        && !text.textContent.startsWith('K, V'))
      found.push(`${text.textContent} (${Math.round(t.width)} px wide)`);
  }
  return found;
}"""


def _drawings():
    for architecture in ("encoder-decoder", "encoder", "decoder"):
        config = tiny_model(architecture).config
        for norm in ("post", "pre"):
            yield f"{architecture}, {norm}-norm", architecture_diagram(config, norm)
    yield "Whisper base", whisper_diagram(WHISPER_BASE)


def test_every_label_fits_its_box_in_chromium():
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    failures = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            for name, drawing in _drawings():
                for scale in (1.0, 1.5):  # the projector's font scale (app.ui.widgets.font_scale)
                    page.set_content(svg(drawing, scale))
                    failures += [f"{name} at {scale}: {line}" for line in page.evaluate(OUTSIDE_JS)]
        finally:
            browser.close()
    assert failures == [], "\n".join(failures)


def test_the_check_finds_a_label_wider_than_its_box(monkeypatch):
    """The measurement above is not vacuous: with a width estimate 0.44 (every label fits from 0.47 on), labels
    spill out of their boxes."""
    monkeypatch.setattr("app.charts.diagram.GLYPH", 0.44)
    with pytest.raises(AssertionError, match="px wide"):
        test_every_label_fits_its_box_in_chromium()
