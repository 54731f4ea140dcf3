"""The Lesson in four languages under AppTest: in Japanese, Russian and Chinese every stage of the encoder-decoder
track shows no English sentence of the Lesson's English messages (prose, captions, widget labels and help, the map,
chart titles, axes and legends), and does show its own; a question is asked and answered in the language with the
model's own numbers; the share link keeps ``lang``. English still shows the English sentences (the detector works).
A decoder-only and an encoder-only model's tracks (tiny GPT-2 and BERT saved by ``transformers``) are worded in
Japanese too (core's notes on a family's departures from the paper stay English: docs/languages.md)."""

from __future__ import annotations

import pytest

from app import i18n
from app.views.lesson import STAGES
from core import load_checkpoint
from core.lessons import questions, trace_translation
from tests.app.test_app_i18n import _left_in_english, sentences, shown
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import SHIPPED

LESSON = ["lesson", "lesson-stages", "lesson-decoder", "lesson-quiz"]
SHARED = ["charts", "glossary", "common"]
TEXT = "I have cats"


@pytest.fixture(scope="module")
def english():
    return {page: sentences(page) for page in LESSON + SHARED}


def _every_stage(lang: str, ckpt: str | None = None, count: int = len(STAGES)) -> tuple[list[str], object]:
    """The main column's text at each of ``count`` stages (asking off: every stage draws), and the AppTest."""
    at = open_page("lesson", ckpt=ckpt, query={"lang": lang, "lesson_text": TEXT}, state={"lesson_ask": False},
                   timeout=90)
    texts = []
    for stage in range(count):
        at.session_state["lesson_stage"] = stage  # (the select's options are worded in the session's language)
        at.run()
        assert not at.exception and not at.error, (lang, stage, at.error)
        texts.append(shown(at.main))
    return texts, at


def test_the_english_lesson_shows_its_english_sentences(runs, english):
    texts, _ = _every_stage("en")
    assert len(_left_in_english("\n".join(texts), english, LESSON)) > 60


@pytest.mark.parametrize("lang", ["ja", "ru", "zh"])
def test_every_stage_of_the_lesson_shows_no_english_sentence(runs, english, lang):
    texts, at = _every_stage(lang)
    kept = "\n".join(m for page in LESSON + SHARED for m in i18n.catalog(lang, page).values())
    for stage, text in enumerate(texts):  # a name the translation keeps as written (the paper's title) is no leak
        left = [s for s in _left_in_english(text, english, LESSON + SHARED) if s not in kept]
        assert left == [], (lang, stage + 1)
    everything = "\n".join(texts)
    own = [s for page in LESSON for s in sentences(page, lang)] if lang == "ru" else []
    assert sum(s in everything for s in own) >= len(own) // 3, "the Russian prose is shown"
    assert at.title[0].value == i18n.text(lang, "lesson", "opening.title")
    assert at.header[0].value == f"{len(STAGES)}. " + i18n.text(lang, "lesson", f"stage_titles.{STAGES[-1][0]}")
    assert i18n.text(lang, "lesson", "map.encoder", n=2)[:6] in texts[0]  # the map in the language
    assert at.query_params["lang"] == lang  # the share link keeps it


@pytest.mark.parametrize("lang", ["ja", "ru"])
def test_a_question_is_asked_and_answered_in_the_language(runs, lang):
    """Stage 4 asks which key the highlighted query matches best; Skip reveals the model's answer and why, in the
    language, with the numbers of the model's own q·k."""
    stage = [title for title, _ in STAGES].index("Scores q·k")
    at = open_page("lesson", query={"lang": lang, "lesson_text": TEXT, "stage": str(stage + 1)}, timeout=90)
    question = questions.best_key(trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), TEXT), 0)
    prompt = i18n.text(lang, "lesson-quiz", "questions.best_key.prompt", **question.values)
    assert prompt in shown(at.main)
    at.button(key=f"lesson_skip_{stage}").click().run()
    assert not at.exception and not at.error
    (revealed,) = at.info
    assert f"{question.values['dot']:.2f}" in revealed.value
    assert i18n.text(lang, "lesson-quiz", "quiz.model_answer", model="", why="")[:4] in revealed.value
    assert question.options[question.answer] in revealed.value  # the token as it is, never translated


@pytest.mark.slow  # every stage of two tracks, each model in its worker process
@pytest.mark.parametrize(("name", "kind"), [("gpt2", "decoder"), ("bert", "encoder")])
def test_the_single_stack_tracks_are_worded_in_japanese(runs, english, tmp_path, monkeypatch, name, kind):
    pytest.importorskip("transformers")
    from app.views.parts import lesson_tracks as tracks
    from tests.helpers.hf_families import save_family

    save_family(name, tmp_path / name, tokenizer=True)
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(tmp_path))
    track = tracks.track(kind)
    texts, at = _every_stage("ja", f"models:{name}", len(track))
    kept = "\n".join(m for page in LESSON + SHARED for m in i18n.catalog("ja", page).values())
    for stage, text in enumerate(texts):
        assert [s for s in _left_in_english(text, english, LESSON + SHARED) if s not in kept] == [], stage + 1
    assert at.header[0].value == f"{len(track)}. " + i18n.text("ja", "lesson", f"stage_titles.{track[-1].title}")
