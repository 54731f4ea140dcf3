"""The parts of a training run around the step: processes, the run record, snapshots, validation,
checkpoints and the resume state. :func:`core.training.trainer.train` drives them.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from core.device import resolve_device
from core.io.checkpoint import CheckpointError, load, save
from core.model.transformer import Transformer
from core.tasks import get_task
from core.training.config import TrainConfig
from core.training.evaluation import evaluate, is_better
from core.budget import check_budget
from core.training.setup import build_tokenizers, model_config
from core.training.snapshots import SNAPSHOT_PREFIX, probe_snapshot
from core.training.state import load_state, resume_state_path, save_state
from core.training.step import make_optimizer

log = logging.getLogger(__name__)

# Fields that may change when a run is resumed; any other difference is refused.
RESUMABLE_CHANGES = {"steps", "progress", "device", "eval_every", "save_every", "patience", "stop_at", "compile"}
SnapshotCallback = Callable[[int, dict[str, Any], dict[str, Any]], None]


class Distributed:
    """Rank and world size from ``torchrun``'s environment; one process when absent."""

    def __init__(self, device_name: str) -> None:
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        device = resolve_device(device_name)
        if self.world > 1:
            if device.type == "cuda":
                device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                torch.cuda.set_device(device)
            if not dist.is_initialized():
                dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        self.device = device

    @property
    def main(self) -> bool:
        """Whether this is the process that validates, snapshots and writes files."""
        return self.rank == 0

    def agree(self, flag: bool) -> bool:
        """Rank 0's decision, shared with every rank."""
        if self.world == 1:
            return flag
        value = torch.tensor([int(flag)], device=self.device if self.device.type == "cuda" else "cpu")
        dist.broadcast(value, src=0)
        return bool(value.item())

    def wrap(self, model: Transformer, compile: bool) -> torch.nn.Module:
        """What the step calls: DDP across processes, compiled when asked."""
        net = torch.nn.parallel.DistributedDataParallel(model) if self.world > 1 else model
        return torch.compile(net) if compile else net


class Throughput:
    """Tokens per second over a sliding window of about five seconds."""

    def __init__(self) -> None:
        self.tokens, self.start = 0, time.perf_counter()

    def add(self, tokens: int) -> float:
        """Count ``tokens`` just processed; return the window's rate."""
        self.tokens += tokens
        elapsed = time.perf_counter() - self.start
        rate = self.tokens / max(elapsed, 1e-9)
        if elapsed > 5.0:
            self.tokens, self.start = 0, time.perf_counter()
        return rate


