"""The Lesson's Whisper track: one shipped clip of speech through a Whisper model, six stages read from its trace
(:func:`core.lessons.trace_speech`): audio → log-mel spectrogram, the convolutional stem and positions, the
encoder's self-attention over frames, the decoder's masked self-attention over the text, cross-attention from
each text token to the audio frames (the alignment), and the output tokens. Each stage says where Whisper
departs from the paper. Every word is in ``app/i18n/messages/<lang>/lesson-whisper.toml``.

The sidebar lists the installed speech models on the Lesson (:data:`app.sidebar.SPEECH_LESSON_PAGE`); the Lesson
calls :func:`body` when one is chosen. The stage, head, highlighted frame and step are the Lesson's own keys (and
share link); the clip is ``lesson_clip``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import streamlit as st

from app import pretrained_resources, resources, routes
from app.charts import speech as speech_charts
from app.services import catalog, speech_clips
from app.ui import language, vega, widgets
from app.views.parts import lesson_map
from app.views.parts.lesson_decoder import candidates_chart
from app.views.parts.lesson_stages import num, tex, weights_map
from app.views.parts.lesson_tracks import Stage
from core import lessons

FROM_ONE = {"lesson_stage": "stage", "lesson_head": "stage_head"}  # the link counts them from 1, as the Lesson's
STARTED = "_lesson_speech_started"  # set once the track has picked its first step and frame
DIMS = 32  # dimensions of each frame's vector drawn by the stem stage
WHISPER = (Stage("audio", routes.SPEECH, "audio"), Stage("stem", routes.POSITIONAL, "stem"),
           Stage("encoder_self", routes.PLAYGROUND, "encoder_self"), Stage("masked_self", routes.MASKS, "masked_self"),
           Stage("cross", routes.SPEECH, "cross"), Stage("output", routes.EXPLORE, "output"))
GROUPS = {"audio": "input", "stem": "input", "encoder_self": "encoder", "masked_self": "decoder", "cross": "decoder",
          "output": "output"}
PAGE = "lesson-whisper"  # the message file


def chosen() -> catalog.Entry | None:
    """The sidebar's model when it is an installed speech model (the Lesson then follows it with this track)."""
    key = st.session_state.get("ckpt")
    return next((e for e in resources.speech_lesson_entries() if e.key == key), None)


def title(stage: Stage) -> str:
    """A stage's title in the session's language."""
    return language.words(PAGE)(f"{stage.title}.title")


def speech_map(trace: lessons.SpeechTrace) -> lessons.ModelMap:
    """The map beside the stages: the input blocks, one encoder and one decoder layer's attention, the output."""
    t = language.words(PAGE)
    F, T, D, dk = trace.frames, len(trace.target_tokens), trace.d_model, trace.d_k
    sizes = {"audio": (f"mel ∈ ℝ^({trace.n_mels} × {2 * F})",), "stem": (f"x ∈ ℝ^(F × D) = {F} × {D}",),
             "encoder_self": (f"Q, K, V ∈ ℝ^(F × d_k) = {F} × {dk}", f"A ∈ ℝ^(F × F) = {F} × {F}"),
             "masked_self": (f"A_dec ∈ ℝ^(T × T) = {T} × {T}",), "cross": (f"A_cross ∈ ℝ^(T × F) = {T} × {F}",),
             "output": (f"P ∈ ℝ^(T × V) = {T} × {trace.vocab_size}",)}
    blocks = tuple(lessons.MapBlock(s.block, t(f"map.{s.block}"), GROUPS[s.block], sizes[s.block]) for s in WHISPER)
    return lessons.ModelMap(blocks, trace.n_encoder_layers, trace.n_decoder_layers, trace.n_heads, D, trace.d_ff,
                            "pre")


def _go(delta: int) -> None:
    st.session_state["lesson_stage"] = int(np.clip(st.session_state["lesson_stage"] + delta, 0, len(WHISPER) - 1))


