"""Every Streamlit cache of the app, and nothing else (the pretrained and speech pages' calls are in
:mod:`app.pretrained_resources`, on top of this module's loaders, gate and cache).

Models are cached once per (path, version) with ``st.cache_resource`` and shared by every
session: pages never mutate them. A checkpoint's version is its verified SHA-256; a pretrained
model's (an installed one or an upload) its files' size and modification time. At most
``MAX_MODELS`` checkpoints and ``MAX_PRETRAINED`` pretrained models stay loaded; each is held
to core's load budget, so the model caches are bounded in bytes too.

Results (explanations, batches, lesson traces) live in one process-wide :class:`ByteLRU`
bounded in bytes (``RESULT_BYTES`` in all, nothing over ``RESULT_ITEM_BYTES`` kept); results
are shared read-only. Every model run goes through one :class:`Gate`, weighted by cost
(parameters × tokens): two cheap runs and one large-model run at once across sessions (a large
model's run uses ``HEAVY_THREADS`` threads at a lower priority, so cheap requests keep the CPU), one per
session, a bounded wait for a slot and a bounded run time, and generation held to ``DECODE_TOKENS``
new tokens. An uploaded model (or one from the models folder) is never loaded or run in the server: the pages
read the facts its worker process reports (``core.ModelFacts``: :func:`checkpoint`), and its explanations, lesson
traces, timeline and Learn pages' model maths run in that worker (``core.lessons.LessonWorker``: loaded once,
tokenizing and running there, killed when a run passes the gate's ``run_s``, ended after ``WORKER_IDLE_S`` unused),
one cached per model version for the ``WORKERS`` most recent, still through the gate, which then only waits; an
upload's check is a large-model request of its session (:func:`gated_upload`); no upload can hold the server.
The training job registry is a ``st.cache_resource`` too.

``MODEL_EVENTS`` counts the models this process loaded and the model runs it made; each count is
logged at INFO (``bench/browser.py`` reads those lines to prove a model is loaded once and that a
layer or head control never re-runs it).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.services import catalog, storage
from app.services.costs import budgeted, cost, tokens
from app.services.jobs import JobRegistry
from app.services.limits import ByteLRU, Gate, freeze, lower_priority
from core import (Checkpoint, device, explain, explain_batch, Explanation, lessons,
                  load_checkpoint, load_pretrained, ModelFacts, PretrainedModel, training)

T = TypeVar("T")
log = logging.getLogger(__name__)
MODEL_EVENTS: Counter[str] = Counter()  # "loaded" and "run", for this server process
MAX_MODELS, MAX_PRETRAINED, WORKERS = 4, 2, 2
RESULT_BYTES, RESULT_ITEM_BYTES = 256 * 2**20, 32 * 2**20
FIGURES = 256  # built charts kept (each at most a 400 × 400 heatmap or a grid of 24 × 24 thumbnails)
WAIT_S, RUN_S = 30.0, 60.0  # seconds a request may wait for a slot, and run before the page gives up
WORKER_GRACE_S = 5.0  # the gate waits this much past RUN_S for a worker process to be stopped and say so
WORKER_IDLE_S = 300.0  # a worker process nobody asked for this long ends (its model's facts stay known)
HEAVY_COST = 5e8  # parameters × tokens from which a request is a large-model one (SmolLM2, Whisper, GPT-2)
GATE = Gate(slots=2, wait_s=WAIT_S, run_s=RUN_S, heavy_cost=HEAVY_COST)
THREADS = max(1, min(2, device.thread_count()))  # intra-op threads of one model run
HEAVY_THREADS = 1  # of a large-model run
device.set_threads(THREADS)


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry:
    """The training jobs of this server process: a refresh or a second tab sees the same jobs."""
    return JobRegistry()


@st.cache_resource(show_spinner=False)
def results() -> ByteLRU:
    """The process-wide result cache, bounded in bytes."""
    return ByteLRU(RESULT_BYTES, RESULT_ITEM_BYTES)


# ----------------------------------------------------------------------------- sessions and the catalog
def owner() -> str:
    """This browser session's upload owner token (made on first use, never taken from the URL)."""
    token = st.session_state.get("_upload_owner")
    if not storage.is_owner(token):
        token = st.session_state["_upload_owner"] = storage.new_owner()
        st.session_state["_upload_janitor"] = catalog.upload_janitor(token)  # removes the uploads when the session ends
    return token


