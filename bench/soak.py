"""A bounded soak of model runs shared the way the app shares them: 16 sessions, one hostile.

    python -m bench soak            (a row each in the benchmark table)
    python -m bench.soak [--sessions 16] [--requests 12] [--hostile-len 512]

Every session's request goes through the app's own :class:`app.services.limits.Gate` (the settings of
``app.resources.GATE``: two cheap runs and one large-model run at once, one per session, bounded
waits and run times; the hostile request's cost is the app's estimate) and the
app's decode budget. The ordinary sessions share the shipped reverse checkpoint; the hostile
session runs, back to back, the largest random model the load budget admits at ``max_len``
(positions up to 2,048) with ``<eos>`` out of reach. Every answer is compared with a serial
reference. Prints sessions, requests, p50/p95 quiet and with the hostile session, the p95 ratio
(goal ≤ 2×), requests refused by the gate and mismatches (cross-talk; goal 0).

The sessions are threads of this process calling the gate directly, as the app's script threads
do; the HTTP/WebSocket layer in front of them is exercised by ``tests/browser/test_browser_uploads.py``.
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

from app import resources
from app.services.limits import Gate, OverBudget
from bench.table import Row
from core.config import ModelConfig
from core.budget import LOAD_BUDGET, activation_bytes, check_budget
from core.inspect.explainer import explain
from core.io.checkpoint import Checkpoint, load, save
from core.text.tokenizer import Tokenizer
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
    """What a session compares: the prediction and every attention map (threads as the app sets them)."""
    torch.set_num_threads(resources.THREADS)
    result = explain(ckpt, text)
    return str(result.prediction), {k: np.asarray(v) for k, v in result.attention.items()}


def same(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1].keys() == b[1].keys() and all(np.array_equal(a[1][k], b[1][k]) for k in a[1])


def app_gate() -> Gate:
    """A fresh gate with the app's settings."""
    g = resources.GATE
    return Gate(g.slots, g.wait_s, g.run_s, g.free_s, heavy_cost=g.heavy_cost)


def run_sessions(gate: Gate, ckpt: Checkpoint, reference: dict, sessions: int,
                 requests: int) -> tuple[list[float], int, int]:
    """``sessions`` threads, ``requests`` each, through ``gate``; every latency (s), mismatches, refusals."""
    latencies: list[float] = []
    counts = {"mismatches": 0, "refused": 0}
    lock = threading.Lock()

    def session(index: int) -> None:
        for n in range(requests):
            text = TEXTS[(index + n) % len(TEXTS)]
            start = time.perf_counter()
            try:
                got = gate.run(f"session-{index}", lambda: answer(ckpt, text))
            except OverBudget:
                with lock:
                    counts["refused"] += 1
                continue
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                counts["mismatches"] += not same(got, reference[text])

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, counts["mismatches"], counts["refused"]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def soak(sessions: int = 16, requests: int = 12, hostile_len: int = 512) -> dict:
    """Run the quiet and the hostile phase; returns their figures."""
    torch.set_num_threads(resources.THREADS)
    gate, ckpt = app_gate(), victim()
    reference = {text: answer(ckpt, text) for text in TEXTS}
    quiet, quiet_bad, quiet_refused = run_sessions(gate, ckpt, reference, sessions, requests)
    stop, hostile_done = threading.Event(), [0]
    with tempfile.TemporaryDirectory() as folder:
        bad = hostile(Path(folder), hostile_len)
        sys.stderr.write(f"hostile model: max_len {bad.config.max_len}, "
                         f"~{activation_bytes(bad.config) / 2**20:.0f} MiB activations at max_len\n")
        options = resources.budgeted(bad, {})  # the app's decode budget
        text = "z" * 10 * hostile_len
        work = resources.cost(bad, resources.tokens(bad, text, options))  # the app's cost estimate

        def attack() -> None:
            while not stop.is_set():
                try:
                    gate.run("hostile", lambda: torch.set_num_threads(resources.HEAVY_THREADS if gate.is_heavy(work)
                                                                      else resources.THREADS)
                             or explain(bad, text, **options), work)
                    hostile_done[0] += 1
                except OverBudget:
                    time.sleep(0.05)  # its previous run is still going: ask again, as a rerun storm would

        attacker = threading.Thread(target=attack, daemon=True)
        attacker.start()
        loud, loud_bad, loud_refused = run_sessions(gate, ckpt, reference, sessions, requests)
        stop.set()
        attacker.join(timeout=120)  # let its current request end: torch must not be running at exit
    return {"sessions": sessions, "quiet": quiet, "loud": loud, "mismatches": quiet_bad + loud_bad,
            "refused": quiet_refused + loud_refused, "hostile": hostile_done[0], "alive": attacker.is_alive()}


def run() -> list[Row]:
    """The soak's rows of the benchmark table (``python -m bench soak``)."""
    got = soak()
    quiet, loud = p95(got["quiet"]) * 1e3, p95(got["loud"]) * 1e3
    n = f"{got['sessions']} sessions, {len(got['quiet']) + len(got['loud'])} requests"
    return [Row("soak", f"p95 of one request, one hostile session ({n})", "≤ 2× quiet p95", loud, "ms", quiet,
                loud <= 2 * quiet),
            Row("soak", "answers differing from the serial reference", "0", got["mismatches"], "", None,
                got["mismatches"] == 0),
            Row("soak", "ordinary requests refused by the gate", "0", got["refused"], "", None, got["refused"] == 0)]


def main(argv: list[str] | None = None) -> int:
    """Print one table: sessions, requests, p50/p95 per phase, mismatches."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--requests", type=int, default=12, help="requests per session and phase")
    parser.add_argument("--hostile-len", type=int, default=512, help="the hostile model's max_len")
    args = parser.parse_args(argv)
    got = soak(args.sessions, args.requests, args.hostile_len)
    print("| phase | sessions | requests | p50 ms | p95 ms |\n|---|---|---|---|---|")
    for name, values in (("quiet", got["quiet"]), ("one hostile session", got["loud"])):
        print(f"| {name} | {args.sessions} | {len(values)} | {statistics.median(values) * 1e3:.1f} | "
              f"{p95(values) * 1e3:.1f} |")
    print(f"\np95 with the hostile session / quiet p95: {p95(got['loud']) / p95(got['quiet']):.2f}× (goal ≤ 2×); "
          f"hostile requests finished: {got['hostile']}; refused: {got['refused']}; "
          f"mismatches: {got['mismatches']} (goal 0)")
    code = 0 if got["mismatches"] == 0 else 1
    if got["alive"]:
        sys.stdout.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