def body(entry: catalog.Entry, show: bool, fs: float) -> None:
    """The Whisper track under the Lesson's title: the clip's trace, the pickers, the map and the stage (``show``:
    not presentation mode, where the pickers fold into a popover beside Next)."""
    t = language.words(PAGE)
    if show:
        st.markdown(t("page.intro"))
    clips = list(speech_clips.SENTENCES)
    widgets.restore_from_url({"lesson_clip": widgets.one_of(clips)}, {"lesson_clip": clips[0]})
    head = widgets.clamped("lesson_head", 0, _heads(entry) - 1)
    trace = widgets.attempt(t("page.follow"), pretrained_resources.speech_lesson, entry,
                            st.session_state["lesson_clip"], head)
    if trace is None:
        return
    if not st.session_state.get(STARTED):  # first visit: the first text row, and the frame it reads most
        st.session_state[STARTED] = True
        st.session_state["lesson_step"] = min(trace.prompt_tokens - 1, len(trace.target_tokens) - 1)
        st.session_state["lesson_token"] = int(np.argmax(trace.alignment[st.session_state["lesson_step"]]))
    widgets.clamped("lesson_stage", 0, len(WHISPER) - 1)
    widgets.clamped("lesson_token", 0, trace.frames - 1)
    widgets.clamped("lesson_step", 0, len(trace.target_tokens) - 1)
    if show:
        with st.container(key="lesson_pickers"):
            _pickers(entry, trace, columns=True)
    stage = st.session_state["lesson_stage"]
    side, main = st.columns([1, 3.3], gap="medium")
    with side:
        lesson_map.draw(speech_map(trace), stage, tuple(s.block for s in WHISPER))
    with main:
        nav = st.columns([1, 1, 1.4] if show else [1, 1, 1.6])
        nav[0].button(t("page.back"), on_click=_go, args=(-1,), disabled=stage == 0, help=t("page.back_help"),
                      key="lesson_prev")
        nav[1].button(t("page.next"), on_click=_go, args=(1,), disabled=stage == len(WHISPER) - 1,
                      help=t("page.next_help"), key="lesson_next", type="primary")
        if not show:
            with nav[2].popover(t("page.pickers"), width="stretch"):
                _pickers(entry, trace, columns=False)
        st.progress((stage + 1) / len(WHISPER), text=t("page.progress", n=stage + 1, total=len(WHISPER),
                                                        name=title(WHISPER[stage])) if show else None)
        widgets.write_to_url(["lesson_clip", "lesson_stage", "lesson_head", "lesson_token", "lesson_step"], FROM_ONE)
        _stage(entry, trace, stage, show, fs)


def _heads(entry: catalog.Entry) -> int:
    """The model's heads per layer, from its config (the model loaded once per server and shared)."""
    return int(pretrained_resources.pretrained(str(entry.path)).config.n_heads)


def _pickers(entry: catalog.Entry, trace: lessons.SpeechTrace, columns: bool) -> None:
    """The clip and stage in one row, head, frame and step in the next (``columns``), or one under the other."""
    t = language.words(PAGE)
    st.caption(t("page.model", label=entry.label, n=len(WHISPER)))
    top = st.columns([3, 2]) if columns else [st.container(), st.container()]
    top[0].selectbox(t("page.clip"), list(speech_clips.SENTENCES), key="lesson_clip",
                     format_func=speech_clips.SENTENCES.get)
    cells = [top[1], *st.columns(3)] if columns else [top[1], *(st.container() for _ in range(3))]
    cells[0].selectbox(t("page.stage"), range(len(WHISPER)), key="lesson_stage",
                       format_func=lambda i: f"{i + 1}. {t(WHISPER[i].title + '.title')}")
    cells[1].selectbox(t("page.head"), range(trace.n_heads), key="lesson_head",
                       format_func=lambda h: t("page.head_option", n=h + 1))
    cells[2].selectbox(t("page.frame"), range(trace.frames), key="lesson_token",
                       format_func=lambda f: t("page.frame_option", n=f, time=trace.frame_labels[f]))
    cells[3].selectbox(t("page.step"), range(len(trace.target_tokens)), key="lesson_step",
                       format_func=lambda n: t("page.step_option", n=n + 1, token=trace.target_tokens[n]))


