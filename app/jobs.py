"""Background training jobs: one thread per run, watched by the Train page.

A :class:`JobRegistry` lives once per server process (the page reaches it through
``app.resources.registry()``, an ``st.cache_resource``), so a browser refresh or a
second tab sees the same jobs. Jobs are keyed by run name. Each job runs
``core.train`` in a daemon thread and records what the page shows: progress, the loss
of every step, validation records, the latest attention snapshot of the probe input,
and its outcome (finished, stopped or failed with a one-line message).

No Streamlit here: this module is plain Python and tested on its own.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from core import (CheckpointError, SnapshotTimeline, StepInfo, TrainConfig, TrainResult, get_task, is_out_of_memory,
                  release_memory, set_threads, train)

log = logging.getLogger(__name__)

RUNNING, FINISHED, STOPPED, FAILED = "running", "finished", "stopped", "failed"
DONE = (FINISHED, STOPPED, FAILED)
MAX_KEPT = 20  # finished jobs remembered by the registry (the oldest are forgotten first)
MAX_NAME = 64
SAVE_EVERY = 200  # the most steps an app run goes without writing its resume state


class JobRefused(ValueError):
    """A job could not be started (another one is running, or the name is taken)."""


# ----------------------------------------------------------------------------- names
def sanitize_name(name: str) -> str:
    """A run name safe as a file stem: letters, digits, ``_`` and ``-`` only, never a path.

    Every other run of characters becomes one ``-``; leading/trailing separators are dropped.
    Returns the empty string when nothing usable is left.
    """
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")
    return cleaned[:MAX_NAME].strip("-_")


def default_name(task: str, now: datetime | None = None) -> str:
    """``<task>-<timestamp>``, e.g. ``reverse-20250101-120000``."""
    return sanitize_name(f"{task}-{(now or datetime.now()).strftime('%Y%m%d-%H%M%S')}")


def training_threads() -> int:
    """Intra-op threads for a training thread: all cores but one, so the app stays responsive."""
    return max(1, (os.cpu_count() or 2) - 1)


# ----------------------------------------------------------------------------- errors
def describe_error(error: BaseException) -> str:
    """One line for the user: the message of an expected error, the kind of an unexpected one."""
    if isinstance(error, (ValueError, CheckpointError)):
        return str(error)
    if is_out_of_memory(error):
        return "the device ran out of memory; try a smaller model or batch size"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


# ----------------------------------------------------------------------------- jobs
def with_resume_states(config: TrainConfig) -> TrainConfig:
    """``config`` writing a resume state at least every :data:`SAVE_EVERY` steps and at every
    validation, so a server killed mid-run loses at most that much (resume with ``resume=True``)."""
    return replace(config, save_every=max(1, min(config.save_every, config.eval_every, SAVE_EVERY)))


@dataclass(frozen=True)
class JobView:
    """A consistent, immutable copy of a job's state for drawing (safe to read from any thread)."""

    name: str
    config: TrainConfig
    status: str
    step: int
    total_steps: int
    steps: tuple[int, ...]  # every recorded optimizer step
    losses: tuple[float, ...]  # its training loss
    lrs: tuple[float, ...]  # its learning rate
    tokens_per_s: float
    evaluations: tuple[dict[str, Any], ...]  # the trainer's history records
    snapshot_steps: tuple[int, ...]
    snapshot: dict[str, np.ndarray]  # the latest probe maps: kind → (L, H, Tq, Tk)
    snapshot_step: int | None
    source_tokens: tuple[str, ...] | None  # the probe's tokens (known once the first checkpoint is written)
    target_tokens: tuple[str, ...] | None
    started: float
    finished: float | None
    stop_requested: bool
    error: str | None
    result: TrainResult | None

    @property
    def done(self) -> bool:
        return self.status in DONE

    @property
    def progress(self) -> float:
        return min(1.0, self.step / self.total_steps) if self.total_steps else 0.0

    @property
    def elapsed(self) -> float:
        return (self.finished or time.time()) - self.started

    @property
    def out(self) -> Path:
        return Path(self.config.out)

    def timeline(self) -> SnapshotTimeline | None:
        """The latest snapshot as a one-step timeline (drawn like a checkpoint's); None before the first."""
        if self.snapshot_step is None or not self.snapshot:
            return None
        task = get_task(self.config.task)
        return SnapshotTimeline(
            steps=[self.snapshot_step], kinds=list(self.snapshot), probe_source=task.probe,
            probe_target=task.probe_target, source_tokens=list(self.source_tokens or ()),
            target_tokens=list(self.target_tokens or ()), history=list(self.evaluations), best_step=None,
            stored={(self.snapshot_step, kind): maps for kind, maps in self.snapshot.items()})


