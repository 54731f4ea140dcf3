"""Score a model on a task split: exact match, token accuracy, accuracy or perplexity.

Also a CLI that re-measures checkpoints on their task's held-out test split:
``python -m core evaluate assets/checkpoints/*.safetensors``.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Sequence

import torch

from core.io.checkpoint import CheckpointError, load
from core.training.data import classify_batch, lm_batch, seq2seq_batch
from core.inspect.decode import greedy
from core.model.transformer import Transformer
from core.tasks import Example, Task, get_task
from core.io.tokenizer import BOS_ID, EOS_ID, Tokenizer

HIGHER_IS_BETTER = {"exact_match": True, "accuracy": True, "perplexity": False}


def _chunks(items: Sequence[Example], size: int):
    for start in range(0, len(items), size):
        yield items[start : start + size]


@torch.inference_mode()
def evaluate(
    model: Transformer, tokenizers: dict[str, Tokenizer], task: Task, examples: Sequence[Example],
    *, batch_size: int = 256,
) -> dict[str, float]:
    """Metrics of ``model`` on ``examples`` (the model is put in eval mode and left so).

    Returns:
        ``exact_match`` and ``token_accuracy`` (sequence tasks), ``accuracy`` (classification)
        or ``perplexity`` and ``loss`` (language modelling); fractions in [0, 1].
    """
    if not examples:
        raise ValueError("cannot evaluate on an empty split")
    model.eval()
    cfg, device = model.config, next(model.parameters()).device
    if task.architecture == "encoder":
        correct = 0
        for chunk in _chunks(examples, batch_size):
            src, labels = classify_batch(tokenizers["source"], [e.source for e in chunk],
                                         [task.labels.index(e.target) for e in chunk], cfg.max_len, cfg.pad_id, device)
            correct += int((model(src).logits.argmax(-1) == labels).sum())
        return {"accuracy": correct / len(examples)}
    if task.architecture == "decoder":
        total, count = 0.0, 0
        for chunk in _chunks(examples, batch_size):
            inp, tgt = lm_batch(tokenizers["target"], [e.source for e in chunk], cfg.max_len, cfg.pad_id, device)
            logits = model(tgt=inp).logits.float()
            mask = tgt != cfg.pad_id
            total += float(torch.nn.functional.cross_entropy(logits[mask], tgt[mask], reduction="sum"))
            count += int(mask.sum())
        return {"perplexity": math.exp(total / count), "loss": total / count}
    return _seq2seq_metrics(model, tokenizers, examples, batch_size, device)


def _seq2seq_metrics(model, tokenizers, examples, batch_size, device) -> dict[str, float]:
    cfg, source_tok, target_tok = model.config, tokenizers["source"], tokenizers["target"]
    exact = token_hits = token_count = 0
    for chunk in _chunks(examples, batch_size):
        pairs = [(e.source, e.target) for e in chunk]
        src, inp, tgt = seq2seq_batch(source_tok, target_tok, pairs, cfg.max_len, cfg.pad_id, device)
        mask = tgt != cfg.pad_id
        token_hits += int(((model(src, inp).logits.argmax(-1) == tgt) & mask).sum())
        token_count += int(mask.sum())
        prefix = torch.full((len(chunk), 1), BOS_ID, dtype=torch.long, device=device)
        gen = greedy(model, src, prefix, eos_id=EOS_ID, max_new_tokens=tgt.size(1) + 1)
        for row, done, example in zip(gen.ids.tolist(), gen.finished.tolist(), chunk):
            exact += int(done and target_tok.decode(row) == example.target)
    return {"exact_match": exact / len(examples), "token_accuracy": token_hits / token_count}


def is_better(metric: str, new: float, old: float | None) -> bool:
    """Whether ``new`` improves on ``old`` for ``metric``."""
    if old is None:
        return True
    return new > old if HIGHER_IS_BETTER[metric] else new < old


def unigram_perplexity(tokenizer: Tokenizer, train: Sequence[Example], test: Sequence[Example]) -> float:
    """Perplexity of the add-one unigram model fitted on ``train`` (a language-model baseline)."""
    counts = torch.ones(tokenizer.vocab_size)
    for example in train:
        ids = tokenizer.encode(example.source).ids + [EOS_ID]
        counts += torch.bincount(torch.tensor(ids), minlength=tokenizer.vocab_size)
    logp = (counts / counts.sum()).log()
    ids = torch.tensor([i for e in test for i in tokenizer.encode(e.source).ids + [EOS_ID]])
    return math.exp(-float(logp[ids].mean()))


def main(argv: list[str] | None = None) -> int:
    """Print each checkpoint's test metrics, regenerated from its task and seed."""
    parser = argparse.ArgumentParser(prog="python -m core evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    args = parser.parse_args(argv)
    status = 0
    sys.stdout.write(f"{'checkpoint':<28} {'split':<10} metrics\n")
    for path in args.checkpoints:
        if path.endswith(".train-state.safetensors"):
            continue  # a run's resume state, not a model to report
        try:
            ckpt = load(path)
        except CheckpointError as error:
            sys.stderr.write(f"error: {error}\n")
            status = 2
            continue
        if ckpt.info.task is None:
            sys.stderr.write(f"error: {path} records no task\n")
            status = 2
            continue
        task = get_task(ckpt.info.task)
        recipe = ckpt.info.extra.get("train", {})
        data = task.generate(recipe.get("seed", 0), tuple(recipe["sizes"]) if "sizes" in recipe else None)
        splits = {"test": data.test, **data.extra_tests}
        for split, examples in splits.items():
            metrics = evaluate(ckpt.model, ckpt.info.tokenizers, task, examples)
            if task.metric == "perplexity":
                metrics["unigram_perplexity"] = unigram_perplexity(ckpt.target_tokenizer, data.train, examples)
            shown = "  ".join(f"{k}={v:.4f}" for k, v in metrics.items())
            sys.stdout.write(f"{ckpt.info.path.name:<28} {split:<10} {shown}\n")
    return status

