"""Train a Transformer on a built-in task, as a library function or ``python -m core train``.

Adam (β = 0.9, 0.98, ε = 1e-9) with the paper's warm-up schedule, label smoothing,
gradient clipping and accumulation, periodic validation with early stopping, attention
snapshots of a fixed probe input, atomic checkpoints and exact resume. Several processes
(``torchrun``) train with DistributedDataParallel.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Callable

import torch
import torch.distributed as dist
from tqdm import tqdm

from core.io.checkpoint import load, save
from core.device import resolve_device
from core.training.evaluation import evaluate, is_better
from core.model.transformer import Transformer
from core.training.objectives import noam_lr, smoothed_loss
from core.training.snapshots import SNAPSHOT_PREFIX, probe_snapshot
from core.tasks import get_task
from core.training.setup import PRESETS, Batcher, build_tokenizers, model_config
from core.training.state import load_state, resume_state_path, save_state

log = logging.getLogger(__name__)

# Fields that may change when a run is resumed; any other difference is refused.
RESUMABLE_CHANGES = {"steps", "progress", "device", "eval_every", "save_every", "patience", "stop_at", "compile"}


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run needs; every field is a ``--flag`` of the CLI."""

    task: str = "reverse"
    out: str = "runs/reverse.safetensors"
    seed: int = 0
    steps: int = 2000
    batch_size: int = 64
    grad_accum: int = 1
    schedule: str = "noam"  # "noam" (the paper's warm-up) or "constant"
    lr: float = 1.0  # the Noam factor, or the constant learning rate
    warmup: int = 400
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    eval_every: int = 250
    save_every: int = 500
    snapshot_every: int = 100
    patience: int = 0  # evaluations without improvement before stopping; 0 = never
    stop_at: float | None = None  # stop once the validation metric reaches this
    preset: str = "small"
    n_layers: int | None = None  # None = the preset's
    d_model: int | None = None
    n_heads: int | None = None
    d_ff: int | None = None
    dropout: float = 0.1
    norm: str = "post"
    positional: str = "sinusoidal"
    score: str = "scaled_dot"
    tie_embeddings: bool = False
    train_size: int | None = None  # None = the task's default split sizes
    device: str = "auto"
    compile: bool = False
    progress: bool = True

    def __post_init__(self) -> None:
        get_task(self.task)
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}; got {self.preset!r}")
        if self.schedule not in ("noam", "constant"):
            raise ValueError(f"schedule must be 'noam' or 'constant'; got {self.schedule!r}")
        for name in ("steps", "batch_size", "grad_accum", "warmup", "eval_every", "save_every", "snapshot_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError("label_smoothing must be in [0, 1)")

    def architecture(self) -> dict[str, int]:
        """The preset with any explicit overrides applied."""
        sizes = dict(PRESETS[self.preset])
        sizes.update({k: getattr(self, k) for k in sizes if getattr(self, k) is not None})
        return sizes

    def command(self) -> str:
        """The CLI command that reproduces this run."""
        default = TrainConfig()
        flags = [f"--{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if getattr(self, f.name) != getattr(default, f.name) or f.name in ("task", "out")]
        return "python -m core train " + " ".join(shlex.quote(f) for f in flags)


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
    """What a finished (or stopped) run produced."""

    checkpoint: str
    step: int
    metrics: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped: str = "completed"


class _Distributed:
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
        return self.rank == 0

    def agree(self, flag: bool) -> bool:
        """Rank 0's decision, shared with every rank."""
        if self.world == 1:
            return flag
        value = torch.tensor([int(flag)], device=self.device if self.device.type == "cuda" else "cpu")
        dist.broadcast(value, src=0)
        return bool(value.item())


def train(
    config: TrainConfig,
    *,
    resume: bool = False,
    on_step: Callable[[StepInfo], None] | None = None,
    on_eval: Callable[[dict[str, Any]], None] | None = None,
    on_snapshot: Callable[[int, dict[str, Any], dict[str, Any]], None] | None = None,
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
    ctx = _Distributed(config.device)
    task = get_task(config.task)
    torch.manual_seed(config.seed)
    sizes = None if config.train_size is None else (config.train_size, *task.default_sizes[1:])
    data = task.generate(config.seed, sizes)
    tokenizers = build_tokenizers(task, data)
    sizes_used = (len(data.train), len(data.validation), len(data.test))
    model = Transformer(model_config(
        task, tokenizers, data, dropout=config.dropout, norm=config.norm, positional=config.positional,
        score=config.score, tie_embeddings=config.tie_embeddings, **config.architecture(),
    )).to(ctx.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    run = {"train": {**asdict(config), "sizes": list(sizes_used), "command": config.command(),
                     "world_size": ctx.world},
           "labels": list(task.labels or ()), "history": [], "snapshots": {"steps": []}}
    snapshots: dict[str, torch.Tensor] = {}
    start = 0
    resume_file = resume_state_path(config.out)
    if resume and resume_file.exists():
        start, run, snapshots = _restore(resume_file, config, model, optimizer, ctx.device)
        run["train"] = {**run["train"], **{k: getattr(config, k) for k in RESUMABLE_CHANGES}}
    net = torch.nn.parallel.DistributedDataParallel(model) if ctx.world > 1 else model
    net = torch.compile(net) if config.compile else net
    batcher = Batcher(task, tokenizers, data.train, model.config)
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if ctx.device.type == "cuda"
                else contextlib.nullcontext())
    pad = model.config.pad_id if task.architecture != "encoder" else None

    def record_snapshot(step: int) -> None:
        maps, index = probe_snapshot(model, tokenizers, task, data)
        for kind, array in maps.items():
            snapshots[f"{SNAPSHOT_PREFIX}{step}/{kind}"] = torch.from_numpy(array).half()
        run["snapshots"] = {**index, "steps": [*run["snapshots"]["steps"], step]}
        if on_snapshot:
            on_snapshot(step, maps, index)

    def write_checkpoint() -> None:
        save(config.out, model, tokenizers, task=task.name, metrics=run.get("metrics", {}),
             extra=run, extra_tensors=snapshots)

    def write_state(step: int) -> None:
        save_state(resume_file, model, tokenizers, optimizer, task=task.name, step=step, run=run,
                   extra_tensors=snapshots)

    if ctx.main and start == 0:
        record_snapshot(0)
    bar = tqdm(total=config.steps, initial=start, disable=not (config.progress and ctx.main), desc=task.name)
    best, stale = _best_so_far(run["history"], task.metric)
    stopped, step = "completed", start
    window_tokens, window_start = 0, time.perf_counter()
    for step in range(start + 1, config.steps + 1):
        model.train()
        lr = (noam_lr(step, model.config.d_model, config.warmup, config.lr) if config.schedule == "noam"
              else config.lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        total_loss = 0.0
        for micro in range(config.grad_accum):
            batch = batcher.batch(config.batch_size, config.seed, step, micro, ctx.rank, ctx.device)
            with autocast:
                logits = net(batch.src, batch.tgt).logits
            loss = smoothed_loss(logits, batch.targets, config.label_smoothing, pad) / config.grad_accum
            loss.backward()
            total_loss += float(loss.detach())
            window_tokens += batch.tokens
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        elapsed = time.perf_counter() - window_start
        rate = window_tokens * ctx.world / max(elapsed, 1e-9)
        bar.update(1)
        bar.set_postfix(loss=f"{total_loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{rate:,.0f}")
        if ctx.main and on_step:
            on_step(StepInfo(step, config.steps, total_loss, lr, rate))
        if elapsed > 5.0:  # tokens/s over a sliding window of about five seconds
            window_tokens, window_start = 0, time.perf_counter()
        if ctx.main and step % config.snapshot_every == 0:
            record_snapshot(step)
        halt = ctx.agree(bool(should_stop and should_stop()))  # every rank must take the same branch
        if step % config.eval_every == 0 or step == config.steps or halt:
            if ctx.main:
                metrics = evaluate(model, tokenizers, task, data.validation)
                entry = {"step": step, "loss": total_loss, "lr": lr, "tokens_per_s": rate, "validation": metrics}
                run["history"] = [*run["history"], entry]
                value = metrics[task.metric]
                if is_better(task.metric, value, best):
                    best, stale = value, 0
                    run["best_step"] = step
                    write_checkpoint()  # the run's checkpoint is always its best model so far
                else:
                    stale += 1
                log.info("step %d: loss %.4f, validation %s", step, total_loss,
                         ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
                if on_eval:
                    on_eval(entry)
                reached = config.stop_at is not None and not is_better(task.metric, config.stop_at, value)
                if reached:
                    stopped = "target reached"
                elif config.patience and stale >= config.patience:
                    stopped = "early stopping"
                halt = halt or reached or bool(config.patience and stale >= config.patience)
            halt = ctx.agree(halt)
        if ctx.main and step % config.save_every == 0 and not halt and step < config.steps:
            write_state(step)  # the last step's state is written once, after the loop
        if halt:
            stopped = "stopped" if stopped == "completed" else stopped
            break
    bar.close()
    if ctx.main:
        if step not in run["snapshots"]["steps"]:
            record_snapshot(step)
        write_state(step)
        if "best_step" in run:  # explore and ship the best validated weights, not the last ones
            model.load_state_dict(load(config.out, ctx.device).model.state_dict())
        run["metrics"] = _final_metrics(model, tokenizers, task, data)
        write_checkpoint()
    if ctx.world > 1:
        dist.barrier()
    return TrainResult(config.out, step, run.get("metrics", {}), run["history"], stopped)


def _best_so_far(history: list[dict[str, Any]], metric: str) -> tuple[float | None, int]:
    """The best validation value in ``history`` and how many evaluations have passed since."""
    best, stale = None, 0
    for entry in history:
        value = entry["validation"][metric]
        best, stale = (value, 0) if is_better(metric, value, best) else (best, stale + 1)
    return best, stale


def _final_metrics(model, tokenizers, task, data) -> dict[str, Any]:
    metrics = {"validation": evaluate(model, tokenizers, task, data.validation),
               "test": evaluate(model, tokenizers, task, data.test)}
    for name, examples in data.extra_tests.items():
        metrics[f"test_{name}"] = evaluate(model, tokenizers, task, examples)
    return metrics


def _restore(path, config: TrainConfig, model: Transformer, optimizer, device) -> tuple[int, dict, dict]:
    state = load_state(path, device)
    stored = state.run.get("train", {})
    changed = sorted(k for k, v in asdict(config).items()
                     if k not in RESUMABLE_CHANGES and k in stored and stored[k] != v)
    if changed:
        raise ValueError(f"cannot resume {config.out}: settings differ from the saved run: {', '.join(changed)}")
    model.load_state_dict(state.checkpoint.model.state_dict())
    optimizer.load_state_dict(state.optimizer)
    snapshots = {k: v for k, v in state.checkpoint.extra_tensors.items() if k.startswith(SNAPSHOT_PREFIX)}
    log.info("resuming %s from step %d", config.out, state.step)
    return state.step, state.run, snapshots


def _parse(argv: list[str] | None) -> tuple[TrainConfig, bool]:
    parser = argparse.ArgumentParser(prog="python -m core train", description=__doc__.splitlines()[0])
    parser.add_argument("--resume", action="store_true", help="continue from the run's saved state")
    for f in fields(TrainConfig):
        parser.add_argument(f"--{f.name}", type=_coercer(str(f.type)), default=f.default,
                            help=f"default: {f.default}")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    return replace(TrainConfig(), **args), resume


def _coercer(annotation: str) -> Callable[[str], Any]:
    base = annotation.replace(" | None", "")
    convert = {"int": int, "float": float, "str": str,
               "bool": lambda s: {"true": True, "false": False}[s.lower()]}[base]

    def parse(text: str) -> Any:
        if "None" in annotation and text.lower() == "none":
            return None
        try:
            return convert(text)
        except (KeyError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {base}, got {text!r}") from None

    return parse


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        config, resume = _parse(argv)
        result = train(config, resume=resume)
    except ValueError as error:
        log.error("error: %s", error)
        return 2
    log.info("%s after %d steps (%s): %s", result.checkpoint, result.step, result.stopped, result.metrics)
    return 0