def save_upload(filename: str, data: bytes) -> str:
    """``catalog.save_upload`` for this session (its key; raises its ``CheckpointError``, or the gate's
    ``OverBudget``), checked through the gate (:func:`gated_upload`)."""
    token = owner()
    return gated_upload(GATE, session(), lambda: catalog.save_upload(token, filename, data))


def gated_upload(gate: Gate, session: str, check: Callable[[], T]) -> T:
    """``check()`` (an upload's check: its headers read here, its model loaded in a worker process) as one
    large-model request of ``session`` through ``gate``, at a lower CPU priority: a session uploading again and
    again checks one file at a time, in the one heavy slot (cheap runs of other sessions never wait for it),
    rests after a long check as after a long run, and a zip bomb inflating to the cap yields the cores."""
    def job() -> T:
        lower_priority()  # this gate thread only; the worker process runs at a lower priority of its own
        return check()

    return gate.run(session, job, gate.heavy_cost, WORKER_GRACE_S)


def session() -> str:
    """This browser session's id: whose turn the gate counts a request in."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "local"


def private_server() -> bool:
    """Whether the server listens on loopback only (then the runs folder's runs may be deleted)."""
    return str(st.get_option("server.address") or "") in ("127.0.0.1", "localhost", "::1")


# Re-read every few seconds so new runs appear. The part every session sees is listed once for all of them (a
# class of 100 following the teacher reruns 100 pages a Next); each session's own uploads apart. Shared, not
# copied: tuples of frozen entries.
@st.cache_resource(ttl=3, max_entries=4, show_spinner=False)
def _shared(runs_deletable: bool) -> tuple[tuple[catalog.Entry, ...], tuple[str, ...]]:
    listed, problems = catalog.shared_entries(runs_deletable)
    return tuple(listed), tuple(problems)


@st.cache_resource(ttl=3, max_entries=1024, show_spinner=False)
def _uploads(owner_token: str) -> tuple[tuple[catalog.Entry, ...], tuple[str, ...]]:
    listed, problems = catalog.upload_entries(owner_token)
    return tuple(listed), tuple(problems)


def entries() -> tuple[list[catalog.Entry], list[str]]:
    """The checkpoint catalog this session sees: every session's checkpoints, then its own uploads (re-read every
    few seconds; :func:`clear_entries` at once)."""
    shared, problems = _shared(private_server())
    mine, upload_problems = _uploads(owner())
    return [*shared, *mine], [*problems, *upload_problems]


def clear_entries() -> None:
    """List the catalog anew on the next call (a run saved or deleted, an upload kept)."""
    _shared.clear()
    _uploads.clear()


entries.clear = clear_entries  # type: ignore[attr-defined]


@st.cache_data(ttl=60, show_spinner=False)
def speech_lesson_entries() -> list[catalog.Entry]:
    """The installed speech models the Lesson's picker adds (:func:`app.services.catalog.installed_speech_entries`)."""
    return catalog.installed_speech_entries()


def entry(key: str) -> catalog.Entry | None:
    """The catalog entry for ``key``, or None when it does not exist (never a raw path)."""
    return next((e for e in entries()[0] if e.key == key), None)


def _sha(path: Path) -> str:
    """The checkpoint's verified SHA-256 (its header is read once per version of the file)."""
    return catalog.info(path).sha256


def sorted_options(options: dict[str, Any]) -> dict[str, Any]:
    """The same options always hash to the same cache key, whatever order they were written in."""
    return dict(sorted(options.items()))


# ----------------------------------------------------------------------------- models
def _count(event: str, what: str) -> None:
    """Count a model load or run and log it (``model loaded: <file> (n in this process)``)."""
    MODEL_EVENTS[event] += 1
    log.info("model %s: %s (%d in this process)", event, what, MODEL_EVENTS[event])


@st.cache_resource(max_entries=MAX_MODELS, show_spinner="Loading the model…")
def model(path: str, sha: str) -> Checkpoint:
    """The loaded checkpoint (model in eval mode), shared by every session."""
    _count("loaded", Path(path).name)
    return load_checkpoint(path)


@st.cache_resource(max_entries=MAX_PRETRAINED, show_spinner="Loading the pretrained model…")
def pretrained_model(path: str, version: str) -> PretrainedModel:
    """A pretrained model (BERT-family folder or Llama-family GGUF), keyed by path and file size/mtime."""
    _count("loaded", Path(path).name)
    return load_pretrained(path)


def checkpoint(e: catalog.Entry) -> Checkpoint | PretrainedModel | ModelFacts:
    """The entry's model as the pages read it: a shipped or trained checkpoint or an installed pretrained model,
    loaded here; an upload or a models folder's model never is: its :class:`core.ModelFacts` (kind, shape, a
    checkpoint's header and tokenizers), reported by its worker process (raises one ``ValueError`` line when the
    worker could not load it)."""
    if e.untrusted:
        return explain_worker(str(e.path), catalog.version(e)).facts
    if e.pretrained:
        return pretrained_model(str(e.path), catalog.version(e))
    return model(str(e.path), _sha(e.path))


@st.cache_resource(max_entries=WORKERS, show_spinner="Loading the model in its own process…")
def explain_worker(path: str, version: str) -> lessons.LessonWorker:
    """The worker process that loads and runs the uploaded model at ``path`` (one per model version; an evicted
    one's process ends with it, an idle one after ``WORKER_IDLE_S``): its facts, explanations, and its lessons'
    and Learn pages' model maths."""
    return lessons.LessonWorker(path, deadline_s=GATE.run_s, idle_s=WORKER_IDLE_S)


def runner(e: catalog.Entry) -> tuple[Checkpoint | PretrainedModel | ModelFacts, lessons.LessonWorker | None]:
    """(what estimates a run of ``e``, the worker process that runs it): an uploaded model's facts and its
    worker, started here, outside the gate, so that its run time is the run's alone (raises one
    ``ValueError`` line when it could not load the model); any other model loaded here."""
    if e.untrusted:
        worker = explain_worker(str(e.path), catalog.version(e))
        return worker.start(), worker
    return checkpoint(e), None


# ----------------------------------------------------------------------------- results
_FLIGHTS: dict[Hashable, list] = {}  # key → [its lock, how many sessions hold or wait for it]
_FLIGHTS_LOCK = threading.Lock()


@contextmanager
def _one_run(key: Hashable, wait_s: float) -> Iterator[None]:
    """Sessions asking for the same uncached ``key`` at once (a class following its teacher to a new sentence)
    take turns: the first runs the model, the others wait (at most ``wait_s``: the first's run is bounded by the
    gate) and then find its result in the cache."""
    with _FLIGHTS_LOCK:
        flight = _FLIGHTS.setdefault(key, [threading.Lock(), 0])
        flight[1] += 1
    held = flight[0].acquire(timeout=wait_s)
    try:
        yield
    finally:
        if held:
            flight[0].release()
        with _FLIGHTS_LOCK:
            flight[1] -= 1
            if flight[1] == 0:
                _FLIGHTS.pop(key, None)


def cached(key: Hashable, compute: Callable[[], T], spinner: str, work: float = 0.0, grace_s: float = 0.0) -> T:
    """The cached result for ``key``, else ``compute()`` run through the gate (estimated cost ``work``; waited
    ``grace_s`` past the gate's run time when ``compute`` stops itself there) and kept if small enough; sessions
    asking for one key at once share one run (:func:`_one_run`)."""
    cache = results()
    found, value = cache.get(key)
    if found:
        return value
    with st.spinner(spinner), _one_run(key, GATE.wait_s + GATE.run_s + grace_s):
        found, value = cache.get(key)
        return value if found else _run_cached(key, compute, work, grace_s)


def _run_cached(key: Hashable, compute: Callable[[], T], work: float, grace_s: float) -> T:
    cache = results()
    heavy = GATE.is_heavy(work)

    def job() -> T:
        device.set_threads(HEAVY_THREADS if heavy else THREADS)  # per thread: runs happen in the gate's worker threads
        if heavy:
            lower_priority()  # this worker thread only: it ends with the run
        _count("run", str(key[0]))
        result = freeze(compute())
        cache.put(key, result)
        return result

    return GATE.run(session(), job, work, grace_s)


def explain_entry(e: catalog.Entry, text: str, **options: Any) -> Explanation:
    """Cached explanation of ``text`` by the checkpoint ``e`` (budgeted; an upload's in its worker process:
    see the module doc)."""
    loaded, worker = runner(e)
    options = sorted_options(budgeted(loaded, options))
    key = ("explain", str(e.path), catalog.version(e), text, repr(options))

    def run() -> Explanation:
        if worker is not None:  # stopped at the gate's own run time
            return worker.explain(text, deadline_s=GATE.run_s, **options)
        return explain(loaded, text, **options)

    return cached(key, run, "Running the model…", cost(loaded, tokens(loaded, text, options)),
                  0.0 if worker is None else WORKER_GRACE_S)


def explain_batch_entry(e: catalog.Entry, texts: list[str], **options: Any) -> list[Explanation]:
    """Cached explanations of ``texts`` run together as one padded batch by the checkpoint ``e``."""
    loaded, worker = runner(e)
    options = sorted_options(budgeted(loaded, options))
    key = ("batch", str(e.path), catalog.version(e), tuple(texts), repr(options))
    work = cost(loaded, sum(tokens(loaded, text, options) for text in texts))

    def run() -> list[Explanation]:
        if worker is not None:
            return worker.explain_batch(list(texts), deadline_s=GATE.run_s, **options)
        return explain_batch(loaded, list(texts), **options)

    return cached(key, run, "Running the batch…", work, 0.0 if worker is None else WORKER_GRACE_S)


class _Clear:
    """``resources.explanation.clear()``: forget every cached result and chart (kept for the tests' spies)."""

    @staticmethod
    def clear() -> None:
        results().clear()
        _figure.clear()


explanation = batch_explanation = _Clear()


@st.cache_resource(max_entries=FIGURES, show_spinner=False)
def _figure(key: Hashable, _build: Callable[[], T]) -> T:
    return _build()


def figure(e: catalog.Entry, text: str, options: dict[str, Any], what: tuple, build: Callable[[], T]) -> T:
    """The chart ``build()`` makes of the explanation of ``text`` by ``e`` under ``options``, built once per
    (checkpoint version, text, options, ``what``) and shared read-only by every session: a slider moved
    back, a second session or a fragment rerun draws it without rebuilding (or re-validating) it."""
    return _figure(("figure", str(e.path), catalog.version(e), text, repr(sorted_options(options)), *what), build)


@st.cache_resource(max_entries=8, show_spinner=False)
def _timeline(path: str, sha: str) -> training.SnapshotTimeline:
    return training.snapshot_timeline(model(path, sha))


def timeline(e: catalog.Entry) -> training.SnapshotTimeline:
    """The attention timeline stored in the checkpoint ``e`` (read once per file version; an upload's or a models
    folder's by its worker process)."""
    if e.untrusted:
        return model_lesson(training.timeline_parts, e).timeline()
    return _timeline(str(e.path), _sha(e.path))


def lesson_entry(current: catalog.Entry | None) -> catalog.Entry | None:
    """The model the Lesson follows: the sidebar's, whatever its kind (a translation model, a pretrained text
    encoder-decoder, a decoder-only or an encoder-only model: :func:`core.lessons.lesson_follows`, an upload's from
    its worker's facts), else the shipped translation model (an uploaded speech model's Lesson; an installed one has
    its own track, :mod:`app.views.parts.lesson_whisper`)."""
    if current is not None and (current.task == "translation" or lessons.lesson_follows(checkpoint(current))):
        return current
    return entry(catalog.DEFAULT_KEY)


def head_count(e: catalog.Entry) -> int:
    """How many heads each attention layer of ``e``'s model has (an upload's from its worker's facts)."""
    return int(checkpoint(e).config.n_heads)


def lesson_trace(e: catalog.Entry, text: str, head: int) -> lessons.LessonTrace:
    """Cached :func:`core.lessons.trace_sentence` of ``text`` by the checkpoint or pretrained model ``e``."""
    return model_lesson(lessons.trace_sentence, e, text, head, generates=True)


def decoding_comparison(e: catalog.Entry, text: str, seed: int, temperature: float, top_k: int | None,
                        top_p: float | None) -> lessons.DecodingComparison:
    """Cached :func:`core.lessons.compare_decoding` of ``text`` by the Lesson's model ``e`` (greedy, beam, a
    seeded sample)."""
    return model_lesson(lessons.compare_decoding, e, text, seed, temperature, top_k, top_p, generates=True)


def model_lesson(fn: Callable[..., T], model: catalog.Entry | Checkpoint | PretrainedModel, *args: Any,
                 generates: bool = False, **kwargs: Any) -> T:
    """``fn(loaded model, *args, **kwargs)`` (one of :class:`core.lessons.LessonWorker`'s calls) for an entry or
    the loaded model of one (an unlisted one taken for an upload), cached per model version and arguments,
    through the gate (its cost from the text arguments, and the tokens it may generate when it ``generates``):
    a Learn page's widget that does not touch it draws it from the cache. An upload's runs in its worker
    process, stopped at the gate's run time (one ``ValueError`` line), as its explanations."""
    e = _entry_of(model)
    loaded, worker = runner(e)
    key = ("lesson-" + fn.__name__, str(e.path), catalog.version(e), repr(args), repr(sorted(kwargs.items())))
    work = cost(loaded, sum(tokens(loaded, t, {}) if generates else len(t) // 2 for t in args if isinstance(t, str)))

    def run() -> T:
        return (fn(loaded, *args, **kwargs) if worker is None
                else worker.lesson(fn.__name__, *args, deadline_s=GATE.run_s, **kwargs))

    return cached(key, run, "Running the model…", work, 0.0 if worker is None else WORKER_GRACE_S)


def _entry_of(model: catalog.Entry | Checkpoint | PretrainedModel | ModelFacts) -> catalog.Entry:
    """The catalog entry of ``model`` (an unlisted one taken for an upload)."""
    if isinstance(model, catalog.Entry):
        return model
    if isinstance(model, ModelFacts):
        path, pretrained = Path(model.path), model.pretrained
    elif isinstance(model, Checkpoint):
        path, pretrained = Path(model.info.path), False
    else:
        path, pretrained = Path(model.path), True
    return catalog.entry_at(entries()[0], path, pretrained=pretrained)


@st.cache_resource(max_entries=8, show_spinner="Timing attention…")
def attention_timing(lengths: tuple[int, ...]) -> lessons.AttentionCost:
    """``core.lessons.attention_cost`` at ``lengths`` (median of 7, after a warm-up call), measured once per set
    of lengths: a widget that does not change them shows the same measurement."""
    lessons.attention_cost([16], repeats=2)  # the first call pays for allocation, not for n²
    return lessons.attention_cost(list(lengths), repeats=7)
