"""Held-out figures per bucket (length, decade, ...) and greedy vs beam search, for shipped checkpoints.

``python -m core report assets/checkpoints/*.safetensors`` (:mod:`core.cli.report`) prints, for every sequence
checkpoint, exact match per bucket of its task's held-out test split (for copy, reverse and sort
also :func:`core.tasks.letters.longer_examples`, lengths up to twice the trained ones) under greedy decoding and beam
search (width 4), regenerated from the seed and sizes the checkpoint records. The tests in
``tests/e2e/test_assets.py`` call the same functions on bounded samples.

This module imports the model code; :mod:`core.tasks` does not import it, so the task package
stays free of torch for the trainer's imports.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Callable, Sequence

import torch

from core.generate.decode import beam_search, greedy
from core.io.checkpoint import Checkpoint
from core.text.tokenizer import BOS_ID, EOS_ID
from core.tasks import Example, Task, get_task
from core.tasks.base import TaskData
from core.text.sequences import pad_batch, source_encoding

Bucket = Callable[[Example], str]


def _length(example: Example) -> str:
    return str(len(example.source))


def bucket_function(task: Task) -> Bucket:
    """How a task's examples are grouped for reporting: words (translation), decade (dates),
    input characters (copy, reverse, sort), otherwise everything in one ``"all"`` bucket."""
    from core.tasks import dates, translation

    return {"translation": translation.length_bucket, "everyday": translation.length_bucket, "dates": dates.decade, "copy": _length,
            "reverse": _length, "sort": _length}.get(task.name, lambda _example: "all")


def task_data(ckpt: Checkpoint) -> tuple[Task, TaskData]:
    """The checkpoint's task and the splits it was trained with (same seed and sizes)."""
    task = get_task(ckpt.info.task)
    recipe = ckpt.info.extra.get("train", {})
    return task, task.generate(recipe.get("seed", 0), tuple(recipe["sizes"]) if "sizes" in recipe else None)


@torch.inference_mode()
def predictions(
    ckpt: Checkpoint, sources: Sequence[str], *, decoding: str = "greedy", beam_size: int = 4,
    max_new_tokens: int | None = None, batch_size: int = 128,
) -> list[str | None]:
    """Decoded output text per source (``None`` when no ``<eos>`` came within the budget).

    The budget defaults to the model's ``max_len``, as the app uses it.
    """
    model, cfg = ckpt.model.eval(), ckpt.config
    src_tok, tgt_tok = ckpt.source_tokenizer, ckpt.target_tokenizer
    device = next(model.parameters()).device
    out: list[str | None] = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start : start + batch_size]
        src = pad_batch([source_encoding(src_tok, s, cfg.max_len)[0].ids for s in chunk], cfg.pad_id, device)
        prefix = torch.full((len(chunk), 1), BOS_ID, dtype=torch.long, device=device)
        budget = max_new_tokens or cfg.max_len
        if decoding == "beam":
            gen = beam_search(model, src, prefix, eos_id=EOS_ID, max_new_tokens=budget, beam_size=beam_size)
        else:
            gen = greedy(model, src, prefix, eos_id=EOS_ID, max_new_tokens=budget)
        for ids, done in zip(gen.ids.tolist(), gen.finished.tolist()):
            out.append(tgt_tok.decode(ids) if done else None)
    return out


def exact_match_by_bucket(
    ckpt: Checkpoint, examples: Sequence[Example], *, bucket: Bucket | None = None, **decode_options,
) -> dict[str, tuple[int, int]]:
    """``{bucket: (correct, total)}`` plus ``"all"``, exact match of the decoded text with the target."""
    bucket = bucket or bucket_function(get_task(ckpt.info.task))
    outputs = predictions(ckpt, [e.source for e in examples], **decode_options)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for example, output in zip(examples, outputs):
        for key in {bucket(example), "all"}:
            counts[key][0] += int(output == example.target)
            counts[key][1] += 1
    return {key: (hit, total) for key, (hit, total) in sorted(counts.items(), key=lambda kv: _order(kv[0]))}


def _order(key: str) -> tuple[int, float, str]:
    digits = "".join(ch for ch in key.split("-")[0] if ch.isdigit())
    return (key == "all", float(digits) if digits else 0.0, key)


def sample(examples: Sequence[Example], n: int | None, seed: int = 0) -> list[Example]:
    """At most ``n`` examples, drawn without replacement in a fixed way (all of them when ``n`` is None)."""
    if n is None or n >= len(examples):
        return list(examples)
    return random.Random(seed).sample(list(examples), n)
