"""Training speed of Attnscope's Transformer against a baseline on PyTorch's own ``nn.Transformer``.

Run from anywhere: ``python bench/train_speed.py`` (time to 99% on reverse and tokens/s, both
contenders), ``--quick`` (smoke run), ``--threads 2 --device cpu``, ``--gpu-mfu`` (CUDA only: also
tokens/s, MFU and peak memory of the "base" size, 6+6 layers, d_model 512, in bf16 autocast, eager and
compiled: ``bench/gpu_training.py``).

Both contenders have the "small" preset's sizes (2+2 layers, d_model 64, 4 heads, d_ff 256, dropout
0.1, post-norm, sinusoids, xavier-uniform matrices, untied output layer: equal parameter counts) and are
trained on the same batches (``Batcher``) by core's own step (``core.training.step.train_step``, the one
``python -m core train`` takes): Adam(0.9, 0.98, 1e-9), Noam schedule (factor 1, warm-up 400), label smoothing
0.1, clipping 1.0, batch 64, bf16 autocast on CUDA; ``--lr``, ``--warmup``, ``--batch`` and ``--train_size``
change the recipe for both alike.

* time to target: train both from scratch in lock-step (so load changes hit both alike; each
  keeps its own dropout RNG stream, so interleaving changes no result), measure validation exact
  match (greedy, all 500 examples) every ``--eval_every`` steps, stop each at ``--target``.
  "train s" is the wall time of the training steps (forward, backward, clipping, Adam; building
  the shared batch is not counted); evaluation time is measured and shown apart.
* tokens/s: training tokens (non-pad source + target) per second of the training step on
  pre-built batches, alternating contenders in rounds so load changes hit both alike.
* MFU (``--gpu-mfu``): FLOPs/step = 6·(N_enc·B·S + N_dec·B·T) + 12·d·B·(L_enc·S² + L_dec·(T² + T·S)),
  N_enc / N_dec the encoder / decoder parameters (decoder includes the output layer, embeddings
  excluded); the second term is attention's QKᵀ and AV (forward + backward, causal masking not
  discounted). MFU = FLOPs/step × steps/s ÷ ``--peak-tflops``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a script from anywhere

import torch  # noqa: E402

from bench.table import markdown, Row  # noqa: E402
from torch import nn  # noqa: E402

from bench.contenders import Contender, exact_match  # noqa: E402
from core.device import resolve_device  # noqa: E402
from core.tasks import get_task  # noqa: E402
from core.training.config import TrainConfig  # noqa: E402
from core.training.data import Batch, Batcher  # noqa: E402
from core.training.evaluation import evaluate  # noqa: E402
from core.training.setup import build_tokenizers, model_config  # noqa: E402
from core.training.step import StepRecipe, train_step  # noqa: E402

# nn.TransformerEncoder's eval fast path packs padded sources into (prototype) nested tensors.
warnings.filterwarnings("ignore", message=".*nested tensor.*", category=UserWarning)


def take_step(c: Contender, batch: Batch, n: int, recipe: StepRecipe) -> float:
    """Optimizer step ``n`` of ``c`` on ``batch``: core's own ``train_step``, as ``python -m core train`` takes it."""
    return train_step(c.model, c.optimizer, [batch], n, recipe).loss


