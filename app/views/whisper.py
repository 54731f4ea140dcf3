"""Whisper, a real encoder-decoder on speech: a shipped clip, an upload or a recording in; the transcript
(or the English translation) out, with the log-mel spectrogram and each output token's cross-attention
over the audio frames on the spectrogram's time axis, the decoder's self-attention and the encoder's.
Always the chosen Whisper model, whatever the sidebar shows.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from app.ui import canvas, export, presentation, widgets
from app import pretrained_resources, routes
from app.services import speech_clips
from app.charts import attention as attention_charts
from app.charts.speech import head_choice, spectrogram_and_cross
from app.views.parts.pretrained import common
from core import Explanation

SENTENCES = speech_clips.SENTENCES
MAX_SECONDS = 8.0  # the encoder's maps grow with the square of the frames: 8 s = 400 frames, one result ≤ 32 MiB
MAX_BYTES = 5 << 20
MAX_TOKENS = 64  # 8 s of speech is some 30 tokens; a beam that never ends stops here
SOURCES = ("Sample clip", "Upload a file", "Record")
ALIGNMENT = "Alignment heads (mean)"


def self_attention_canvas(exp: Explanation, kind: str, rows: Sequence[str], cols: Sequence[str], title: str,
                          key: str) -> None:
    """Every head of ``kind`` on the attention canvas under ``key``, opened on the last layer's first head or on the
    head the reader pinned (a layer past the payload's budget is sent when the reader picks it)."""
    pinned = canvas.pinned(key) or {}
    axes = {"row_title": "frame (attending)", "col_title": "frame (attended to)"} if kind == "encoder" else {}
    look = canvas.Look(title=title, presentation=widgets.font_scale() > 1, theme=canvas.theme(),
                       extra={"name": f"whisper-{kind}-self-attention"}, **axes)
    data = canvas.maps_payload(exp.attention[kind], list(rows), list(cols), kind=kind,
                               layer=int(pinned.get("layer", exp.shape(kind)[0] - 1)),
                               head=int(pinned.get("head", 0)), view=str(pinned.get("view", "head")), look=look)
    canvas.maps(data, key=key)  # a pin reruns the page: the next run reads it


def pair():
    """Two containers side by side, or (presentation mode, in the narrow column beside the chart) one above the other."""
    return (st.container(), st.container()) if presentation.enabled() else st.columns(2)


heading = presentation.heading("Whisper: speech in, text out")  # presentation mode: the popover beside the title
models = pretrained_resources.speech_models()
if not models:
    common.installed("Whisper tiny.en")
    st.stop()
widgets.restore_from_url({"speech_model": widgets.one_of(list(models)), "speech_source": widgets.one_of(SOURCES),
                          "speech_clip": widgets.one_of(list(SENTENCES)), "speech_task": widgets.one_of(["transcribe", "translate"]),
                          "speech_language": widgets.one_of(["detect", "en", "es", "fr", "de", "it", "pt"])})
with heading, presentation.folded("Model and audio", ":material/mic:"):
    with st.expander("What is Whisper?"):
        st.markdown(
            "**Whisper** (OpenAI) is the paper's encoder-decoder on audio. The encoder reads 30 s of sound as a "
            "log-mel spectrogram — two convolutions turn it into 1,500 frames of 20 ms — and the decoder writes the "
            "text one token at a time, its **cross-attention** looking back at the frames. Some heads follow the "
            "speech word by word; the checkpoint names them (*alignment heads*). It runs here, offline.")
    st.page_link(routes.ARCHITECTURE, label="Whisper's diagram and parameters beside the paper's base model "
                 "(Architecture, section 7)", icon=":material/account_tree:")
    model_col, source_col = st.columns([1, 2])
    with model_col:
        name = st.radio("Model", list(models), key="speech_model", horizontal=True,
                        help="\n\n".join(f"**{shown}**: {e.description}" for shown, e in models.items()))
    multilingual = name != "Whisper tiny.en"  # a models-folder Whisper shows both; an English-only one says so

    # ----------------------------------------------------------------------------- input
    with source_col:
        source = st.radio("Audio", SOURCES, key="speech_source", horizontal=True)
    audio, label = None, None
    if source == "Sample clip":
        clip = st.selectbox("Clip", list(SENTENCES), format_func=SENTENCES.get, key="speech_clip",
                            help="Synthesised offline with espeak-ng by assets/make_audio_clips.sh.")
        audio, label = speech_clips.audio(clip), SENTENCES[clip]
    elif source == "Upload a file":
        upload = st.file_uploader(f"WAV, FLAC or OGG, at most {MAX_SECONDS:g} s", type=["wav", "flac", "ogg"],
                                  key="speech_upload", max_upload_size=MAX_BYTES >> 20)
        if upload is not None:
            if upload.size > MAX_BYTES:
                st.error(f"{widgets.plain(upload.name)} is {upload.size / 2**20:.1f} MiB; at most {MAX_BYTES >> 20} MiB.")
            else:
                audio, label = upload.getvalue(), upload.name
    else:
        recording = st.audio_input(f"Record up to {MAX_SECONDS:g} s", key="speech_record")
        if recording is not None:
            audio, label = recording.getvalue(), "your recording"
if audio is None:
    st.info("Pick a clip, upload a file or record to hear what Whisper makes of it.")
    st.stop()



controls, plot = presentation.beside()  # presentation mode: the audio, the transcript and the step beside the chart
with controls:
    task, language = "transcribe", "en"
    if multilingual:
        left, right = pair()
        task = left.radio("Task", ["transcribe", "translate"], key="speech_task", horizontal=True,
                          help="Translate: into English, from any language the model knows.")
        language = right.selectbox("Spoken language", ["detect", "en", "es", "fr", "de", "it", "pt"],
                                   key="speech_language")
    beam = st.session_state.get("speech_beam", False)
    options = {"task": task, "language": None if language == "detect" else language,
               "decoding": "beam" if beam else "greedy", "max_seconds": MAX_SECONDS, "max_new_tokens": MAX_TOKENS}
    exp = widgets.attempt("run Whisper", pretrained_resources.speech_explanation, name, audio, options)
    if exp is None:
        st.stop()
    player, said = pair()
    with player:
        st.audio(audio)
        st.toggle("Beam search (4 beams)", key="speech_beam", help="Greedy takes the likeliest token each step.")
    with said:
        widgets.show_user_text(exp.prediction.text or "(nothing)",
                               f"{'Translation' if task == 'translate' else 'Transcript'} of {label} by {name}:")

    # ------------------------------------------------------------------------- cross-attention on the time axis
    cross = exp.attention["cross"]  # (L, H, T, F)
    layers, heads = exp.shape("cross")
    pick_left, pick_step = pair()
    with pick_left, presentation.folded("Which heads", ":material/tune:"):
        choice = st.selectbox("Heads", [ALIGNMENT, "One head"], key="speech_heads")
        layer = head = None
        if choice == "One head":
            layer_col, head_col = st.columns(2)
            layer = layer_col.number_input("Layer", 1, layers, layers, key="speech_layer") - 1
            head = head_col.number_input("Head", 1, heads, 1, key="speech_head") - 1
    rows = exp.row_labels("cross")
    with pick_step:
        first_text = min(int(exp.options["prompt_tokens"]), len(rows))  # the first row that writes text (1-based)
        step = st.slider("Step", 1, len(rows), first_text, key="speech_step",
                         help="One decoding step: its row is drawn as a curve under the spectrogram.") - 1
matrix, what = head_choice(cross, exp.alignment_heads, layer, head)
figure = spectrogram_and_cross(exp.features, matrix, rows, title=f"Cross-attention over the audio: {what}",
                               step=step, font_scale=widgets.font_scale())
with plot:
    widgets.plot(figure, name="whisper-cross-attention", key="speech_cross", stretch=True)
    export.exports(figure, {"cross": cross, "shown": matrix, "features": exp.features},
                   lambda: pd.DataFrame([{"step": t + 1, "row": rows[t], "frame_start_s": f * 0.02, "weight": float(w)}
                                         for t in range(matrix.shape[0]) for f, w in enumerate(matrix[t])]),
                   "whisper-cross-attention", "speech_export")
prompt = exp.target_tokens[:int(exp.options["prompt_tokens"])]  # what this model's decoder starts from
st.caption(f"Alignment heads (layer.head, from 1): {', '.join(f'{l + 1}.{h + 1}' for l, h in exp.alignment_heads)}. "
           f"The first {len(prompt)} row{'s' if len(prompt) != 1 else ''} read the prompt: "
           f"{widgets.plain(' '.join(prompt))}" + ("" if len(prompt) > 2 else " (an English-only model has no "
                                                     "language or task token)") + ".")
for note in exp.notes:
    st.caption(widgets.plain(note))

# ----------------------------------------------------------------------------- self-attention
st.subheader("Self-attention")
st.caption("Every layer and head, chosen on the map itself (← → heads, ↑ ↓ layers); hover a cell for its weight. "
           "The encoder's map covers the frames the audio fills, one per 20 ms.")
queries, keys, _ = attention_charts.axes(exp, "decoder")
self_attention_canvas(exp, "decoder", queries, keys, "Decoder masked self-attention", "speech_decoder_canvas")
frames = exp.source_tokens
self_attention_canvas(exp, "encoder", frames, frames, f"Encoder self-attention ({len(frames)} frames)",
                      "speech_encoder_canvas")
widgets.write_to_url(["speech_model", "speech_source", "speech_clip", "speech_task", "speech_language"])