def _stage(entry: catalog.Entry, trace: lessons.SpeechTrace, stage: int, show: bool, fs: float) -> None:
    """The stage's header, where Whisper departs from the paper, its prose, picture and formula (the picture above
    the prose in presentation mode, so it starts on the first screen), and its links."""
    t = language.words(PAGE)
    here = WHISPER[stage]
    st.header(f"{stage + 1}. {title(here)}")
    paper = t(f"{here.title}.paper", total=trace.n_frames)
    if show:
        st.info(paper, icon=":material/info:")
    else:  # presentation mode: one line until opened, so the chart stays on the first screen
        with st.expander(t("page.differs"), icon=":material/info:"):
            st.markdown(paper)
    first, second = st.container(), st.container()
    words, picture = (first, second) if show else (second, first)  # presentation mode: the picture first
    with picture:
        widgets.attempt(t("page.compute", name=entry.name), DRAW[here.title], trace, fs, words)  # one line
    if here.title == "output":
        widgets.show_user_text(trace.output_text, t("page.transcript", name=entry.name))
    st.page_link(here.route, label=t("page.deeper"), icon=":material/arrow_forward:")
    if here.title in ("cross", "output"):
        st.page_link(routes.SPEECH, label=t("page.whisper_page"), icon=":material/mic:")


