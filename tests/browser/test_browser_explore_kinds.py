"""Explore's sections by kind in Chromium at 1280 × 720, in normal and presentation mode (issue 21): a tiny
BERT from the models folder shows its similarity and head finder, a tiny Llama with grouped key/value
heads writes a sampled continuation step by step with its heads labelled, a tiny BART steps through its
output's cross-attention; no error, nothing wider than its box, the head view's chart on the first screen,
and pressing Generate leaves the head view as it was.

Screenshots (the first screen, and each section) go to ``$ATTNSCOPE_SCREENSHOTS`` (default
``screenshots-tmp/explore-kinds``, gitignored).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.browser import app_in_chromium, overflowing, problems_on, wait_until_idle
from tests.helpers.pretrained_files import write_tiny_bert

transformers = pytest.importorskip("transformers")
from tests.helpers.hf_decoder_reference import reference_model, save_folder  # noqa: E402 - needs transformers
from tests.helpers.hf_seq2seq_reference import bart  # noqa: E402

SHOTS = Path(os.environ.get("ATTNSCOPE_SCREENSHOTS")
             or Path(__file__).resolve().parents[2] / "screenshots-tmp" / "explore-kinds")
TEXT = "the animal didn't cross the street because it was tired"
FIRST_CHART_TOP_JS = """() => {
  const tops = [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stPlotlyChart"], '
    + '[data-testid="stVegaLiteChart"], [data-attnscope-canvas])')].filter(c => c.offsetParent !== null).map(c => c.getBoundingClientRect().top);
  return tops.length ? Math.min(...tops) : null;
}"""
CANVAS = "document.querySelector('[data-attnscope-canvas]').shadowRoot.querySelector('.atc')"
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    models = tmp_path_factory.mktemp("browser-kinds-models")
    write_tiny_bert(models / "bert")
    llama = transformers.LlamaConfig(vocab_size=320, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                     bos_token_id=1, eos_token_id=2)
    save_folder(reference_model(llama), models / "llama", add_bos=True)
    bart(models / "bart")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNSCOPE_MODELS", str(models))
        with app_in_chromium(tmp_path_factory.mktemp("browser-kinds-runs")) as (url, chromium):
            yield url, chromium


def _open(page, url: str, model: str, presentation: bool) -> None:
    page.goto(f"{url}/explore?ckpt=models:{model}&projector={int(presentation)}&text={TEXT.replace(' ', '+')}")
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=90_000)
    wait_until_idle(page, 90_000)
    page.wait_for_function(f"() => {{ try {{ return {CANVAS}.canvas.id; }} catch (e) {{ return false; }} }}",
                           timeout=60_000)
    page.wait_for_timeout(500)


def _fits(page, name: str) -> None:
    """No error, nothing cut off, the head view on the first screen; the first screen saved."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}-first-screen.png"))
    assert problems_on(page) == []
    assert overflowing(page) == []
    assert page.evaluate(SIDEWAYS_JS) <= 0, "the page scrolls sideways"
    top = page.evaluate(FIRST_CHART_TOP_JS)
    assert top is not None and top < 720, f"the first chart starts at {top} px"


def _section(page, heading: str, name: str, chart: str) -> None:
    """Save the screen with the section under ``heading`` scrolled into view, then with its chart titled
    ``chart``."""
    for shown, suffix in ((page.get_by_role("heading", name=heading), ""), (page.get_by_text(chart), "-chart")):
        shown.first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / f"{name}{suffix}.png"))


@pytest.fixture(params=[False, True], ids=["normal", "presentation"])
def screen(served, request):
    """A 1280 × 720 page and opening Explore on a model of the models folder in normal or presentation mode
    (``open(model)`` returns the screenshot name's stem)."""
    url, chromium = served
    page = chromium.new_page(viewport={"width": 1280, "height": 720})
    mode = "presentation" if request.param else "normal"

    def opened(model: str) -> str:
        _open(page, url, model, request.param)
        _fits(page, f"{model}-1280x720-{mode}")
        return f"1280x720-{mode}"
    try:
        yield page, opened
    finally:
        page.close()


def test_an_encoder_shows_similarity_and_the_head_finder(screen):
    page, opened = screen
    shot = opened("bert")
    page.get_by_text("Cosine similarity").first.wait_for(timeout=30_000)
    _section(page, "Sentence embedding and similarity", f"bert-similarity-{shot}", "Sentence embedding:")
    page.get_by_text("heads where").first.wait_for(timeout=30_000)
    _section(page, "Head finder: which heads link a word to another?", f"bert-head-finder-{shot}", "of its attention to")
    assert problems_on(page) == [] and overflowing(page) == []


def test_a_decoder_writes_step_by_step_and_the_head_view_stays(screen):
    page, opened = screen
    shot = opened("llama")
    head_view = page.locator("[data-attnscope-canvas] .atc-title").first  # the canvas's title (its shadow root)
    title = head_view.text_content()
    assert title.endswith("kv head 1 of 2")
    page.get_by_text("Sampled", exact=True).first.click()
    page.get_by_role("button", name="Generate").click()
    page.get_by_text("Continuation (sampled)").first.wait_for(timeout=60_000)
    wait_until_idle(page, 60_000)
    page.get_by_text("each head's row for").first.wait_for(timeout=30_000)
    assert head_view.text_content() == title  # the head view was not redrawn for another selection
    _section(page, "Let it write, one step at a time", f"llama-steps-{shot}", "each head's row for")
    assert problems_on(page) == [] and overflowing(page) == []


def test_an_encoder_decoder_steps_through_its_output(screen):
    page, opened = screen
    shot = opened("bart")
    page.get_by_text("Show every head's row, step by step").first.click()
    page.get_by_text("each head's row for").first.wait_for(timeout=30_000)
    wait_until_idle(page)
    _section(page, "The output step by step: where each head looks in the source", f"bart-steps-{shot}",
             "each head's row for")
    assert problems_on(page) == [] and overflowing(page) == []