class Run:
    """One run's model, optimizer and record (history, snapshots, best step), fresh or resumed."""

    def __init__(self, config: TrainConfig, ctx: Distributed, resume: bool,
                 on_snapshot: SnapshotCallback | None) -> None:
        self.config, self.ctx, self.on_snapshot = config, ctx, on_snapshot
        self.state_file = resume_state_path(config.out)
        if resume and not self.state_file.exists():  # never start afresh over the run it meant to continue
            raise CheckpointError(f"cannot resume {Path(config.out).name}: there is no resume state "
                                  f"{self.state_file.name} beside it; train without --resume to start "
                                  "afresh (it replaces that checkpoint) or choose another --out")
        self.task = task = get_task(config.task)
        torch.manual_seed(config.seed)
        sizes = None if config.train_size is None else (config.train_size, *task.default_sizes[1:])
        self.data = task.generate(config.seed, sizes)
        self.tokenizers = build_tokenizers(task, self.data)
        options = config.model_options()
        architecture = model_config(task, self.tokenizers, self.data, **options)
        check_budget(architecture)  # never train a model the app would refuse to open
        self.model = Transformer(architecture).to(ctx.device)
        self.optimizer = make_optimizer(self.model)
        used = list(sizes or task.default_sizes)  # what regenerates these splits (sort repeats short strings)
        self.record: dict[str, Any] = {
            "train": {**asdict(config), "sizes": used, "command": config.command(), "world_size": ctx.world},
            "labels": list(task.labels or ()), "history": [], "snapshots": {"steps": []}}
        self.snapshots: dict[str, torch.Tensor] = {}
        self.start = 0
        if resume:
            self._restore()
        self.best, self.stale = _best_so_far(self.record["history"], task.metric)
        if ctx.main and self.start == 0:
            self.snapshot(0)

    @property
    def pad_id(self) -> int | None:
        """The padding id of the targets (None for class labels)."""
        return self.model.config.pad_id if self.task.architecture != "encoder" else None

    def snapshot(self, step: int) -> None:
        """Record the probe's attention now."""
        maps, index = probe_snapshot(self.model, self.tokenizers, self.task, self.data)
        for kind, array in maps.items():
            self.snapshots[f"{SNAPSHOT_PREFIX}{step}/{kind}"] = torch.from_numpy(array).half()
        self.record["snapshots"] = {**index, "steps": [*self.record["snapshots"]["steps"], step]}
        if self.on_snapshot:
            self.on_snapshot(step, maps, index)

    def write_checkpoint(self) -> None:
        """Save the model with the run record and snapshots to ``config.out`` (atomically)."""
        save(self.config.out, self.model, self.tokenizers, task=self.task.name,
             metrics=self.record.get("metrics", {}), extra=self.record, extra_tensors=self.snapshots)

    def write_state(self, step: int) -> None:
        """Save everything needed to resume after ``step``."""
        save_state(self.state_file, self.model, self.tokenizers, self.optimizer, task=self.task.name, step=step,
                   run=self.record, extra_tensors=self.snapshots)

    def validate(self, step: int, entry: dict[str, Any]) -> str | None:
        """Measure the validation split, append ``entry`` + metrics to the history, keep the best model.

        Returns:
            why the run should stop ("target reached", "early stopping"), or None to go on.
        """
        metrics = evaluate(self.model, self.tokenizers, self.task, self.data.validation)
        entry = {"step": step, **entry, "validation": metrics}
        self.record["history"] = [*self.record["history"], entry]
        metric, value = self.task.metric, metrics[self.task.metric]
        if is_better(metric, value, self.best):
            self.best, self.stale = value, 0
            self.record["best_step"] = step
            self.write_checkpoint()  # the run's checkpoint is always its best model so far
        else:
            self.stale += 1
        log.info("step %d: loss %.4f, validation %s", step, entry["loss"],
                 ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        if self.config.stop_at is not None and not is_better(metric, self.config.stop_at, value):
            return "target reached"
        if self.config.patience and self.stale >= self.config.patience:
            return "early stopping"
        return None

    def finish(self, step: int) -> None:
        """Last snapshot and resume state, then the best validated weights with final metrics."""
        if step not in self.record["snapshots"]["steps"]:
            self.snapshot(step)
        self.write_state(step)
        if "best_step" in self.record:  # explore and ship the best validated weights, not the last ones
            self.model.load_state_dict(load(self.config.out, self.ctx.device).model.state_dict())
        model, tokenizers, task, data = self.model, self.tokenizers, self.task, self.data
        metrics = {"validation": evaluate(model, tokenizers, task, data.validation),
                   "test": evaluate(model, tokenizers, task, data.test)}
        for name, examples in data.extra_tests.items():
            metrics[f"test_{name}"] = evaluate(model, tokenizers, task, examples)
        self.record["metrics"] = metrics
        self.write_checkpoint()

    def _restore(self) -> None:
        state = load_state(self.state_file, self.ctx.device)
        stored = state.run.get("train", {})
        changed = sorted(k for k, v in asdict(self.config).items()
                         if k not in RESUMABLE_CHANGES and k in stored and stored[k] != v)
        if changed:
            raise ValueError(f"cannot resume {self.config.out}: settings differ from the saved run: "
                             f"{', '.join(changed)}")
        self.model.load_state_dict(state.checkpoint.model.state_dict())
        self.optimizer.load_state_dict(state.optimizer)
        self.snapshots = {k: v for k, v in state.checkpoint.extra_tensors.items() if k.startswith(SNAPSHOT_PREFIX)}
        self.start, self.record = state.step, state.run
        resumed = {k: getattr(self.config, k) for k in RESUMABLE_CHANGES}  # and the command that now reproduces it
        self.record["train"] = {**self.record["train"], **resumed, "command": self.config.command()}
        log.info("resuming %s from step %d", self.config.out, state.step)


def _best_so_far(history: list[dict[str, Any]], metric: str) -> tuple[float | None, int]:
    """The best validation value in ``history`` and how many evaluations have passed since."""
    best, stale = None, 0
    for entry in history:
        value = entry["validation"][metric]
        best, stale = (value, 0) if is_better(metric, value, best) else (best, stale + 1)
    return best, stale