def audio(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    columns, i = trace.features.shape[1], st.session_state["lesson_token"]
    words.markdown(t("audio.body", seconds=trace.seconds, samples=trace.samples, mels=trace.n_mels, columns=columns))
    figure = speech_charts.spectrogram(trace.features, title=t("audio.chart", mels=trace.n_mels, columns=columns),
                                       frame=i, time_title=t("audio.time"), bins_title=t("audio.bins"), font_scale=fs)
    widgets.plot(figure, name="lesson-whisper-spectrogram", key="lesson_whisper_spectrogram", stretch=True)
    st.audio(speech_clips.audio(st.session_state["lesson_clip"]))
    st.latex(rf"\mathrm{{mel}} = \log_{{10}} \max(M\,|\mathrm{{STFT}}(s)|^2,\ 10^{{-10}}) \in "
             rf"\mathbb{{R}}^{{{trace.n_mels} \times {columns}}},\quad s \in \mathbb{{R}}^{{{trace.samples}}}")


def stem(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    i = st.session_state["lesson_token"]
    words.markdown(t("stem.body", mels=trace.n_mels, d_model=trace.d_model, frames=trace.frames))
    dims = min(DIMS, trace.d_model)
    figure = speech_charts.frame_rows(trace.embedded[:, :dims].T, title=t("stem.chart", dims=dims,
                                                                          d_model=trace.d_model),
                                      value=t("stem.value"), time_title=t("audio.time"),
                                      rows_title=t("stem.dimension"), frame=i, font_scale=fs)
    widgets.plot(figure, name="lesson-whisper-stem", key="lesson_whisper_stem", stretch=True)
    shown = ", ".join(num(v) for v in trace.embedded[i, :4])
    st.latex(rf"x_{{{i}}} = \mathrm{{GELU}}(\mathrm{{conv}}_2(\mathrm{{GELU}}(\mathrm{{conv}}_1(\mathrm{{mel}}))))_{{{i}}}"
             rf" + PE_{{{i}}} = [{shown}, \dots] \in \mathbb{{R}}^{{{trace.d_model}}}")


def encoder_self(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    i, head = st.session_state["lesson_token"], trace.encoder_head
    words.markdown(t("encoder_self.body", heads=trace.n_heads, d_k=trace.d_k))
    figure = speech_charts.frame_map(head.weights, title=t("encoder_self.chart", head=trace.head + 1),
                                     rows_title=t("encoder_self.rows"), cols_title=t("encoder_self.cols"), frame=i,
                                     font_scale=fs)
    widgets.plot(figure, name="lesson-whisper-encoder", key="lesson_whisper_encoder", stretch=True)
    j = int(np.argmax(head.weights[i]))
    words = tex(t("encoder_self.formula", frame=i, time=trace.frame_labels[i]))
    st.latex(rf"\text{{{words} {tex(trace.frame_labels[j])}}}:\quad a_{{{i},{j}}} = \mathrm{{softmax}}_j\Big("
             rf"\frac{{q_{{{i}}} \cdot k_j}}{{\sqrt{{{trace.d_k}}}}}\Big) = {num(head.weights[i, j])}")
    st.caption(t("encoder_self.mass", frame=i, mass=float(trace.encoder_mass[i]), frames=trace.frames,
                 total=trace.n_frames))


def masked_self(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    step, tokens, dec = st.session_state["lesson_step"], trace.target_tokens, trace.decoder_head
    words.markdown(t("masked_self.body", prompt=" ".join(f"`{s}`" for s in tokens[:trace.prompt_tokens])))
    vega.draw(weights_map, dec.weights, list(tokens), list(tokens), t("masked_self.chart", head=trace.head + 1), fs)
    n = step + 1
    st.latex(rf"a_{{{n}j}} = 0 \ \text{{for}}\ j > {n},\qquad \textstyle\sum_{{j \le {n}}} a_{{{n}j}} = "
             rf"{num(dec.weights[step, :n].sum())}")


def cross(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    step, tokens = st.session_state["lesson_step"], trace.target_tokens
    words.markdown(t("cross.body"))
    if st.session_state.get("lesson_speech_cross", "alignment") == "alignment":  # the radio is under the chart
        matrix, what = trace.alignment, t("cross.show_alignment")
    else:
        matrix, what = trace.cross[-1, trace.head], t("cross.show_head", head=trace.head + 1)
    rows = [f"{a} → {b}" for a, b in zip(tokens, trace.generated_tokens)]
    figure = speech_charts.spectrogram_and_cross(trace.features, matrix, rows, title=t("cross.chart", what=what),
                                                 step=step, font_scale=fs)
    widgets.plot(figure, name="lesson-whisper-cross", key="lesson_whisper_cross", stretch=True)
    st.radio(t("cross.show_alignment"), ["alignment", "head"], key="lesson_speech_cross", horizontal=True,
             label_visibility="collapsed", format_func=lambda c: t("cross.show_alignment") if c == "alignment"
             else t("cross.show_head", head=trace.head + 1))
    j = int(np.argmax(matrix[step]))
    words = tex(t("cross.formula", step=step + 1, token=tokens[step]))
    st.latex(rf"\text{{{words} {tex(trace.frame_labels[j])}}}:\quad a = {num(matrix[step, j])}")
    st.caption(t("cross.alignment_heads", heads=", ".join(f"{l + 1}.{h + 1}" for l, h in trace.alignment_heads)))


def output(trace: lessons.SpeechTrace, fs: float, words) -> None:
    t = language.words(PAGE)
    step, tokens = st.session_state["lesson_step"], trace.target_tokens
    words.markdown(t("output.body", vocab=trace.vocab_size))
    candidates = list(trace.candidates[step])
    vega.draw(candidates_chart, candidates, t("output.chart", token=tokens[step]), fs)
    best, p = candidates[0]
    st.latex(rf"\hat y_{{{step + 1}}} = \arg\max_w\ \mathrm{{softmax}}(\mathrm{{LN}}(h_{{{step}}})\,E^\top)_w = "
             rf"\text{{{tex(best)}}}\ (p = {num(p)}),\quad E \in \mathbb{{R}}^{{{trace.vocab_size} \times "
             rf"{trace.d_model}}}")
    if step < trace.prompt_tokens - 1:  # the prompt's own rows: the next token is the prompt's, not a choice
        st.caption(t("output.forced", token=trace.generated_tokens[step]))
    st.dataframe({t("output.steps"): list(range(1, len(tokens) + 1)), t("output.after"): list(tokens),
                  t("output.predicts"): list(trace.generated_tokens)}, hide_index=True)


#: Each stage's drawing, by its key: (trace, font scale, the container its prose goes to) → drawn.
DRAW: dict[str, Callable[[lessons.SpeechTrace, float, Any], None]] = {
    "audio": audio, "stem": stem, "encoder_self": encoder_self, "masked_self": masked_self, "cross": cross,
    "output": output}
