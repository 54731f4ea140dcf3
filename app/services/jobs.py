"""Background training jobs: one thread per run, watched by the Train page.

A :class:`JobRegistry` lives once per server process (the page reaches it through
``app.resources.registry()``, an ``st.cache_resource``), so a browser refresh or a
second tab sees the same jobs. Jobs are keyed by run name. Each job runs
``core.training.train`` in a daemon thread and records what the page shows: progress, the loss
of every step, validation records, the latest attention snapshot of the probe input,
and its outcome (finished, stopped or failed with a one-line message).

A run nobody watches stops: every Train page showing a running job calls :meth:`Job.watch` about
once a second, and a run not watched for ``IDLE_S`` seconds stops after its current step (it
validates and saves, as a stop from the page does) unless it was started to run on (``run_on``).
Every session that opens the Train page sees every job, running or done, and why it stopped.

No Streamlit here: this module is plain Python and tested on its own.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from app.services.job_view import FAILED, FINISHED, RUNNING, STOPPED, JobView
from core import CheckpointError, device, training

log = logging.getLogger(__name__)

MAX_KEPT = 20  # finished jobs remembered by the registry (the oldest are forgotten first)
MAX_NAME = 64
SAVE_EVERY = 200  # the most steps an app run goes without writing its resume state
IDLE_S = 600.0  # seconds a run may go unwatched before it stops (unless started to run on)


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
    if device.is_out_of_memory(error):
        return "the device ran out of memory; try a smaller model or batch size"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


# ----------------------------------------------------------------------------- jobs
def with_resume_states(config: training.TrainConfig) -> training.TrainConfig:
    """``config`` writing a resume state at least every :data:`SAVE_EVERY` steps and at every
    validation, so a server killed mid-run loses at most that much (resume with ``resume=True``)."""
    return replace(config, save_every=max(1, min(config.save_every, config.eval_every, SAVE_EVERY)))


class Job:
    """One training run in a background thread. Read it through :meth:`view`."""

    def __init__(self, name: str, config: training.TrainConfig, *, resume: bool = False, run_on: bool = False) -> None:
        self.name, self.config, self.resume, self.run_on = name, with_resume_states(config), resume, run_on
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._seen = time.monotonic()
        self._idle = False
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
        self._result: training.TrainResult | None = None
        self._thread = threading.Thread(target=self._run, name=f"train-{name}", daemon=True)

    # -- lifecycle
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the run to stop after the current step; it validates and saves a checkpoint first."""
        self._stop.set()

    def watch(self) -> None:
        """Someone is looking at this run (the Train page calls this whenever it draws it)."""
        with self._lock:
            self._seen = time.monotonic()

    def _should_stop(self) -> bool:
        """Asked by the trainer after every step: stop when asked to, or when unwatched for ``IDLE_S``."""
        if self._stop.is_set():
            return True
        with self._lock:
            if not self.run_on and time.monotonic() - self._seen > IDLE_S:
                if not self._idle:
                    log.info("training job %s: nobody watched it for %.0f s; stopping", self.name, IDLE_S)
                self._idle = True
            return self._idle

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- callbacks from the training thread
    def _on_step(self, info: training.StepInfo) -> None:
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
        device.set_threads(training_threads())  # per thread: inference keeps its own setting
        failure = None
        try:
            result = training.train(self.config, resume=self.resume, on_step=self._on_step, on_eval=self._on_eval,
                           on_snapshot=self._on_snapshot, should_stop=self._should_stop)
        except Exception as error:  # the page shows the message; the log keeps the traceback
            log.exception("training job %s failed", self.name)
            failure = describe_error(error)
        if failure is not None:
            # Outside the except block, so the traceback no longer pins the tensors (e.g. after an OOM).
            device.release_memory()
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
                error=self._error, result=self._result, run_on=self.run_on, stopped_idle=self._idle,
            )


class JobRegistry:
    """Every training job of this server process, keyed by run name (thread-safe)."""

    def __init__(self, max_running: int | None = None) -> None:
        if max_running is None:
            max_running = int(os.environ.get("ATTNSCOPE_MAX_TRAIN_JOBS", "1"))
        self.max_running = max(1, max_running)
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def start(self, name: str, config: training.TrainConfig, *, resume: bool = False, run_on: bool = False) -> Job:
        """Start training ``config`` as the job ``name`` (continuing its resume state when ``resume``;
        training on with nobody watching when ``run_on``, else stopping after ``IDLE_S`` unwatched).

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
            job = Job(name, config, resume=resume, run_on=run_on)
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
