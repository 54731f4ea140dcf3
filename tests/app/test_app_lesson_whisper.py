"""The Lesson with the installed Whisper tiny.en chosen in the sidebar: its six stages step through (Next and the
stage picker) without an exception or an error, each stage's live numbers those of ``core.lessons.trace_speech``
on the same clip and head; Whisper is offered on the Lesson only; the track speaks the session's language."""

from __future__ import annotations

import numpy as np
import pytest

from app.services import speech_clips
from app.views.parts import lesson_whisper
from core import lessons, load_pretrained, pretrained_models
from tests.helpers.apptest_helpers import open_page

WHISPER = next((p for p in pretrained_models("audio") if p.name == "Whisper tiny.en"), None)
pytestmark = pytest.mark.skipif(WHISPER is None, reason="Whisper tiny.en is not installed")
KEY = "pretrained:Whisper tiny.en"
CLIP = "i_have_two_cats.flac"
HEAD = 2
TITLES = ("1. Audio → log-mel spectrogram", "2. Convolutional stem + positions",
          "3. Encoder self-attention over frames", "4. Decoder masked self-attention over the text",
          "5. Cross-attention: text → audio frames", "6. Output tokens")


@pytest.fixture(scope="module")
def trace():
    return lessons.trace_speech(load_pretrained(WHISPER.path), speech_clips.audio(CLIP), head=HEAD)


def lesson_with_whisper(query: dict[str, str] | None = None, state: dict | None = None):
    at = open_page("lesson", query=query, state={"lesson_ask": False, **(state or {})}, timeout=300)
    at.session_state["ckpt"] = KEY  # the Lesson's picker lists it (Explore's, where open_page starts, does not)
    at.run(timeout=300)
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_every_stage_steps_through_with_the_models_numbers(trace, runs):
    at = lesson_with_whisper({"lesson_clip": CLIP, "stage_head": str(HEAD + 1)})
    assert at.session_state["ckpt"] == KEY
    step = at.session_state["lesson_step"]
    frame = at.session_state["lesson_token"]
    assert step == trace.prompt_tokens - 1  # the first row that writes text
    assert frame == int(np.argmax(trace.alignment[step]))  # the frame that row reads most
    latex = {}
    for stage, title in enumerate(TITLES):
        assert at.header[0].value == title
        assert not at.exception and not at.error, (stage, [e.message for e in at.exception], at.error)
        assert at.info or at.expander  # where Whisper departs from the paper
        latex[stage] = " ".join(x.value for x in at.latex)
        if stage < len(TITLES) - 1:
            at.button(key="lesson_next").click().run(timeout=300)
    assert at.button(key="lesson_next").disabled
    F = trace.frames
    assert rf"\mathbb{{R}}^{{80 \times {2 * F}}}" in latex[0]
    assert f"[{trace.embedded[frame, 0]:.2f}, " in latex[1]
    best = int(np.argmax(trace.encoder_head.weights[frame]))
    assert f"a_{{{frame},{best}}}" in latex[2] and f"= {trace.encoder_head.weights[frame, best]:.2f}" in latex[2]
    assert f"= {trace.decoder_head.weights[step, :step + 1].sum():.2f}" in latex[3]
    peak = int(np.argmax(trace.alignment[step]))
    assert trace.frame_labels[peak] in latex[4] and f"a = {trace.alignment[step, peak]:.2f}" in latex[4]
    token, p = trace.candidates[step][0]
    assert token == trace.generated_tokens[step] and f"(p = {p:.2f})" in latex[5]
    assert trace.output_text == "I have two cats." and trace.output_text in [t.value for t in at.text]


def test_the_stage_picker_and_one_cross_head(trace, runs):
    at = lesson_with_whisper({"lesson_clip": CLIP, "stage_head": str(HEAD + 1)})
    at.selectbox(key="lesson_stage").set_value(4).run(timeout=300)
    at.radio(key="lesson_speech_cross").set_value("head").run(timeout=300)
    assert not at.exception and not at.error
    step = at.session_state["lesson_step"]
    one = trace.cross[-1, HEAD]
    peak = int(np.argmax(one[step]))
    assert f"a = {one[step, peak]:.2f}" in at.latex[0].value and trace.frame_labels[peak] in at.latex[0].value
    at.selectbox(key="lesson_stage").set_value(0).run(timeout=300)
    assert at.header[0].value == TITLES[0] and at.button(key="lesson_prev").disabled


def test_whisper_is_offered_on_the_lesson_only(runs):
    at = open_page("explore", timeout=300)
    assert not any("Whisper" in label for label in at.selectbox(key="ckpt").options)
    at = lesson_with_whisper()
    assert any("Whisper tiny.en" in label for label in at.selectbox(key="ckpt").options)
    assert at.header[0].value == TITLES[0] and len(lesson_whisper.WHISPER) == len(TITLES)


@pytest.mark.parametrize("lang", ["ja", "ru", "zh"])
def test_the_track_speaks_the_sessions_language(lang, runs):
    """Every stage draws in the language, none under its English title."""
    at = lesson_with_whisper({"lesson_clip": CLIP}, state={"lang": lang})
    for stage, title in enumerate(TITLES):
        assert not at.exception and not at.error, (lang, stage, [e.message for e in at.exception], at.error)
        assert at.header[0].value.startswith(f"{stage + 1}. ") and at.header[0].value != title
        if stage < len(TITLES) - 1:
            at.button(key="lesson_next").click().run(timeout=300)
