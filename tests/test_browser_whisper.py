"""The Whisper page in a real browser (Chromium): a shipped clip is transcribed and its cross-attention
chart drawn; a recording from a fake microphone (a shipped clip played as the capture device) is
transcribed too. Needs the Whisper tiny.en package (skipped without it, failed where
``ATTNSCOPE_REQUIRE_PRETRAINED=1``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.browser import CHROMIUM_FLAGS, chromium_path, problems_on, screenshot, served_app, wait_until_idle
from tests.pretrained_files import installed

CLIPS = Path(__file__).resolve().parents[1] / "assets" / "audio"
MAIN = '[data-testid="stMain"]'


def _main_has(page, text: str, timeout_ms: int = 180_000) -> None:
    page.wait_for_function(f"t => (document.querySelector('{MAIN}')?.innerText || '').includes(t)", arg=text,
                           timeout=timeout_ms)


@pytest.fixture(scope="module")
def fake_microphone(tmp_path_factory) -> Path:
    """A 16-bit WAV of a shipped clip with silence after it (Chromium loops the capture file)."""
    samples, rate = soundfile.read(CLIPS / "the_black_cat_sleeps.flac", dtype="float32")
    path = tmp_path_factory.mktemp("microphone") / "speech.wav"
    soundfile.write(path, np.concatenate([samples, np.zeros(rate * 3, np.float32)]), rate, subtype="PCM_16")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory, fake_microphone):
    installed("Whisper tiny.en")
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    flags = [*CHROMIUM_FLAGS, "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
             f"--use-file-for-fake-audio-capture={fake_microphone}"]
    with served_app(tmp_path_factory.mktemp("browser-whisper-runs")) as url, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=flags)
        try:
            context = chromium.new_context(viewport={"width": 1280, "height": 720}, permissions=["microphone"])
            yield url, context.new_page()
        finally:
            chromium.close()


def test_a_sample_clip_is_transcribed_and_its_cross_attention_drawn(browser):
    url, page = browser
    page.goto(f"{url}/whisper")
    _main_has(page, "The Black Cat Sleeps.")
    wait_until_idle(page)
    assert problems_on(page) == []
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.wait_for(timeout=60_000)
    assert "Cross-attention over the audio" in chart.inner_text()
    assert chart.locator(".hm, .heatmaplayer, canvas, image").count() > 0  # the heatmaps are drawn
    screenshot(page, "whisper")


def test_a_recording_from_the_microphone_is_transcribed(browser):
    url, page = browser
    page.goto(f"{url}/whisper")
    wait_until_idle(page)
    page.get_by_text("Record", exact=True).click()
    wait_until_idle(page)
    page.get_by_role("button", name="Record").click()
    page.wait_for_timeout(4_000)  # the clip (3.5 s) plays into the fake microphone
    page.get_by_role("button", name="Stop recording").click()
    _main_has(page, "Transcript of your recording by Whisper tiny.en")
    wait_until_idle(page)
    assert problems_on(page) == []
    transcript = page.locator(f"{MAIN} [data-testid='stText']").first.inner_text().lower()
    assert "cat" in transcript


def test_a_share_link_opens_the_spanish_clip_translated_by_whisper_base(browser):
    installed("Whisper base")
    url, page = browser
    page.goto(f"{url}/whisper?speech_model=Whisper+base&speech_source=Sample+clip&speech_clip=yo_tengo_gatos.flac"
              "&speech_task=translate&speech_language=es")
    _main_has(page, "Translation of Hola. Yo tengo gatos en mi casa. (Spanish) by Whisper base")
    wait_until_idle(page)
    assert problems_on(page) == []
    transcript = page.locator(f"{MAIN} [data-testid='stText']").first.inner_text().lower()
    assert "cats" in transcript and "house" in transcript
    screenshot(page, "whisper-base-translate")
