"""The Lesson page under AppTest: every stage draws with the model's live numbers, the controls and
the share link work, and bad input gets a clear message."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app.views.lesson import STAGES
from core import load_checkpoint
from core.lessons import trace_translation
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import SHIPPED

TRANSLATION = SHIPPED / "translation.safetensors"


def open_lesson(query: dict[str, str] | None = None) -> AppTest:
    return open_page("lesson", query=query, state={"lesson_ask": False}, timeout=60)  # every stage shows at once


def test_every_stage_draws_without_error(runs):
    at = open_lesson({"lesson_text": "the red car"})
    assert not at.exception
    for stage, (title, _) in enumerate(STAGES):
        at.selectbox(key="lesson_stage").set_value(stage).run()
        assert not at.exception and not at.error, (stage, at.error)
        assert at.header[0].value == f"{stage + 1}. {title}"


def test_next_and_back_buttons_walk_the_stages(runs):
    at = open_lesson()
    assert at.button(key="lesson_prev").disabled
    at.button(key="lesson_next").click().run()
    assert at.session_state["lesson_stage"] == 1
    at.button(key="lesson_prev").click().run()
    assert at.session_state["lesson_stage"] == 0 and at.query_params["stage"] == "1"


def test_share_link_restores_stage_head_and_token(runs):
    at = open_lesson({"lesson_text": "the red car", "lesson_stage": "6", "lesson_head": "1", "lesson_token": "2"})
    assert at.header[0].value == "7. Softmax"
    assert (at.session_state["lesson_head"], at.session_state["lesson_token"]) == (1, 2)
    trace = trace_translation(load_checkpoint(TRANSLATION), "the red car", head=1)
    weight = trace.encoder_head.weights[2].max()
    assert f"= {weight:.2f}" in at.latex[0].value  # the formula shows the live number of token 2


def test_the_share_link_counts_the_stage_and_head_from_1_and_reads_older_links(runs):
    """``?stage=7&stage_head=2`` opens "7. Softmax" on head 2 as the page counts them; an older link's 0-based
    ``lesson_stage=6&lesson_head=1`` opens the same and is rewritten counted from 1."""
    for query in ({"stage": "7", "stage_head": "2"}, {"lesson_stage": "6", "lesson_head": "1"}):
        at = open_lesson({"lesson_text": "the red car", **query})
        assert not at.exception and at.header[0].value == "7. Softmax"
        assert (at.session_state["lesson_stage"], at.session_state["lesson_head"]) == (6, 1)
        assert (at.query_params["stage"], at.query_params["stage_head"]) == ("7", "2")
        assert "lesson_stage" not in at.query_params and "lesson_head" not in at.query_params
    at.button(key="lesson_next").click().run()
    assert at.header[0].value == "8. Weighted sum of values" and at.query_params["stage"] == "8"


def test_out_of_range_link_values_are_clamped(runs):
    at = open_lesson({"lesson_text": "the red car", "lesson_stage": "99", "lesson_token": "40", "lesson_head": "-3"})
    assert not at.exception
    assert at.session_state["lesson_stage"] == len(STAGES) - 1 and at.session_state["lesson_token"] == 2


def test_empty_sentence_gets_a_clear_message(runs):
    at = open_lesson()
    at.text_input(key="lesson_text").set_value("   ").run()
    assert not at.exception
    assert any("Type some text" in e.value for e in at.error)


def test_latex_specials_in_a_token_are_escaped(runs):
    from app.views.parts.lesson_stages import tex
    assert tex("a_b{c}$") == r"a\_b\{c\}\$"
