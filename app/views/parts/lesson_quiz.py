"""The Lesson's active tour: at chosen stages the page asks first and shows after.

The student clicks a token or picks an answer; the page then reveals the model's real answer (computed by
:mod:`core.lessons.questions`) beside theirs, with one sentence on why, and only then draws the stage. Skip (the
button, or the S key) reveals the answer without one. The answers stay in the session, one per question, sentence,
head and token or step (a new sentence asks again), and the last stage sums them up.
"""

from __future__ import annotations

import zlib
from typing import Callable

import streamlit as st

from app.ui import language, widgets
from app.views.parts import lesson_tracks as tracks
from app.views.parts.lesson_stages import View
from core import lessons

ANSWERS = "lesson_answers"  # session state: question key → what the student answered and what the model did
ASK = "lesson_ask"  # session state: ask before showing (the student may turn it off)
SKIP_KEY = "s"
Ask = Callable[[lessons.LessonTrace, View], "lessons.Question | None"]
# A stage's title → its question (the same question in every track that has the stage)
BY_TITLE: dict[str, Ask] = {
    "Scores q·k": lambda tr, v: lessons.questions.best_key(tr, v.i),
    "Softmax": lambda tr, v: lessons.questions.beta(tr, v.i),
    "Heads concatenated": lambda tr, v: lessons.questions.positional_head(tr),
    "Decoder masked self-attention": lambda tr, v: lessons.questions.row_sum(tr, v.t),
    "Causal mask": lambda tr, v: lessons.questions.row_sum(tr, v.t),
    "Cross-attention": lambda tr, v: lessons.questions.cross_source(tr, v.t),
    "Output distribution": lambda tr, v: lessons.questions.next_token(tr, v.t),
    "Sampling instead of greedy": lambda tr, v: lessons.questions.temperature(tr, v.t),
}


def questions_of(track: tuple[tracks.Stage, ...]) -> dict[int, Ask]:
    """A track's stage (0-based) → its question."""
    return {n: BY_TITLE[s.title] for n, s in enumerate(track) if s.title in BY_TITLE}


# Encoder-decoder stage (0-based, app.views.lesson.STAGES order) → its question
QUESTIONS: dict[int, Ask] = questions_of(tracks.ENCODER_DECODER)


def _key(stage: int, question: lessons.Question, v: View) -> str:
    """One question on one sentence, head and token or step: its values name them all."""
    values = "|".join(f"{k}={question.values[k]}" for k in sorted(question.values))
    return f"{stage}|{question.topic}|{v.h}|{v.i}|{v.t}|{st.session_state.get('lesson_text', '')}|{values}"


def _widget_key(kind: str, key: str) -> str:
    return f"lesson_{kind}_{zlib.crc32(key.encode()):08x}"


def prompt(question: lessons.Question) -> str:
    """The question in the session's language, its numbers and tokens filled in."""
    return language.words("lesson-quiz")(f"questions.{question.topic}.prompt", **question.values)


def why_key(question: lessons.Question) -> str:
    """The ``lesson-quiz`` message that says why the model answers ``question`` as it does."""
    if question.topic == "best_key" and question.values.get("runner"):
        return "questions.best_key.why_next"
    if question.topic == "positional_head":
        return f"questions.positional_head.why_{question.values['where']}"
    return f"questions.{question.topic}.why"


def why(question: lessons.Question) -> str:
    """Why the model answers as it does, in the session's language."""
    return language.words("lesson-quiz")(why_key(question), **question.values)


def option(question: lessons.Question, n: int) -> str:
    """Option ``n`` as the student reads it: a token as it is, a head by its number, a choice in words."""
    t, name = language.words("lesson-quiz"), question.options[n]
    if question.kind in ("tokens", "candidates"):
        return name
    if question.kind == "heads":
        return t("quiz.head", n=name)
    return t(f"questions.{question.topic}.options.{name}")


def _record(stage: int, key: str, question: lessons.Question, given: int | None) -> None:
    st.session_state.setdefault(ANSWERS, {})[key] = {"stage": stage + 1, "question": question, "given": given,
                                                     "right": None if given is None else given == question.answer}


def _picked(stage: int, key: str, question: lessons.Question) -> None:
    given = st.session_state.get(_widget_key("answer", key))
    if given is not None:
        _record(stage, key, question, int(given))


