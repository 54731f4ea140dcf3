"""Explain with an untrusted model where a deadline really stops it: a worker process.

A model run holds a core for as long as torch computes, and no Python time limit can interrupt it: an
uploaded model whose maths is legal but huge would hold the server. :class:`ExplainWorker` loads the
model ONCE in a child process (``python -I``, at a lower CPU priority, one intra-op thread, its address
space capped at what it has after importing torch plus ``memory_bytes``) and answers
``explain_batch(texts, **options)`` there. A call that passes its deadline kills the child and raises one
``ValueError`` line; so does a child that dies (its memory cap, a crash, a kill) or fails; the next call
starts a fresh child. A child left idle for ``idle_s`` seconds ends (its memory goes back to the system); the
model's :class:`~core.inspect.facts.ModelFacts`, reported when it loaded, stay with the worker, and the next run
starts a fresh child. Requests and answers are JSON lines (:mod:`core.text.child`); the answer's arrays
travel as a ``safetensors`` file in a private temporary folder (:mod:`core.inspect.wire`): no pickle.
A subclass may name more calls the child answers (:meth:`ExplainWorker.call`: a function of the loaded model
from an explicit registry, its result made of registered records; :class:`core.lessons.LessonWorker`).
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from safetensors.numpy import load_file, save_file

from core.budget import LOAD_BUDGET
from core.inspect.facts import ModelFacts, facts_of
from core.inspect.records import Explanation
from core.inspect.subject import MAP_BUDGET_BYTES, TRACE_BUDGET_BYTES
from core.inspect.wire import Records, from_wire, pack, to_wire, unpack
from core.io.atomic import process_folder
from core.io.pretrained.memory import budget_bytes
from core.io.pretrained.load import is_pretrained
from core.text.child import Child, first_line, serve

T = TypeVar("T")
log = logging.getLogger(__name__)

ROOT = str(Path(__file__).resolve().parents[2])
BLOB = "answer.safetensors"  # the answer's arrays, in the worker's private folder
# The child: core importable from the repository (sys.argv[2]); the worker class's child module's serve_child
# does the rest.
_CHILD = "import sys\nsys.path.insert(0, sys.argv[2])\nfrom {module} import serve_child\nserve_child()\n"


def memory_budget(path: str | os.PathLike) -> int:
    """Bytes a worker for the model at ``path`` may address beyond the interpreter's own: its format's
    load budget for weights twice (the file's tensors and the built model, while loading; a pretrained
    model's is what the machine can give it now), the activation budget, and one explanation's trace or held
    maps twice (the run's and the answer's copy)."""
    weights = budget_bytes() if is_pretrained(path) else 4 * LOAD_BUDGET.max_parameters
    return 2 * weights + LOAD_BUDGET.max_activation_bytes + 2 * max(MAP_BUDGET_BYTES, TRACE_BUDGET_BYTES)


class ExplainWorker:
    """:func:`core.explain_batch` on the model at ``path``, run in a child process.

    Each request is bounded by ``deadline_s`` seconds, the child's start (loading the model) by
    ``startup_s``; the child may address ``memory_bytes`` beyond what it holds after importing torch
    (default: :func:`memory_budget`); with ``idle_s`` a child unused for that long ends. Thread-safe (one call
    at a time); :meth:`close` ends the child, and so does dropping the worker (the child ends when its stdin
    closes). With ``check_weights`` the child checks a pretrained model's weights for NaN and ±Inf as it loads (an
    upload is refused then), not at the model's first run. ``starts`` counts the
    children started. A subclass names its child's module (``child_module``, whose ``serve_child`` serves
    the calls) and the records its calls' results may hold (``records``).
    """

    child_module = __name__
    records: Records = {}

    def __init__(self, path: str | os.PathLike, deadline_s: float = 60.0, memory_bytes: int | None = None,
                 startup_s: float = 120.0, idle_s: float | None = None, check_weights: bool = False) -> None:
        self.path, self.deadline_s, self.startup_s, self.idle_s = str(path), deadline_s, startup_s, idle_s
        self.check_weights = check_weights
        self.memory_bytes = memory_budget(path) if memory_bytes is None else memory_bytes
        self.starts = 0
        self._facts: ModelFacts | None = None
        self._lock = threading.Lock()
        self._idle: threading.Timer | None = None
        self._folder = process_folder("attnscope-worker-")  # private (0700): the answers' arrays
        self._child = Child(_CHILD.format(module=self.child_module), [ROOT],
                            env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
                            name="attnscope-explain")
        weakref.finalize(self, _clean_up, self._child, self._folder)

    @property
    def facts(self) -> ModelFacts:
        """The model's :class:`~core.inspect.facts.ModelFacts` (the first call starts the child, which loads the
        model; later ones answer from what it reported, running or not).

        Raises:
            ValueError: the model could not be loaded in time or within the memory cap (one line).
        """
        with self._lock:
            if self._facts is None:
                self._start()
                self._rest()
            assert self._facts is not None
            return self._facts

    def start(self) -> ModelFacts:
        """Start a child if none is running (it loads the model), so that the next run only runs; the
        model's facts.

        Raises:
            ValueError: as :attr:`facts`.
        """
        with self._lock:
            if not self._child.alive():
                self._start()
            self._rest()
            assert self._facts is not None
            return self._facts

    @property
    def pid(self) -> int | None:
        """The running child's process id, or None when no child is running."""
        return self._child.process.pid if self._child.alive() and self._child.process is not None else None

    def explain(self, text: str, *, deadline_s: float | None = None, **options: Any) -> Explanation:
        """:func:`core.explain` of ``text`` in the child (see :meth:`explain_batch`)."""
        return self.explain_batch([text], deadline_s=deadline_s, **options)[0]

    def explain_batch(self, texts: list[str], *, deadline_s: float | None = None,
                      **options: Any) -> list[Explanation]:
        """:func:`core.explain_batch` of ``texts`` in the child, bounded by ``deadline_s`` (default: the
        worker's).

        Raises:
            ValueError: what ``explain_batch`` raises, or the run passed its deadline (the child was
                killed), or the child died or failed: always one line.
        """
        return self._exchange({"texts": list(texts), "options": options}, deadline_s, _received)

    def call(self, name: str, *args: Any, deadline_s: float | None = None, **kwargs: Any) -> Any:
        """``function(model, *args, **kwargs)`` in the child, for the function its child module registers as
        ``name``, bounded by ``deadline_s`` (default: the worker's); ``args`` and ``kwargs`` are JSON values.

        Raises:
            ValueError: a name the child does not know, what the function raises, or the run passed its
                deadline, or the child died or failed: always one line.
        """
        message = {"call": name, "args": list(args), "kwargs": kwargs}
        return self._exchange(message, deadline_s, lambda value, blob: _received_value(value, blob, self.records))

    def _exchange(self, message: dict[str, Any], deadline_s: float | None, read: Callable[[Any, Path], T]) -> T:
        """``read(answer, blob)`` of the child's answer to ``message`` within the deadline (see :meth:`call`)."""
        deadline = self.deadline_s if deadline_s is None else deadline_s
        with self._lock:
            if not self._child.alive():
                self._start()
            blob = Path(self._folder, BLOB)
            blob.unlink(missing_ok=True)
            status, value = self._child.ask(message, deadline, "run")
            self._rest()
            if status == "ok":
                return read(value, blob)
            reason = self._failure(status, value)
            if status != "error" or "memory" in reason:  # dead, stopped, or not to be trusted again
                self._child.kill()
        if status == "timeout":
            log.warning("a run of %s passed its %.1f s deadline; its worker was killed", self.path, deadline)
            raise ValueError(f"running the model took longer than {deadline:g} s and was stopped; "
                             "try a shorter input or fewer generated tokens")
        raise ValueError(reason)

    def _start(self) -> None:
        """Start a fresh child (the model loaded); called with the lock held.

        Raises:
            ValueError: it did not answer ready.
        """
        self.starts += 1
        status, value = self._child.start({"path": self.path, "folder": self._folder,
                                           "memory_bytes": self.memory_bytes, "check": self.check_weights},
                                          self.startup_s)
        if status != "ready":
            self._child.kill()
            if status == "timeout":
                raise ValueError(f"loading the model took longer than {self.startup_s:g} s and was stopped")
            raise ValueError(self._failure(status, value))
        try:
            self._facts = ModelFacts.from_json(value)
        except ValueError:
            self._child.kill()
            raise ValueError("loading the model failed: its worker's answer could not be read") from None

    def _rest(self) -> None:
        """(Re)arm the idle timer after a use (called with the lock held): the child ends ``idle_s`` from now
        unless another call comes first."""
        if self.idle_s is None:
            return
        if self._idle is not None:
            self._idle.cancel()
        self._idle = threading.Timer(self.idle_s, _end_if_idle, args=(weakref.ref(self), self.starts))
        self._idle.daemon = True
        self._idle.start()

    def _end_idle(self, starts: int) -> None:
        """End the child the timer armed after start number ``starts`` was for, unless a call is under way."""
        if self._lock.acquire(blocking=False):
            try:
                if self.starts == starts and self._child.alive():
                    log.info("the worker of %s was idle for %.0f s; its process ends", self.path, self.idle_s)
                    self._child.kill()
            finally:
                self._lock.release()

    def _failure(self, status: str, value: Any) -> str:
        """One line for a child that failed (``error``) or died (``ended``)."""
        cap = f"{self.memory_bytes / 2**20:,.0f} MiB"
        if status == "ended":
            return f"running the model failed: its worker process ended (a crash, or past its {cap} memory cap)"
        if value == "out of memory" or "can't allocate memory" in str(value):
            return f"running the model failed: it needs more than its {cap} memory cap"
        return (str(value).splitlines() or ["running the model failed"])[0][:300]

    def close(self) -> None:
        """End the child process."""
        with self._lock:
            if self._idle is not None:
                self._idle.cancel()
            self._child.kill()


