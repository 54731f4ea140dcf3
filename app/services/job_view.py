"""What the Train page draws of a training job: :class:`JobView`, an immutable copy of its state, and
the job statuses. No Streamlit here (see :mod:`app.services.jobs`, which makes these views).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core import get_task, training

RUNNING, FINISHED, STOPPED, FAILED = "running", "finished", "stopped", "failed"
DONE = (FINISHED, STOPPED, FAILED)


@dataclass(frozen=True)
class JobView:
    """A consistent, immutable copy of a job's state for drawing (safe to read from any thread)."""

    name: str
    config: training.TrainConfig
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
    result: training.TrainResult | None
    run_on: bool = False  # keeps training with nobody watching
    stopped_idle: bool = False  # stopped because nobody watched it for IDLE_S

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

    def timeline(self) -> training.SnapshotTimeline | None:
        """The latest snapshot as a one-step timeline (drawn like a checkpoint's); None before the first."""
        if self.snapshot_step is None or not self.snapshot:
            return None
        task = get_task(self.config.task)
        return training.SnapshotTimeline(
            steps=[self.snapshot_step], kinds=list(self.snapshot), probe_source=task.probe,
            probe_target=task.probe_target, source_tokens=list(self.source_tokens or ()),
            target_tokens=list(self.target_tokens or ()), history=list(self.evaluations), best_step=None,
            stored={(self.snapshot_step, kind): maps for kind, maps in self.snapshot.items()})
