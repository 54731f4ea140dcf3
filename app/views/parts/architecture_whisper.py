"""Architecture, section 7: a real encoder-decoder, Whisper. Its diagram, its parameters counted on the
installed models beside the paper's base model, what Whisper changes, and a link to hear it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import pretrained_resources, routes
from app.ui import widgets
from app.charts.architecture import whisper_diagram
from app.views.parts.pretrained.common import INSTALL
from core import lessons, PretrainedEntry

PAPER = "paper's base model"
DIFFERENCES = (
    "**A convolutional front end instead of a source embedding**: the encoder reads sound, not tokens; two "
    "1-D convolutions turn the 80 × 3,000 log-mel spectrogram into 1,500 frames of 20 ms.",
    "**Pre-norm**: LayerNorm before each sublayer, x + Sublayer(LayerNorm(x)), and a final LayerNorm after "
    "each stack (the paper: post-norm, LayerNorm(x + Sublayer(x))).",
    "**GELU** in the feed-forward networks instead of ReLU.",
    "**Learned decoder positions** (448 of them); the encoder's are sinusoidal, but not the paper's table: "
    "sines then cosines (two halves, not interleaved) with a slightly different frequency spacing, "
    "exp(−ln(10000)·i/(d/2 − 1)).",
    "**No bias on the key projections**, and token embeddings not multiplied by √D; the output projection "
    "shares the token embedding, as the paper's does.",
)


def parameter_frame(counted: dict[str, lessons.WhisperParameters]) -> pd.DataFrame:
    """One row per part: the paper's base model (formula) and each Whisper model (counted on it), as text
    with thousands separators; "—" where the paper's model has no such part."""
    first = next(iter(counted.values()))
    frame = pd.DataFrame({"part": [p.part for p in first.parts] + ["total"],
                          PAPER: [_count(p.paper) for p in first.parts] + [_count(first.paper_total)]})
    for name, params in counted.items():
        column = f"{name} ({params.config.n_encoder_layers} + {params.config.n_decoder_layers} layers)"
        frame[column] = [_count(p.whisper) for p in params.parts] + [_count(params.total)]
    return frame


def _count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _counted(entries: list[PretrainedEntry]) -> dict[str, lessons.WhisperParameters]:
    counted = {}
    for entry in entries:
        params = widgets.attempt(f"count {entry.name}'s parameters", pretrained_resources.whisper_parameters, str(entry.path),
                                 entry.version)
        if params is not None:
            counted[entry.name] = params
    return counted


def whisper_section(font_scale: float) -> None:
    """The body of the Architecture page's section 7, "A real encoder-decoder: Whisper"."""
    st.markdown(
        "Every encoder-decoder above is one we trained on generated data. **Whisper** (OpenAI, 2022) is the "
        "same architecture trained on 680,000 hours of speech: the encoder reads 30 s of audio, the decoder "
        "writes the transcript (or its English translation), and its **cross-attention** lines each written "
        "token up with the sound it comes from.")
    entries = pretrained_resources.speech_entries()
    if not entries:
        st.info(f"Whisper is not installed on this machine; from the repository root run `{INSTALL}` and "
                "restart the app to see its diagram and parameter counts here.")
        st.markdown("\n".join(f"- {line}" for line in DIFFERENCES))
        return
    counted = _counted(entries)
    if not counted:
        return
    names, (left, right) = list(counted), st.columns([2, 3])
    with left:
        drawn = st.radio("Draw", names, key="arch_whisper", horizontal=True) if len(names) > 1 else names[0]
        st.markdown("**What the paper's model doesn't have:**\n" + "\n".join(f"- {line}" for line in DIFFERENCES))
        st.page_link(routes.SPEECH, label="Hear it: the Whisper page",
                     icon=":material/mic:")
    with right:
        widgets.diagram(whisper_diagram(counted[drawn].config), key="arch_whisper_diagram", font_scale=font_scale)
        st.caption("Read bottom to top. Dashed arrows are the residual connections; the orange arrow carries the "
                   "frames into every decoder layer's cross-attention.")
    st.markdown("**Parameters, part by part**, counted on each installed model (sum of its tensors' sizes) "
                "beside the same parts of the paper's base model from its formulas (N = 6, D = 512, d_ff = 2,048, "
                "h = 8, a shared vocabulary of about 37,000 tokens).")
    st.dataframe(parameter_frame(counted), hide_index=True, width="content")
    base = counted.get("Whisper base")
    st.caption(
        f"The paper reports {lessons.PAPER_REPORTED / 1e6:.0f} M for its base model; its formula gives "
        f"{next(iter(counted.values())).paper_total / 1e6:.1f} M. "
        + ("Whisper base has the paper's base sizes (6 + 6 layers, D = 512, 8 heads, d_ff = 2,048): each of its "
           "encoder layers has exactly 512 parameters fewer than the paper's (the key projection's bias) and each "
           "decoder layer 1,024 fewer (two attention sublayers). " if base is not None else "")
        + "The files store each key bias as zeros beside the query and value biases; those zeros are not counted "
        f"(largest stored: {max(p.largest_key_bias for p in counted.values()):g}).")