def _end_if_idle(ref: weakref.ref[ExplainWorker], starts: int) -> None:
    worker = ref()
    if worker is not None:
        worker._end_idle(starts)


def _received(records: Any, blob: Path) -> list[Explanation]:
    """The explanations of an answer: its records and the arrays the child wrote to ``blob``.

    Raises:
        ValueError: an answer that is not what the child writes (one line).
    """
    return _read(lambda arrays: from_wire(records, arrays), blob)


def _received_value(value: Any, blob: Path, records: Records) -> Any:
    """The value of a call's answer (:func:`core.inspect.wire.unpack`) with the arrays in ``blob``."""
    return _read(lambda arrays: unpack(value, arrays, records), blob)


def _read(build: Callable[[dict[str, Any]], T], blob: Path) -> T:
    try:
        return build(load_file(blob) if blob.exists() else {})
    except Exception as error:  # a torn or foreign blob: safetensors' own error types included
        raise ValueError(f"running the model failed: its worker's answer could not be read ({first_line(error)})") from None
    finally:
        blob.unlink(missing_ok=True)


def _clean_up(child: Child, folder: str) -> None:
    child.kill()
    shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------- the child's side
def _cap_memory(headroom: int) -> None:
    """Cap this process's address space at what it has now plus ``headroom`` bytes (Linux)."""
    import resource
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        used = 0
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = used + headroom if hard == resource.RLIM_INFINITY else min(used + headroom, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _setup(message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load the model once, under the memory cap; (state, its facts)."""
    import torch

    from core.inspect.subject import as_subject
    from core.io.checkpoint import load
    from core.io.pretrained.finite import ensure_finite
    from core.io.pretrained.load import load_pretrained

    torch.set_num_threads(1)
    _cap_memory(int(message["memory_bytes"]))
    path = message["path"]
    loaded = load_pretrained(path) if is_pretrained(path) else load(path)
    subject = as_subject(loaded)
    if message.get("check"):
        ensure_finite(subject.model)  # a NaN weight refused now, not at the first run
    facts = facts_of(loaded, sum(p.numel() for p in subject.model.parameters()))
    return {"loaded": loaded, "subject": subject, "folder": message["folder"]}, facts.to_json()


def _answer(calls: Mapping[str, Callable[..., Any]], records: Records, state: dict[str, Any],
            message: dict[str, Any]) -> Any:
    """Explain the texts, or run the named call; the answer as JSON, its arrays written to the private folder."""
    from core.inspect.explainer import explain_batch
    from core.io.checkpoint import CheckpointError

    name = message.get("call")
    if name is not None and name not in calls:
        raise ValueError(f"the worker has no call named {str(name)[:60]!r}")
    try:
        if name is None:
            value, arrays = to_wire(explain_batch(state["subject"], list(message["texts"]), **message["options"]))
        else:
            value, arrays = pack(calls[name](state["loaded"], *message["args"], **message["kwargs"]), records)
    except (ValueError, MemoryError):  # a refusal, already one line for the user; memory: see _failure
        raise
    except CheckpointError as refusal:  # a weight found non-finite at the model's first run: the loader's line
        raise ValueError(str(refusal)) from None
    except BaseException as error:  # a bug, or native code failing (a tokenizer's panic)
        raise RuntimeError(f"running the model failed: {first_line(error)}") from None
    if arrays:
        save_file(arrays, os.path.join(state["folder"], BLOB))
    return value


def serve_child(calls: Mapping[str, Callable[..., Any]] | None = None, records: Records | None = None) -> None:
    """The child process's main loop (``python -I -c`` code of :class:`ExplainWorker`): explanations, and
    ``calls`` (name → function of the loaded model) whose results hold only ``records``."""
    serve(_setup, lambda state, message: _answer(calls or {}, records or {}, state, message))
