"""Training on a GPU: the paper's base model in bf16 (tokens/s, model-FLOPs utilisation, peak memory, eager
and ``torch.compile``, against ``nn.Transformer`` in the same run), and every shipped task trained from
``assets/train_checkpoints.sh``'s flags with its time to the shipped (CPU-trained) checkpoint's validation.

Run: ``python -m bench gpu`` for the first (its rows close the GPU table), and
``python -m bench.gpu_training [--out DIR] [TASK ...]`` for the second: one process per task, all
at once on the one GPU, each printing its validations with the seconds since it started. MFU counts FLOPs
as ``bench/train_speed.py`` documents (``train_flops``) against ``--peak-tflops`` (989: H100/H200 SXM
dense bf16, the datasheet's figure).
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import re
import signal
import sys
import time
from pathlib import Path

import torch

from bench.contenders import Contender
from bench.table import Row
from bench.train_speed import sync, train_flops

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
PEAK_TFLOPS = 989.0
SHAPES = ((64, 64, 64), (256, 128, 128))  # (batch, source tokens, target tokens)


def _synthetic_batch(config, b: int, s: int, t: int, device: torch.device, seed: int = 0):
    from core.training.data import Batch

    gen = torch.Generator().manual_seed(seed)
    vocab = config.src_vocab_size
    src, seq = (torch.randint(4, vocab, shape, generator=gen).to(device) for shape in ((b, s), (b, t + 1)))
    return Batch(src, seq[:, :-1], seq[:, 1:], b * (s + t))  # (B, S), (B, T), (B, T)


def _time_steps(contender: Contender, batch, recipe, net, steps: int = 30) -> tuple[float, float]:
    """(seconds per step, peak GPU memory in MB) over ``steps`` steps after 5 warm-up steps (compiling, if so)."""
    for i in range(5):
        train_step_with(contender, batch, i + 1, recipe, net)
    torch.cuda.reset_peak_memory_stats()
    start = sync(batch.src.device)
    for i in range(steps):
        train_step_with(contender, batch, 6 + i, recipe, net)
    per_step = (sync(batch.src.device) - start) / steps
    return per_step, torch.cuda.max_memory_allocated() / 2**20


def train_step_with(contender: Contender, batch, step: int, recipe, net) -> float:
    """One step of core's ``train_step`` (the one ``python -m core train`` takes) through ``net``: the model,
    or its compiled wrapper."""
    from core.training.step import train_step

    return train_step(contender.model, contender.optimizer, [batch], step, recipe, net=net).loss


def mfu_rows(preset: str = "base", shapes: tuple[tuple[int, int, int], ...] = SHAPES,
             compiled_shape: tuple[int, int, int] = SHAPES[-1], peak_tflops: float = PEAK_TFLOPS) -> list[Row]:
    """tokens/s, MFU and peak memory of the ``preset`` size for each contender, eager (every shape) and compiled."""
    from core.config import ModelConfig
    from core.training.config import TrainConfig
    from core.training.setup import PRESETS

    device, sizes = torch.device("cuda"), PRESETS[preset]
    config = ModelConfig(src_vocab_size=8000, tgt_vocab_size=8000, max_len=129, n_encoder_layers=sizes["n_layers"],
                         n_decoder_layers=sizes["n_layers"], d_model=sizes["d_model"], n_heads=sizes["n_heads"],
                         d_ff=sizes["d_ff"])
    recipe = TrainConfig().recipe(config.d_model, config.pad_id)
    rows, card = [], torch.cuda.get_device_name(device)
    for shape in shapes:
        for compiled in (False, True) if shape == compiled_shape else (False,):
            rows += _shape_rows(config, shape, compiled, recipe, card, peak_tflops)
    return rows


def _shape_rows(config, shape: tuple[int, int, int], compiled: bool, recipe, card: str,
                peak_tflops: float) -> list[Row]:
    """The rows of one batch shape, eager or compiled: Attnscope against nn.Transformer, same batch."""
    b, s, t = shape
    batch = _synthetic_batch(config, b, s, t, torch.device("cuda"))
    figures = {}
    for name in ("attnscope", "nn.Transformer"):
        contender = Contender(name, config, 0, torch.device("cuda"))
        net = torch.compile(contender.model) if compiled else contender.model
        per_step, peak_mb = _time_steps(contender, batch, recipe, net)
        figures[name] = (batch.tokens / per_step, train_flops(contender.model, b, s, t) / per_step, peak_mb)
        del contender, net
        torch.cuda.empty_cache()
    (ours, ours_flops, ours_mb), (theirs, theirs_flops, theirs_mb) = figures["attnscope"], figures["nn.Transformer"]
    how = f"base 6+6, d512, bf16 autocast, batch {b} × ({s}+{t}) tokens, {'compiled' if compiled else 'eager'}"
    return [Row("gpu training", f"{how}: tokens/s on {card} (baseline: nn.Transformer, same)", "≥ 0.95×",
                ours, "tok/s", theirs, ok=ours >= 0.95 * theirs),
            Row("gpu training", f"same: MFU of {peak_tflops:g} TFLOP/s (baseline: nn.Transformer's)", "report",
                100 * ours_flops / (peak_tflops * 1e12), "%", 100 * theirs_flops / (peak_tflops * 1e12)),
            Row("gpu training", "same: peak GPU memory (baseline: nn.Transformer's)", "report",
                ours_mb, "MB", theirs_mb)]


def shipped_flags(script: Path = ROOT / "assets" / "train_checkpoints.sh") -> dict[str, list[str]]:
    """Each task's flags as ``assets/train_checkpoints.sh`` gives them (one source for both)."""
    pattern = re.compile(r'^\s*\[(\w+)\]="([^"]*)"', re.MULTILINE)
    return {task: flags.split() for task, flags in pattern.findall(script.read_text())}