class Job:
    """One training run in a background thread. Read it through :meth:`view`."""

    def __init__(self, name: str, config: TrainConfig, *, resume: bool = False) -> None:
        self.name, self.config, self.resume = name, with_resume_states(config), resume
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._status = RUNNING
        self._step = 0
        self._steps: list[int] = []
        self._losses: list[float] = []
        self._lrs: list[float] = []
        self._rate = 0.0
        self._evaluations: list[dict[str, Any]] = []
        self._snapshot_steps: list[int] = []
        self._snapshot: dict[str, np.ndarray] = {}
        self._tokens: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self._started = time.time()
        self._finished: float | None = None
        self._error: str | None = None
        self._result: TrainResult | None = None
        self._thread = threading.Thread(target=self._run, name=f"train-{name}", daemon=True)

    # -- lifecycle
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the run to stop after the current step; it validates and saves a checkpoint first."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- callbacks from the training thread
    def _on_step(self, info: StepInfo) -> None:
        with self._lock:
            self._step = info.step
            self._steps.append(info.step)
            self._losses.append(info.loss)
            self._lrs.append(info.lr)
            self._rate = info.tokens_per_s

    def _on_eval(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._evaluations.append(record)

    def _on_snapshot(self, step: int, maps: dict[str, np.ndarray], index: dict[str, Any]) -> None:
        with self._lock:
            self._snapshot_steps.append(step)
            self._snapshot = maps
            self._tokens = (tuple(index["source_tokens"]), tuple(index["target_tokens"]))

    def _run(self) -> None:
        set_threads(training_threads())  # per thread: inference keeps its own setting
        failure = None
        try:
            result = train(self.config, resume=self.resume, on_step=self._on_step, on_eval=self._on_eval,
                           on_snapshot=self._on_snapshot, should_stop=self._stop.is_set)
        except Exception as error:  # the page shows the message; the log keeps the traceback
            log.exception("training job %s failed", self.name)
            failure = describe_error(error)
        if failure is not None:
            # Outside the except block, so the traceback no longer pins the tensors (e.g. after an OOM).
            release_memory()
            with self._lock:
                self._status, self._error, self._finished = FAILED, failure, time.time()
            return
        with self._lock:
            self._result = result
            self._status = STOPPED if result.stopped == "stopped" else FINISHED
            self._finished = time.time()

    def view(self) -> JobView:
        with self._lock:
            return JobView(
                name=self.name, config=self.config, status=self._status, step=self._step,
                total_steps=self.config.steps, steps=tuple(self._steps), losses=tuple(self._losses),
                lrs=tuple(self._lrs), tokens_per_s=self._rate, evaluations=tuple(self._evaluations),
                snapshot_steps=tuple(self._snapshot_steps), snapshot=dict(self._snapshot),
                snapshot_step=self._snapshot_steps[-1] if self._snapshot_steps else None,
                source_tokens=self._tokens[0] if self._tokens else None,
                target_tokens=self._tokens[1] if self._tokens else None,
                started=self._started, finished=self._finished, stop_requested=self._stop.is_set(),
                error=self._error, result=self._result,
            )


class JobRegistry:
    """Every training job of this server process, keyed by run name (thread-safe)."""

    def __init__(self, max_running: int | None = None) -> None:
        if max_running is None:
            max_running = int(os.environ.get("ATTNSCOPE_MAX_TRAIN_JOBS", "1"))
        self.max_running = max(1, max_running)
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, name: str, config: TrainConfig, *, resume: bool = False) -> Job:
        """Start training ``config`` as the job ``name`` (continuing its resume state when ``resume``).

        Raises:
            JobRefused: ``max_running`` jobs are already running, or ``name`` is running.
        """
        with self._lock:
            running = [j for j in self._jobs.values() if j.alive]
            if any(j.name == name for j in running):
                raise JobRefused(f"a run called {name!r} is already training")
            if len(running) >= self.max_running:
                names = ", ".join(repr(j.name) for j in running)
                raise JobRefused(f"{names} is still training; wait for it to finish or stop it first "
                                 f"(this machine trains one model at a time)")
            job = Job(name, config, resume=resume)
            self._jobs.pop(name, None)
            self._jobs[name] = job
            self._forget_oldest()
            job.start()
        log.info("started training job %s: %s", name, config.command())
        return job

    def get(self, name: str) -> Job | None:
        with self._lock:
            return self._jobs.get(name)

    def jobs(self) -> list[Job]:
        """All jobs, the most recently started first."""
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: j._started, reverse=True)

    def running(self) -> list[Job]:
        return [j for j in self.jobs() if j.alive]

    def is_training(self, out: str | os.PathLike) -> bool:
        """Whether a running job writes to ``out``."""
        target = Path(out).resolve()
        return any(Path(j.config.out).resolve() == target for j in self.running())

    def stop(self, name: str) -> None:
        job = self.get(name)
        if job is not None:
            job.stop()

    def forget(self, name: str) -> None:
        """Drop a finished job from the list (a running one is kept)."""
        with self._lock:
            job = self._jobs.get(name)
            if job is not None and not job.alive:
                del self._jobs[name]

    def _forget_oldest(self) -> None:
        done = sorted((j for j in self._jobs.values() if not j.alive), key=lambda j: j._started)
        for job in done[: max(0, len(self._jobs) - MAX_KEPT)]:
            del self._jobs[job.name]
