"""Train a Transformer on a built-in task (the command line is :mod:`core.cli.train`).

Adam (β = 0.9, 0.98, ε = 1e-9) with the paper's warm-up schedule, label smoothing,
gradient clipping and accumulation (:mod:`core.training.step`), periodic validation with
early stopping, attention snapshots of a fixed probe input, atomic checkpoints and exact
resume (:mod:`core.training.run`). Several processes (``torchrun``) train with
DistributedDataParallel.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

import torch.distributed as dist
from tqdm import tqdm

from core.training.config import TrainConfig
from core.training.data import Batcher
from core.training.run import Distributed, Run, SnapshotCallback, Throughput
from core.training.step import train_step

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepInfo:
    """Sent to ``on_step`` after every optimizer step."""

    step: int
    total_steps: int
    loss: float
    lr: float
    tokens_per_s: float


@dataclass(frozen=True)
class TrainResult:
    """What a finished (or stopped) run produced.

    ``main`` says whether this process is the main one (always, without ``torchrun``): only it
    validates and writes the checkpoint, so only its ``metrics`` and ``history`` are filled in.
    """

    checkpoint: str
    step: int
    metrics: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "completed"
    main: bool = True


def train(
    config: TrainConfig,
    *,
    resume: bool = False,
    on_step: Callable[[StepInfo], None] | None = None,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
    on_snapshot: SnapshotCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainResult:
    """Train on ``config.task`` and save a checkpoint to ``config.out``.

    Args:
        resume: continue from ``<out>.train-state.safetensors`` if it exists.
        on_step: called with a :class:`StepInfo` after each step (main process only).
        on_eval: called with each history record (step, loss, metrics) after validation.
        on_snapshot: called with (step, {kind: (L, H, Tq, Tk) array}, index) for each probe snapshot;
            ``index`` names the probe and its axis tokens (``source_tokens``, ``target_tokens``).
        should_stop: polled every step; returning True stops cleanly with a saved checkpoint.
    """
    ctx = Distributed(config.device)
    run = Run(config, ctx, resume, on_snapshot)
    net, recipe = ctx.wrap(run.model, config.compile), config.recipe(run.model.config.d_model, run.pad_id)
    batcher = Batcher(run.task, run.tokenizers, run.data.train, run.model.config)
    bar = tqdm(total=config.steps, initial=run.start, disable=not (config.progress and ctx.main), desc=run.task.name)
    meter, stopped, step = Throughput(), "completed", run.start
    for step in range(run.start + 1, config.steps + 1):
        batches = [batcher.batch(config.batch_size, config.seed, step, micro, ctx.rank, ctx.device)
                   for micro in range(config.grad_accum)]
        outcome = train_step(run.model, run.optimizer, batches, step, recipe, net=net)
        rate = meter.add(outcome.tokens * ctx.world)
        bar.update(1)
        bar.set_postfix(loss=f"{outcome.loss:.3f}", lr=f"{outcome.lr:.2e}", tok_s=f"{rate:,.0f}")
        if ctx.main and on_step:
            on_step(StepInfo(step, config.steps, outcome.loss, outcome.lr, rate))
        if ctx.main and step % config.snapshot_every == 0:
            run.snapshot(step)
        halt = ctx.agree(bool(should_stop and should_stop()))  # every rank must take the same branch
        if step % config.eval_every == 0 or step == config.steps or halt:
            if ctx.main:
                reason = run.validate(step, {"loss": outcome.loss, "lr": outcome.lr, "tokens_per_s": rate})
                if on_eval:
                    on_eval(run.record["history"][-1])
                stopped, halt = reason or stopped, halt or reason is not None
            halt = ctx.agree(halt)
        if ctx.main and step % config.save_every == 0 and not halt and step < config.steps:
            run.write_state(step)  # the last step's state is written once, after the loop
        if halt:
            stopped = "stopped" if stopped == "completed" else stopped
            break
    bar.close()
    if ctx.main:
        run.finish(step)
    if ctx.world > 1:
        dist.barrier()
    return TrainResult(config.out, step, run.record.get("metrics", {}), run.record["history"], stopped, ctx.main)
