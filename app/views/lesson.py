"""Lesson: one sentence followed through every stage of the sidebar's model, with its live numbers.

The stages follow the model's kind (:mod:`app.views.parts.lesson_tracks`, read from its trace): an
encoder-decoder's 18, a decoder-only model's (no encoder, no cross-attention: the prompt and its continuation)
or an encoder-only model's (ending with what its output is used for). Each stage has a picture, two or three sentences, the formula with the actual numbers of one
highlighted token, a link to the page that explores it further, and Previous / Next buttons, beside
a map of the model with the current stage highlighted (:mod:`app.views.parts.lesson_map`). The model is the
sidebar's text model of any kind, or an installed Whisper (its own six stages: :mod:`app.views.parts.lesson_whisper`;
an uploaded speech model's Lesson follows the shipped translation model); where its
family departs from the paper, the stage says so. In presentation mode the pickers fold into a
popover beside Next so that the stage's first chart is on the first screen.
The stage, sentence, head and highlighted token live in the share link (the stage and head counted from 1). Everything under the title is one
fragment: moving on a stage reruns it alone, not the sidebar.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from app.ui import language, presentation, widgets
from app import i18n, resources, routes
from app.views.parts import lesson_decoder as decoder
from app.views.parts import lesson_code, lesson_map
from app.views.parts import lesson_quiz as quiz
from app.views.parts import lesson_single as single
from app.views.parts import lesson_stages as stages
from app.views.parts import lesson_tracks as tracks
from app.views.parts import lesson_whisper as whisper
from app.views.parts.lesson_stages import View
from core import lessons

DEFAULT_TEXT = "I have cats"  # core lower-cases it as the model was trained (and says so)
STAGES = tuple((s.title, s.route) for s in tracks.ENCODER_DECODER)  # the encoder-decoder track's


def _go(delta: int, count: int) -> None:
    st.session_state["lesson_stage"] = int(np.clip(st.session_state["lesson_stage"] + delta, 0, count - 1))


# The link counts the stage and the head from 1, as the page does (``?stage=3&stage_head=2``); an older link's
# 0-based ``lesson_stage`` / ``lesson_head`` still opens the stage and head it meant.
FROM_ONE = {"lesson_stage": "stage", "lesson_head": "stage_head"}  # not "head": Explore's, 1-based too
widgets.restore_from_url({"lesson_text": str, "lesson_stage": int, "lesson_head": int, "lesson_token": int,
                          "lesson_step": int},
                         {"lesson_text": DEFAULT_TEXT, "lesson_stage": 0, "lesson_head": 0, "lesson_token": 0,
                          "lesson_step": 0, "lesson_cross": "mean", "lesson_temperature": 1.0, "lesson_top_k": 1 << 30,
                          "lesson_top_p": 1.0, "lesson_seed": 0, quiz.ASK: True}, from_one=FROM_ONE)
fs = widgets.font_scale()
show = not presentation.enabled()  # presentation mode: the stage beside the map on the first screen
lang = language.current()
t = language.words("lesson")
st.title(t("opening.title"))
if show:  # folded: the stage starts on a 1280 × 720 screen's first view (presentation mode has no intro)
    with st.expander(t("first_screen.about"), icon=":material/school:"):
        st.markdown(t("opening.intro"))


def title(stage: tracks.Stage) -> str:
    """A stage's title in the session's language (its English title where the messages have none)."""
    return i18n.catalog(lang, "lesson").get(f"stage_titles.{stage.title}", stage.title)  # the run's language: a
    # select's format_func is called again outside the run (AppTest), where the session is not at hand


#: Each stage's drawing, by its title (the same drawing in every track that has the stage).
DRAW = {
    "Tokens": stages.tokens,
    "Embeddings + positional encoding": lambda tr, v: (stages.embeddings if tr.token_embedding is not None
                                                       else single.embeddings)(tr, v),  # a trace holds their sum
    "Embeddings + positions": single.embeddings,
    "Q, K, V of one head": lambda tr, v: (stages.projections if tr.qkv_weight is not None else single.projections)(
        tr, v),  # a single-stack trace has q, k and v, not the stored matrices
    "Scores q·k": lambda tr, v: stages.scores(tr, v, False), "÷ √d_k": lambda tr, v: stages.scores(tr, v, True),
    "Mask": stages.mask, "Causal mask": single.causal_mask, "Softmax": stages.softmax,
    "Weighted sum of values": stages.weighted_sum, "Heads concatenated": stages.concatenated,
    "Add & Norm": stages.add_norm, "Feed-forward network": stages.ffn, "Encoder output": stages.encoder_output,
    "What the encoder output is used for": single.use, "Decoder masked self-attention": decoder.masked_self,
    "Cross-attention": decoder.cross, "Output distribution": decoder.output,
    "Greedy and beam search": decoder.greedy_and_beam, "Sampling instead of greedy": decoder.sampling,
    "Next step": decoder.next_step,
}


@widgets.page_fragment("lesson_body")
def lesson_body() -> None:
    """Everything under the title: the model, its trace of the sentence, the pickers, the map and the stage.
    A fragment: Next, Back, a map block or a picker reruns it alone, never the sidebar (and so does a followed
    teacher's Next, in a class)."""
    speech = whisper.chosen()
    if speech is not None:  # a speech model: its own track (app.views.parts.lesson_whisper)
        whisper.body(speech, show, fs)
        return
    chosen = widgets.current_entry()
    entry = widgets.attempt(t("page.open_model"), resources.lesson_entry, chosen)
    if entry is None:
        st.warning(t("page.no_model"))
        return
    if chosen is not None and chosen.key != entry.key and show:
        st.caption(t("page.follows_other", chosen=chosen.name, entry=entry.name))
    heads = widgets.attempt(t("page.open_model"), resources.head_count, entry)
    trace = None if heads is None else widgets.attempt(
        t("page.follow"), resources.lesson_trace, entry, st.session_state["lesson_text"],
        widgets.clamped("lesson_head", 0, heads - 1))  # a link's head past the model's: clamped, with a notice
    if trace is None:
        st.text_input(t("page.sentence"), key="lesson_text", max_chars=200)
        return
    track = tracks.track(trace.kind)
    S, T = len(trace.source_tokens), len(trace.target_tokens)
    widgets.clamped("lesson_stage", 0, len(track) - 1)  # a link's stage past this track's: clamped, with a notice
    widgets.clamped("lesson_token", 0, S - 1)
    if T:
        widgets.clamped("lesson_step", 0, T - 1)
    widgets.clamped("lesson_head", 0, trace.n_heads - 1)
    if show:
        with st.container(key="lesson_pickers"):
            _pickers(entry, trace, track, columns=True)
    stage = st.session_state["lesson_stage"]
    side, main = st.columns([1, 3.3], gap="medium")
    with side:
        lesson_map.draw(lessons.model_map(trace), stage, tuple(s.block for s in track))
    with main:
        nav = st.columns([1, 1, 1.5, 1.4] if show else [1, 1, 1.6])  # a row of its own: the buttons never clip
        nav[0].button(t("page.back"), on_click=_go, args=(-1, len(track)), disabled=stage == 0,
                      help=t("page.back_help"), key="lesson_prev")
        nav[1].button(t("page.next"), on_click=_go, args=(1, len(track)), disabled=stage == len(track) - 1,
                      help=t("page.next_help"), key="lesson_next", type="primary")
        if not show:
            with nav[2].popover(t("page.pickers"), width="stretch"):
                _pickers(entry, trace, track, columns=False)
        else:
            with nav[2].popover(t("first_screen.focus"), width="stretch"):
                _focus(trace)
            with nav[3]:
                quiz.toggle(track)
        st.progress((stage + 1) / len(track),  # presentation mode: the header below says the same
                    text=t("page.progress", n=stage + 1, total=len(track), name=title(track[stage])) if show else None)
        widgets.write_to_url(["lesson_text", "lesson_stage", "lesson_head", "lesson_token", "lesson_step"], FROM_ONE)
        _stage(entry, trace, track, stage)


def _pickers(entry, trace: lessons.LessonTrace, track: tuple[tracks.Stage, ...], columns: bool) -> None:
    """The model line and the sentence and stage pickers (when ``columns``: in one row, the head, token and step
    pickers folded beside Next by the caller, so that the stage starts on a 1280 × 720 screen's first view; else
    one under the other with those three and the ask-first toggle after them, in presentation mode's popover)."""
    st.caption(t("page.model", label=entry.label, kind=t(f"kinds.{trace.kind}"), n=len(track)))
    top = st.columns([3, 2]) if columns else [st.container(), st.container()]
    top[0].text_input(t("page.sentence") if trace.kind != "decoder" else t("page.prompt"), key="lesson_text",
                      max_chars=200)
    top[1].selectbox(t("page.stage"), range(len(track)), key="lesson_stage",
                     format_func=lambda i: f"{i + 1}. {title(track[i])}")
    if not columns:
        _focus(trace)
        quiz.toggle(track)


def _focus(trace: lessons.LessonTrace) -> None:
    """The head, token and step the stages follow (an encoder-only model has no decoder step)."""
    S, T = len(trace.source_tokens), len(trace.target_tokens)
    st.selectbox(t("page.head"), range(trace.n_heads), key="lesson_head",
                 format_func=lambda h: t("page.head_option", n=h + 1))
    st.selectbox(t("page.source_token") if trace.kind == "encoder-decoder" else t("page.token"),
                 range(S), key="lesson_token", format_func=lambda i: f"{i}: {trace.source_tokens[i]}")
    if T:
        st.selectbox(t("page.step"), range(T), key="lesson_step",
                     format_func=lambda n: t("page.step_option", n=n + 1, token=trace.target_tokens[n]))


def _stage(entry, trace: lessons.LessonTrace, track: tuple[tracks.Stage, ...], stage: int) -> None:
    """The stage's header, where this model departs from the paper, its picture and formulas, and its links."""
    i, step, h = st.session_state["lesson_token"], st.session_state["lesson_step"], trace.head
    view = View(i, step, h, fs, {name: size.hover for name, size in lessons.array_sizes(trace).items()})
    here = track[stage]
    st.header(f"{stage + 1}. {title(here)}")
    notes = lessons.stage_notes(trace, here.topic) if here.topic else ()
    if notes and not show:  # presentation mode: one line until opened, so the chart stays on the first screen
        with st.expander(t("page.differs", n=len(notes)), icon=":material/info:"):
            st.markdown("\n".join(f"- {note}" for note in notes))
    for note in notes if show else ():
        st.info(note, icon=":material/info:")
    answer = widgets.attempt(t("page.ask", name=entry.name), quiz.ask, trace, view, stage, track)
    if answer is False:
        return  # the stage shows once the student has answered or skipped
    if isinstance(answer, dict) and show:
        quiz.reveal(answer)
    draw = DRAW[here.title]
    more = (entry,) if draw in decoder.NEEDS_ENTRY else ()
    widgets.attempt(t("page.compute", name=entry.name), draw, trace, view, *more)  # one line, never a traceback
    lesson_code.show(here.title)  # the paper's model's own code for this step, folded
    if isinstance(answer, dict) and not show:  # presentation mode: under the picture, which keeps the first screen
        quiz.reveal(answer)
    if stage == len(track) - 1:
        quiz.summary(track)
        st.page_link(routes.LEARNING, label=t("page.next_lesson"),
                     icon=":material/trending_down:")
    st.page_link(here.route, label=t("page.deeper"), icon=":material/arrow_forward:")
    if trace.kind == "encoder-decoder" and here.title in ("Cross-attention", "Next step"):  # a real one
        st.page_link(routes.SPEECH, label=t("page.whisper"),
                     icon=":material/mic:")

lesson_body()