def _pose(stage: int, key: str, question: lessons.Question) -> None:
    """The question, its options as one-click pills, and Skip."""
    t = language.words("lesson-quiz")
    with st.container(border=True, key=f"lesson_question_{stage}"):
        st.markdown(f"{t('quiz.your_turn')} {widgets.plain(prompt(question))}")
        label = t("quiz.click_token") if question.tokens else t("quiz.pick_one")
        words = [option(question, n) for n in range(len(question.options))]  # worded now, in the session's language
        fmt = (lambda n: f"{n}: {words[n]}") if question.tokens else (lambda n: words[n])
        st.pills(label, range(len(question.options)), format_func=fmt, key=_widget_key("answer", key),
                 on_change=_picked, args=(stage, key, question))
        st.button(t("quiz.skip"), key=f"lesson_skip_{stage}", on_click=_record, args=(stage, key, question, None),
                  shortcut=SKIP_KEY, help=t("quiz.skip_help", shortcut=SKIP_KEY.upper()), icon=":material/skip_next:")


def _yours(answer: dict) -> str:
    given = answer["given"]
    return language.words("lesson-quiz")("quiz.skipped") if given is None else option(answer["question"], given)


def reveal(answer: dict) -> None:
    """The student's answer beside the model's, and why, on one alert."""
    t, question = language.words("lesson-quiz"), answer["question"]
    model, reason = widgets.plain(option(question, question.answer)), widgets.plain(why(question))
    if answer["right"] is None:
        st.info(t("quiz.model_answer", model=model, why=reason), icon=":material/visibility:")
    elif answer["right"]:
        st.success(t("quiz.right", model=model, why=reason), icon=":material/check_circle:")
    else:
        st.warning(t("quiz.wrong", yours=widgets.plain(_yours(answer)), model=model, why=reason),
                   icon=":material/cancel:")


def toggle(track: tuple[tracks.Stage, ...] = tracks.ENCODER_DECODER) -> None:
    """The student's switch: ask before each question stage shows, or show every stage at once."""
    t = language.words("lesson-quiz")
    st.toggle(t("quiz.ask_first"), key=ASK, help=t("quiz.ask_help", n=len(questions_of(track)), shortcut=SKIP_KEY.upper()))


def ask(trace: lessons.LessonTrace, v: View, stage: int,
        track: tuple[tracks.Stage, ...] = tracks.ENCODER_DECODER) -> bool | dict:
    """Ask ``stage``'s question (of ``track``) if it has one still unanswered: False, the stage waits. True: the
    stage has no question (or asking is off). Else the answer given, for :func:`reveal` (the stage may be drawn)."""
    make = questions_of(track).get(stage)
    question = None if make is None or not st.session_state.get(ASK, True) else make(trace, v)
    if question is None:
        return True
    key = _key(stage, question, v)
    answer = st.session_state.get(ANSWERS, {}).get(key)
    if answer is None:
        _pose(stage, key, question)
        return False
    return answer


def summary(track: tuple[tracks.Stage, ...] = tracks.ENCODER_DECODER) -> None:
    """The student's answers so far, in the order given: the stage, the question, theirs and the model's."""
    t = language.words("lesson-quiz")
    answers = list(st.session_state.get(ANSWERS, {}).values())
    asking = questions_of(track)
    st.subheader(t("quiz.answers"))
    if not answers:
        st.caption(t("quiz.no_answers", n=len(asking), stages=", ".join(str(s + 1) for s in asking)))
        return
    right = sum(a["right"] is True for a in answers)
    skipped = sum(a["right"] is None for a in answers)
    given = len(answers) - skipped
    st.markdown(t("quiz.score_skipped" if skipped else "quiz.score", right=right, given=given, skipped=skipped))
    st.dataframe({t("quiz.stage"): [a["stage"] for a in answers],  # the short columns first: all on a 1280-px screen
                  "": ["✓" if a["right"] else t("quiz.skipped") if a["right"] is None else "✗" for a in answers],
                  t("quiz.yours"): [_yours(a) for a in answers],
                  t("quiz.models"): [option(a["question"], a["question"].answer) for a in answers],
                  t("quiz.question"): [prompt(a["question"]) for a in answers]}, hide_index=True)
    st.button(t("quiz.again"), key="lesson_ask_again", on_click=st.session_state.pop, args=(ANSWERS, None),
              icon=":material/replay:")