def _train_task(task: str, flags: list[str], out: str, device: str, queue) -> None:
    """Child process: train ``task`` on ``device``, recording each validation's seconds since the start."""
    from core.cli.train import parse_args, stop_on_signals
    from core.training.trainer import train

    torch.set_num_threads(1)
    config, _ = parse_args([f"--task={task}", f"--out={out}/{task}.safetensors", "--progress=false",
                            f"--device={device}", *flags])
    start, seen = time.perf_counter(), []

    def on_eval(record: dict) -> None:
        seen.append({"step": record["step"], "s": round(time.perf_counter() - start, 2),
                     "validation": record.get("validation", {})})
        print(f"{task} step {record['step']} {seen[-1]['s']} s {seen[-1]['validation']}", flush=True)

    outcome: dict = {"steps": 0, "stopped": "failed", "test": {}}
    try:
        result = train(config, on_eval=on_eval, should_stop=stop_on_signals())
        outcome = {"steps": result.step, "stopped": result.stopped, "test": result.metrics.get("test", {})}
    except Exception as error:  # noqa: BLE001 - the parent reports it beside the other tasks' figures
        outcome["error"] = repr(error)
        raise
    finally:
        queue.put((task, {**outcome, "wall_s": time.perf_counter() - start, "validations": seen}))


def time_to_shipped(task: str, record: dict) -> tuple[str, float | None, int | None]:
    """(metric, seconds, step) at which the GPU run first matched the shipped checkpoint's validation."""
    from core import read_info

    shipped = read_info(ROOT / "assets" / "checkpoints" / f"{task}.safetensors").metrics["validation"]
    metric = next(k for k in ("exact_match", "accuracy", "perplexity") if k in shipped)
    better = (lambda v: v <= shipped[metric]) if metric == "perplexity" else (lambda v: v >= shipped[metric])
    for seen in record["validations"]:
        if metric in seen["validation"] and better(seen["validation"][metric]):
            return f"{metric} {shipped[metric]:.4g}", seen["s"], seen["step"]
    return f"{metric} {shipped[metric]:.4g}", None, None


def train_tasks(tasks: list[str], flags: dict[str, list[str]], out: Path, device: str = "cuda") -> dict[str, dict]:
    """Train ``tasks`` at once, one process each, on ``device``; their records (also written to out/tasks.json).
    Ctrl-C or SIGTERM stops every run after its current step, and the table is still printed."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (signal.SIGINT, signal.SIGTERM):  # a signal stops the children after their step; they report
        signal.signal(name, signal.SIG_IGN)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [context.Process(target=_train_task, args=(t, flags[t], str(out), device, queue)) for t in tasks]
    for child in children:
        child.start()
    records = dict(queue.get() for _ in children)
    for child in children:
        child.join()
    for task, record in records.items():
        record["target"], record["target_s"], record["target_step"] = time_to_shipped(task, record)
        record["device"] = device
    (out / "tasks.json").write_text(json.dumps(records, indent=1))
    return records


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.gpu_training [--out DIR] [TASK ...]``: train and print the time-to-target table."""
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_training", description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="tasks (default: every shipped one)")
    parser.add_argument("--out", type=Path, default=Path("runs/gpu"))
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu, for the same table on the CPU")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU on this machine: nothing measured")
        return 1
    flags = shipped_flags()
    records = train_tasks(args.tasks or list(flags), flags, args.out, args.device)
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "CPU, one thread per task"
    print(f"\n{where}, {len(records)} tasks at once, torch {torch.__version__}")
    print("| task | flags | steps | wall s | target (shipped validation) | s to target | step | test |")
    print("|---|---|---:|---:|---|---:|---:|---|")
    for task, r in records.items():
        print(f"| {task} | `{' '.join(flags[task])}` | {r['steps']} | {r['wall_s']:.0f} | {r['target']} | "
              f"{r['target_s'] if r['target_s'] is not None else 'not reached'} | {r['target_step'] or '—'} | "
              f"{', '.join(f'{k} {v:.4g}' for k, v in r['test'].items()) or r.get('error', '—')} |")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sys.exit(main())