def sync(device: torch.device) -> float:
    """Wait for the device, then read the clock."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def time_to_target(contenders: list[Contender], batcher: Batcher, val, target_tok, args, device,
                   recipe: StepRecipe) -> dict[str, dict]:
    """Train all contenders in lock-step (alternating who goes first) until each reaches the target."""
    res = {c.name: {"reached": False, "steps": 0, "train_s": 0.0, "eval_s": 0.0, "exact": 0.0} for c in contenders}
    for step in range(1, args.max_steps + 1):
        running = [c for c in contenders if not res[c.name]["reached"]]
        if not running:
            break
        batch = batcher.batch(args.batch, args.seed, step, device=device)
        for c in running if step % 2 else running[::-1]:
            r = res[c.name]
            with c.own_rng():
                start = sync(device)
                loss = take_step(c, batch, step, recipe)
                r["train_s"] += sync(device) - start
            r["steps"] = step
            if step % args.eval_every == 0 or step == args.max_steps:
                start = sync(device)
                r["exact"] = exact_match(c, val, target_tok)
                r["eval_s"] += sync(device) - start
                r["reached"] = r["exact"] >= args.target
                print(f"  {c.name:<14} step {step:>5}  loss {loss:.4f}  exact match {r['exact']:.3f}  "
                      f"train {r['train_s']:6.1f}s  eval {r['eval_s']:5.1f}s", flush=True)
    return res


def throughput(contenders: list[Contender], batches: list, args, device, recipe: StepRecipe) -> dict[str, float]:
    """Tokens/s of each contender on the same pre-built batches, in alternating rounds."""
    warm = args.tput_warmup
    for c in contenders:
        for i, b in enumerate(batches[:warm]):
            take_step(c, b, i + 1, recipe)
    tokens, seconds = {c.name: 0 for c in contenders}, {c.name: 0.0 for c in contenders}
    timed, rounds = batches[warm:], args.tput_rounds
    per_round = math.ceil(len(timed) / rounds)
    for r in range(rounds):
        chunk = timed[r * per_round:(r + 1) * per_round]
        for c in (contenders if r % 2 == 0 else contenders[::-1]):
            start = sync(device)
            for i, b in enumerate(chunk):
                take_step(c, b, warm + r * per_round + i + 1, recipe)
            seconds[c.name] += sync(device) - start
            tokens[c.name] += sum(b.tokens for b in chunk)
    return {name: tokens[name] / seconds[name] for name in tokens}


def train_flops(model: nn.Module, b: int, s: int, t: int) -> int:
    """FLOPs of one training step (the formula in the module docstring); embeddings are lookups, not counted."""
    n_enc = sum(p.numel() for n, p in model.named_parameters() if "encoder" in n and "embed" not in n)
    n_dec = sum(p.numel() for n, p in model.named_parameters() if "encoder" not in n and "embed" not in n)
    c = model.config
    attention = 12 * c.d_model * b * (c.n_encoder_layers * s * s + c.n_decoder_layers * (t * t + t * s))
    return 6 * (n_enc * b * s + n_dec * b * t) + attention


def machine_gpu(device: torch.device) -> str:
    """The GPU's name, or "no GPU"."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "no GPU"


