"""A bounded soak of core inference: many sessions share one loaded model, one hostile session runs
the largest model the load budget admits, and every answer is checked against a serial reference.

    python -m bench.soak [--sessions 16] [--requests 12] [--hostile-len 512]

Prints sessions, requests, p50/p95 latency quiet and with the hostile session, the p95 ratio
(goal: at most 2×) and mismatches (answers that differ from the reference: cross-talk; goal 0).
This measures core (threads sharing one model); the app adds its own per-session limits on top.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

from core.config import LOAD_BUDGET, ModelConfig, activation_bytes, check_budget
from core.inspect.explainer import explain
from core.io.checkpoint import Checkpoint, load, save
from core.io.tokenizer import Tokenizer
from core.model.transformer import Transformer

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ["hello world", "abc def", "the quick brown fox", "attention is all you need", "reverse me", "xyz 123"]


def victim() -> Checkpoint:
    """The shipped checkpoint every ordinary session uses."""
    return load(ROOT / "assets" / "checkpoints" / "reverse.safetensors")


def hostile(folder: Path, max_len: int) -> Checkpoint:
    """A random encoder-decoder at ``max_len`` (within the load budget) whose ``<eos>`` rarely comes."""
    tokenizer = Tokenizer.train("char", ["".join(chr(c) for c in range(32, 127))])
    config = ModelConfig(src_vocab_size=tokenizer.vocab_size, tgt_vocab_size=tokenizer.vocab_size, d_model=128,
                         n_heads=4, d_ff=512, max_len=max_len, dropout=0.0)
    check_budget(config, LOAD_BUDGET)
    torch.manual_seed(0)
    path = folder / "hostile.safetensors"
    save(path, Transformer(config), {"source": tokenizer, "target": tokenizer})
    return load(path)


def answer(ckpt: Checkpoint, text: str) -> tuple:
    """What a session compares: the prediction and every attention map."""
    result = explain(ckpt, text)
    return str(result.prediction), {k: np.asarray(v) for k, v in result.attention.items()}


def same(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1].keys() == b[1].keys() and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


def run_sessions(ckpt: Checkpoint, reference: dict, sessions: int, requests: int) -> tuple[list[float], int]:
    """``sessions`` threads, ``requests`` each; returns every latency (s) and the number of mismatches."""
    latencies: list[float] = []
    mismatches = [0]
    lock = threading.Lock()

    def session(index: int) -> None:
        for n in range(requests):
            text = TEXTS[(index + n) % len(TEXTS)]
            start = time.perf_counter()
            got = answer(ckpt, text)
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                mismatches[0] += not same(got, reference[text])

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, mismatches[0]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> int:
    """Run the quiet and the hostile phase and print one table."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--requests", type=int, default=12, help="requests per session and phase")
    parser.add_argument("--hostile-len", type=int, default=512, help="the hostile model's max_len")
    args = parser.parse_args(argv)
    ckpt = victim()
    reference = {text: answer(ckpt, text) for text in TEXTS}
    quiet, quiet_bad = run_sessions(ckpt, reference, args.sessions, args.requests)
    stop, hostile_done = threading.Event(), [0]
    with tempfile.TemporaryDirectory() as folder:
        bad = hostile(Path(folder), args.hostile_len)
        sys.stderr.write(f"hostile model: max_len {bad.config.max_len}, "
                         f"~{activation_bytes(bad.config) / 2**20:.0f} MiB activations at max_len\n")

        def attack() -> None:
            while not stop.is_set():
                explain(bad, "z" * 10 * args.hostile_len)  # truncated to max_len, decodes up to max_len
                hostile_done[0] += 1

        attacker = threading.Thread(target=attack, daemon=True)
        attacker.start()
        loud, loud_bad = run_sessions(ckpt, reference, args.sessions, args.requests)
        stop.set()
    ratio = p95(loud) / p95(quiet)
    print("| phase | sessions | requests | p50 ms | p95 ms | mismatches |\n|---|---|---|---|---|---|")
    for name, values, wrong in (("quiet", quiet, quiet_bad), ("one hostile session", loud, loud_bad)):
        print(f"| {name} | {args.sessions} | {len(values)} | {statistics.median(values) * 1e3:.1f} | "
              f"{p95(values) * 1e3:.1f} | {wrong} |")
    print(f"\np95 with the hostile session / quiet p95: {ratio:.2f}× (goal ≤ 2×); "
          f"hostile requests finished: {hostile_done[0]}; mismatches: {quiet_bad + loud_bad} (goal 0)")
    code = 0 if quiet_bad + loud_bad == 0 else 1
    attacker.join(timeout=60)  # let its current request end: torch must not be running at exit
    if attacker.is_alive():
        sys.stdout.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
