"""The Lesson's active tour under AppTest: a question stage waits for an answer, reveals the model's real answer
beside the student's (right, wrong or skipped), the answers stay in the session and the last stage sums them up."""

from __future__ import annotations

import numpy as np
import pytest

from app.views.lesson import STAGES
from app.views.parts import lesson_quiz as quiz
from core import load_checkpoint
from core.lessons import trace_translation
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import SHIPPED

TEXT = "i have cats"


@pytest.fixture(scope="module")
def trace():
    return trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), TEXT)


def _at_stage(stage: int):
    at = open_page("lesson", query={"lesson_text": TEXT}, timeout=60)
    at.selectbox(key="lesson_stage").set_value(stage).run()
    assert not at.exception and not at.error
    return at


def _pills(at):
    return [p for p in at.pills if p.key.startswith("lesson_answer_")]


def test_the_tour_asks_at_least_six_questions_on_distinct_stages():
    assert len(quiz.QUESTIONS) >= 6 and max(quiz.QUESTIONS) < len(STAGES) - 1  # the last stage sums them up


def test_a_question_stage_waits_and_a_right_answer_is_revealed_beside_the_stage(runs, trace):
    at = _at_stage(3)  # Scores q·k: which key does ‹i›'s query match best?
    assert at.header[0].value == "4. Scores q·k"
    assert not at.latex, "the stage showed its numbers before the student answered"
    (pills,) = _pills(at)
    assert list(pills.options) == [f"{n}: {t}" for n, t in enumerate(trace.source_tokens)]
    best = int(np.argmax(trace.encoder_head.q[0] @ trace.encoder_head.k.T))  # the model's own q·k, recomputed
    pills.set_value(best).run()
    assert not at.exception
    assert any(s.value.startswith(f"Right: **{trace.source_tokens[best]}**") for s in at.success)
    assert at.latex, "the stage is drawn after the answer"
    assert not _pills(at)


def test_a_wrong_answer_shows_both_and_the_summary_counts_it(runs, trace):
    at = _at_stage(13)  # cross-attention: which source token does row 0 read most?
    best = int(np.argmax(trace.cross_heads.mean(axis=0)[0]))
    wrong = (best + 1) % len(trace.source_tokens)
    _pills(at)[0].set_value(wrong).run()
    (warning,) = at.warning
    assert (f"You said **{trace.source_tokens[wrong]}**; the model says **{trace.source_tokens[best]}**"
            in warning.value)
    at.selectbox(key="lesson_stage").set_value(3).run()
    at.button(key="lesson_skip_3").click().run()  # Skip: the answer without an answer
    assert any("The model's answer" in i.value for i in at.info)
    at.selectbox(key="lesson_stage").set_value(len(STAGES) - 1).run()
    assert "Your answers" in [s.value for s in at.subheader]
    assert any("**0 of 1** answered right, 1 skipped." in m.value for m in at.markdown)
    table = at.dataframe[-1].value  # the summary is the last stage's last table
    assert list(table["stage"]) == [14, 4] and list(table[""]) == ["✗", "skipped"]
    at.button(key="lesson_ask_again").click().run()
    at.selectbox(key="lesson_stage").set_value(13).run()
    assert _pills(at), "Ask me again did not forget the answers"


def test_a_new_sentence_asks_again_and_the_toggle_turns_the_questions_off(runs):
    at = _at_stage(12)
    _pills(at)[0].set_value(0).run()
    assert at.success or at.warning
    at.text_input(key="lesson_text").set_value("the red car").run()
    assert _pills(at), "the answer to another sentence was reused"
    at.toggle(key=quiz.ASK).set_value(False).run()
    assert not _pills(at) and at.latex


def test_every_question_stage_answers_from_the_model(runs):
    at = _at_stage(0)
    for stage in quiz.QUESTIONS:
        at.selectbox(key="lesson_stage").set_value(stage).run()
        assert not at.exception and not at.error, (stage, at.error)
        assert _pills(at), f"stage {stage + 1} asked nothing"
        at.button(key=f"lesson_skip_{stage}").click().run()
        assert not _pills(at) and any("The model's answer" in i.value for i in at.info), stage