def machine(device: torch.device) -> str:
    """One line describing the software and hardware the numbers were measured on."""
    cpu = platform.processor() or "unknown CPU"
    with contextlib.suppress(OSError):
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    return (f"torch {torch.__version__}, device {device} ({machine_gpu(device)}), threads {torch.get_num_threads()}, "
            f"CPU {cpu} ({os.cpu_count()} logical cores), Python {platform.python_version()}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (``--quick`` shrinks every count for a smoke run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse", help="an encoder-decoder task (default: reverse)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64, help="sequences per training step")
    parser.add_argument("--lr", type=float, default=1.0, help="Noam schedule factor (as python -m core train's --lr)")
    parser.add_argument("--warmup", type=int, default=400, help="Noam warm-up steps")
    parser.add_argument("--train_size", type=int, default=None, help="training examples (default: the task's)")
    parser.add_argument("--target", type=float, default=0.99, help="validation exact match to reach")
    parser.add_argument("--eval_every", type=int, default=100)
    parser.add_argument("--max_steps", type=int, default=4000)
    parser.add_argument("--tput_steps", type=int, default=200, help="timed steps per contender for tokens/s")
    parser.add_argument("--tput_warmup", type=int, default=20)
    parser.add_argument("--tput_rounds", type=int, default=10, help="alternating rounds the timed steps are split into")
    parser.add_argument("--skip_target", action="store_true", help="only measure tokens/s")
    parser.add_argument("--gpu-mfu", dest="gpu_mfu", action="store_true")
    parser.add_argument("--peak-tflops", dest="peak_tflops", type=float, default=989.0,
                        help="peak dense bf16 TFLOP/s of the GPU (989 = H100 SXM)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 60 steps, 20 timed throughput steps")
    args = parser.parse_args(argv)
    if args.quick:
        args.max_steps, args.eval_every, args.tput_steps, args.tput_warmup, args.tput_rounds = 60, 30, 20, 5, 2
    if get_task(args.task).architecture != "encoder-decoder":
        parser.error(f"task {args.task!r} is not an encoder-decoder task")
    return args


def report(names: tuple[str, ...], results: dict[str, dict], rates: dict[str, float]) -> None:
    """The results table: time to target and tokens/s of each contender, relative to the baseline."""
    base = rates["nn.Transformer"]
    print("\n| contender | reached | steps to target | train s to target | eval s | tokens/s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for n in names:
        r = results[n]
        target = (f"{'yes' if r['reached'] else 'no'} ({r['exact']:.3f}) | {r['steps']} | {r['train_s']:.1f} | "
                  f"{r['eval_s']:.1f}") if r else "- | - | - | -"
        print(f"| {n} | {target} | {rates[n]:,.0f} | {rates[n] / base:.2f} |")


def measure(args: argparse.Namespace) -> tuple[tuple[str, ...], dict[str, dict], dict[str, float], torch.device]:
    """Train both contenders to the target in lock-step and time their throughput; prints progress."""
    device = resolve_device(args.device)
    torch.set_num_threads(args.threads or len(os.sched_getaffinity(0)))
    task = get_task(args.task)
    sizes = None if args.train_size is None else (args.train_size, *task.default_sizes[1:])
    data = task.generate(args.seed, sizes)
    tokenizers = build_tokenizers(task, data)
    recipe_of = TrainConfig(task=task.name, preset="small", lr=args.lr, warmup=args.warmup)  # core train's defaults
    config = model_config(task, tokenizers, data, **recipe_of.model_options())
    recipe = recipe_of.recipe(config.d_model, config.pad_id)
    batcher = Batcher(task, tokenizers, data.train, config)
    validation = Batcher(task, tokenizers, data.validation, config).rows(range(len(data.validation)), device)
    val = (validation.src, validation.tgt, [e.target for e in data.validation])

    print(f"# train_speed: {' '.join(sys.argv[1:]) or '(defaults)'}\n# {machine(device)}")
    print(f"# task {task.name}: {len(data.train)} train / {len(data.validation)} validation, 'small' preset, "
          f"batch {args.batch}, Noam factor {args.lr} with warm-up {args.warmup}, target exact match {args.target}")
    names = ("attnscope", "nn.Transformer")
    counts = {n: Contender(n, config, args.seed, device).params() for n in names}
    print("# parameters: " + ", ".join(f"{n} {p:,}" for n, p in counts.items()))

    results: dict[str, dict] = {n: {} for n in names}
    if not args.skip_target:
        print("\nTime to target (fresh models, same batches, trained in lock-step):")
        contenders = [Contender(n, config, args.seed, device) for n in names]
        results = time_to_target(contenders, batcher, val, tokenizers["target"], args, device, recipe)
        # the bench's scorer must agree with the library's own evaluator
        official = evaluate(contenders[0].model, tokenizers, task, data.validation)["exact_match"]
        print(f"  check: core.evaluate exact match of attnscope {official:.3f} "
              f"(bench greedy {results['attnscope']['exact']:.3f})")
    batches = [batcher.batch(args.batch, args.seed + 1, i + 1, device=device)
               for i in range(args.tput_warmup + args.tput_steps)]
    print(f"\nThroughput: {args.tput_warmup} warm-up + {args.tput_steps} timed steps each, "
          f"{args.tput_rounds} alternating rounds ...", flush=True)
    rates = throughput([Contender(n, config, args.seed, device) for n in names], batches, args, device, recipe)
    return names, results, rates, device


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    args = parse_args(argv)
    names, results, rates, device = measure(args)
    report(names, results, rates)
    if args.gpu_mfu and device.type == "cuda":
        from bench import gpu_training  # it builds on this module's step and FLOP count
        print(markdown(gpu_training.mfu_rows(peak_tflops=args.peak_tflops)))
    elif args.gpu_mfu:
        print("\n--gpu-mfu skipped: no CUDA device in use.")
    return 0


SUITE_RECIPE = ["--threads", "2", "--train_size", "60000", "--lr", "0.5", "--warmup", "200", "--batch", "128"]


def run() -> list[Row]:
    """The ``python -m bench training`` rows: reverse to 99 % and training tokens/s, against nn.Transformer."""
    with contextlib.redirect_stdout(sys.stderr):  # progress goes to stderr; the table stays clean
        _, results, rates, _ = measure(parse_args(SUITE_RECIPE))
    ours, theirs = results["attnscope"], results["nn.Transformer"]
    recipe = "reverse, 'small' preset, " + " ".join(SUITE_RECIPE[2:])
    return [
        Row("training", f"train seconds to 99 % exact match ({recipe})", "≤ 1.05× nn.Transformer",
            ours["train_s"], "s", theirs["train_s"], ours["reached"] and ours["train_s"] <= 1.05 * theirs["train_s"]),
        Row("training", "training tokens/s (same batches, alternating rounds)", "≥ 0.95× nn.Transformer",
            rates["attnscope"], "tok/s", rates["nn.Transformer"], rates["attnscope"] >= 0.95 * rates["nn.Transformer"]),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
