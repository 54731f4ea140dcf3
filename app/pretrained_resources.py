"""The pretrained and speech pages' caches and model calls (issues 11, 21 and 25).

Installed models are found by core (``pretrained_models``: a package look-up, never cached so an
install shows at once); each is loaded once per path by :func:`app.resources.pretrained_model` and
shared; results go through :mod:`app.resources`' gate (weighted by cost: these are the large models) and
its byte-bounded cache, per path, text and options. The sentence and head-finder calls take a catalog
entry, so the MiniLM page and Explore (for any encoder: installed, ``--models DIR`` or uploaded) share them.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from app.services import catalog, costs, speech_clips
from app import resources
from core import (analysis, explain_speech, Explanation, lessons, load_pretrained, pretrained_models, PretrainedEntry,
                  PretrainedModel, rotary_frequencies, rotary_relative_scores, sentence_similarity)

WHISPER_FRAMES = 1500  # encoder positions of every Whisper input (30 s of audio)


def pretrained_entry(name: str) -> PretrainedEntry | None:
    """The installed pretrained model called ``name``, or None when its package is missing."""
    return next((e for e in pretrained_models() if e.name == name), None)


def pretrained(path: str) -> PretrainedModel:
    """The pretrained model at ``path`` (a BERT folder or a ``.gguf`` file), loaded once and shared."""
    return resources.pretrained_model(path, catalog.pretrained_version(Path(path)))


def similarity(e: catalog.Entry, first: str, second: str) -> float:
    """``core.sentence_similarity`` of two sentences by the sentence encoder ``e`` (an upload's in its worker
    process; through the gate; cached per version and sentences)."""
    return resources.model_lesson(sentence_similarity, e, first, second)


def ranked_heads(e: catalog.Entry, text: str, query: int) -> list[dict[str, Any]]:
    """``core.analysis.head_finder`` for token ``query`` of ``text`` in the encoder ``e``'s maps of the cached
    explanation (its first and last tokens, [CLS] and [SEP] or ``<s>`` and ``</s>``, left out)."""
    maps = resources.explain_entry(e, text).attention["encoder"]  # (L, H, T, T)
    return analysis.head_finder(maps, query, ignore=[0, maps.shape[-1] - 1])


@st.cache_data(max_entries=32, show_spinner=False)
def rotary_scores(head_dim: int, base: float, length: int, seed: int) -> np.ndarray:
    """``core.rotary_relative_scores`` as float64 (T, T): q·k of one random q, k at every pair of positions."""
    return np.asarray(rotary_relative_scores(head_dim, base, length, seed), dtype=np.float64)


@st.cache_data(max_entries=8, show_spinner=False)
def rotary_thetas(head_dim: int, base: float) -> np.ndarray:
    """``core.rotary_frequencies``: θ_i (radians per position) of each dimension pair, fastest first."""
    return np.asarray(rotary_frequencies(head_dim, base), dtype=np.float64)


def speech_entries() -> list[PretrainedEntry]:
    """The installed Whisper models (possibly none)."""
    return pretrained_models("audio")


def speech_models() -> dict[str, PretrainedEntry | catalog.Entry]:
    """The Whisper page's models by the name it shows: the installed ones, then the models folder's
    (``my models · …``) and this session's uploads (``uploaded · …``), Hugging Face or CTranslate2 Whisper
    folders."""
    chosen: dict[str, PretrainedEntry | catalog.Entry] = {e.name: e for e in speech_entries()}
    chosen.update({e.label: e for e in catalog.speech_entries(resources.owner())})
    return chosen


def speech_explanation(name: str, audio: bytes, options: dict[str, Any]) -> Explanation:
    """``core.explain_speech`` of the ``audio`` bytes by the Whisper model the page calls ``name`` (through the
    gate; cached by the model's version, the audio's SHA-256 and the options): an installed model loaded once
    and shared, a models-folder one in its worker process, stopped at the gate's run time."""
    entry = speech_models().get(name)
    if entry is None:
        raise ValueError(f"{name} is not installed")
    limit = min(options.get("max_new_tokens", costs.DECODE_TOKENS), costs.DECODE_TOKENS)
    options = resources.sorted_options({**options, "max_new_tokens": limit})
    digest = hashlib.sha256(audio).hexdigest()
    if isinstance(entry, catalog.Entry):
        facts, worker = resources.runner(entry)
        encoded = base64.b64encode(audio).decode("ascii")
        key = ("speech", str(entry.path), catalog.version(entry), digest, repr(options))
        return resources.cached(key, lambda: worker.lesson("explain_speech_encoded", encoded,
                                                           deadline_s=resources.GATE.run_s, **options),
                                "Listening…", costs.cost(facts, WHISPER_FRAMES + limit), resources.WORKER_GRACE_S)
    loaded = resources.pretrained_model(str(entry.path), entry.version)
    key = ("speech", str(entry.path), digest, repr(options))
    work = costs.cost(loaded, WHISPER_FRAMES + limit)
    return resources.cached(key, lambda: explain_speech(loaded, audio, **options), "Listening…", work)


def speech_lesson(entry: catalog.Entry, clip: str, head: int) -> lessons.SpeechTrace:
    """``core.lessons.trace_speech`` of the shipped ``clip`` (a file name of :data:`app.views.parts.speech_clips`)
    by the installed speech model ``entry`` and its ``head`` (through the gate; cached by model, clip and head)."""
    audio = speech_clips.audio(clip)
    loaded = resources.pretrained_model(str(entry.path), catalog.pretrained_version(entry.path))
    work = costs.cost(loaded, WHISPER_FRAMES + lessons.SPEECH_MAX_NEW_TOKENS)
    return resources.cached(("speech-lesson", str(entry.path), clip, head),
                            lambda: lessons.trace_speech(loaded, audio, head), "Listening…", work)


@st.cache_resource(max_entries=4, show_spinner="Counting Whisper's parameters…")
def whisper_parameters(path: str, version: str) -> lessons.WhisperParameters:
    """``lessons.whisper_parameters`` of a model loaded for the count alone (not kept), once per server."""
    return lessons.whisper_parameters(load_pretrained(path).model)
