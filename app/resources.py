"""Every Streamlit cache of the app, and nothing else.

Models are cached once per (path, sha) with ``st.cache_resource`` and shared by every
session: pages never mutate them. Explanations are cached per (checkpoint, text,
options) with ``st.cache_data``; layer/head sliders only slice a cached record. The
process-wide training job registry is a ``st.cache_resource`` too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from app import catalog
from app.jobs import JobRegistry
from core import (Checkpoint, Explanation, LessonTrace, SnapshotTimeline, explain, explain_batch, load_checkpoint,
                  set_threads, snapshot_timeline, thread_count, trace_translation)
from core import (PretrainedEntry, PretrainedModel, head_finder, load_pretrained, pretrained_models,  # issue 11
                  rotary_frequencies, rotary_relative_scores, sentence_similarity)

# At most two forward passes at a time across all sessions: the machine stays responsive.
_INFERENCE = threading.BoundedSemaphore(2)
set_threads(max(1, min(2, thread_count())))


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry:
    """The training jobs of this server process: a refresh or a second tab sees the same jobs."""
    return JobRegistry()


@st.cache_data(ttl=3, show_spinner=False)
def entries() -> tuple[list[catalog.Entry], list[str]]:
    """The checkpoint catalog (re-read every few seconds so new runs appear)."""
    return catalog.list_entries()


def entry(key: str) -> catalog.Entry | None:
    """The catalog entry for ``key``, or None when it does not exist (never a raw path)."""
    return next((e for e in entries()[0] if e.key == key), None)


def _sha(path: Path) -> str:
    """The checkpoint's verified SHA-256 (its header is read once per version of the file)."""
    return catalog.info(path).sha256


def _sorted(options: dict[str, Any]) -> dict[str, Any]:
    """The same options always hash to the same cache key, whatever order they were written in."""
    return dict(sorted(options.items()))


@st.cache_resource(max_entries=8, show_spinner="Loading the model…")
def model(path: str, sha: str) -> Checkpoint:
    """The loaded checkpoint (model in eval mode), shared by every session."""
    return load_checkpoint(path)


def checkpoint(e: catalog.Entry) -> Checkpoint:
    return model(str(e.path), _sha(e.path))


@st.cache_data(max_entries=512, show_spinner="Running the model…")
def explanation(path: str, sha: str, text: str, options: dict[str, Any]) -> Explanation:
    """``core.explain`` for this checkpoint, text and options."""
    with _INFERENCE:
        return explain(model(path, sha), text, **options)


def explain_entry(e: catalog.Entry, text: str, **options: Any) -> Explanation:
    """Cached explanation of ``text`` by the checkpoint ``e``."""
    return explanation(str(e.path), _sha(e.path), text, _sorted(options))


@st.cache_data(max_entries=64, show_spinner="Running the batch…")
def batch_explanation(path: str, sha: str, texts: tuple[str, ...], options: dict[str, Any]) -> list[Explanation]:
    """``core.explain_batch`` for this checkpoint, texts and options (one padded batch)."""
    with _INFERENCE:
        return explain_batch(model(path, sha), list(texts), **options)


def explain_batch_entry(e: catalog.Entry, texts: list[str], **options: Any) -> list[Explanation]:
    """Cached explanations of ``texts`` run together as one padded batch by the checkpoint ``e``."""
    return batch_explanation(str(e.path), _sha(e.path), tuple(texts), _sorted(options))


@st.cache_resource(max_entries=8, show_spinner=False)
def _timeline(path: str, sha: str) -> SnapshotTimeline:
    return snapshot_timeline(model(path, sha))


def timeline(e: catalog.Entry) -> SnapshotTimeline:
    """The attention timeline stored in the checkpoint ``e`` (read once per file version)."""
    return _timeline(str(e.path), _sha(e.path))


def lesson_entry(current: catalog.Entry | None) -> catalog.Entry | None:
    """The checkpoint the Lesson follows: the sidebar's if it is a translation model, else the shipped one."""
    if current is not None and current.task == "translation":
        return current
    return entry(catalog.DEFAULT_KEY)


@st.cache_data(max_entries=32, show_spinner="Following the sentence through the model…")
def _lesson_trace(path: str, sha: str, text: str, head: int) -> LessonTrace:
    with _INFERENCE:
        return trace_translation(model(path, sha), text, head)


def lesson_trace(e: catalog.Entry, text: str, head: int) -> LessonTrace:
    """Cached :func:`core.trace_translation` of ``text`` by the checkpoint ``e``."""
    return _lesson_trace(str(e.path), _sha(e.path), text, head)


# ----------------------------------------------------------------------------- pretrained models (issue 11)
# The pretrained pages and the Positional page's rotary section. Installed models are found
# by core (``pretrained_models``: a package look-up, never cached so an install shows at once);
# each is loaded once per path and shared; results are cached per path, text and options.
def pretrained_entry(name: str) -> PretrainedEntry | None:
    """The installed pretrained model called ``name``, or None when its package is missing."""
    return next((e for e in pretrained_models() if e.name == name), None)


@st.cache_resource(max_entries=4, show_spinner="Loading the pretrained model (once, a few seconds)…")
def pretrained(path: str) -> PretrainedModel:
    """The pretrained model at ``path`` (a BERT folder or a ``.gguf`` file), shared by every session."""
    return load_pretrained(path)


@st.cache_data(max_entries=128, show_spinner="Running the pretrained model…")
def pretrained_explanation(path: str, text: str, options: dict[str, Any]) -> Explanation:
    """``core.explain`` of ``text`` by the pretrained model at ``path`` with ``options``."""
    with _INFERENCE:
        return explain(pretrained(path), text, **options)


@st.cache_data(max_entries=128, show_spinner="Comparing the sentences…")
def pretrained_similarity(path: str, first: str, second: str) -> float:
    """``core.sentence_similarity`` of two sentences by the encoder at ``path``."""
    with _INFERENCE:
        return sentence_similarity(pretrained(path), first, second)


@st.cache_data(max_entries=128, show_spinner=False)
def pretrained_heads(path: str, text: str, query: int) -> list[dict[str, Any]]:
    """``core.head_finder`` for token ``query`` of ``text`` (the encoder's maps; [CLS] and [SEP] left out)."""
    maps = pretrained_explanation(path, text, {}).attention["encoder"]  # (L, H, T, T)
    return head_finder(maps, query, ignore=[0, maps.shape[-1] - 1])


@st.cache_data(max_entries=32, show_spinner=False)
def rotary_scores(head_dim: int, base: float, length: int, seed: int) -> np.ndarray:
    """``core.rotary_relative_scores`` as float64 (T, T): q·k of one random q, k at every pair of positions."""
    return np.asarray(rotary_relative_scores(head_dim, base, length, seed), dtype=np.float64)


@st.cache_data(max_entries=8, show_spinner=False)
def rotary_thetas(head_dim: int, base: float) -> np.ndarray:
    """``core.rotary_frequencies``: θ_i (radians per position) of each dimension pair, fastest first."""
    return np.asarray(rotary_frequencies(head_dim, base), dtype=np.float64)
