"""Score a model on a task split: exact match, token accuracy, accuracy or perplexity.

Also a CLI that re-measures checkpoints on their task's held-out test split:
``python -m core evaluate assets/checkpoints/*.safetensors``.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Iterator, Sequence

import torch

from core.generate.decode import greedy
from core.io.checkpoint import CheckpointError, load
from core.text.tokenizer import BOS_ID, EOS_ID, Tokenizer
from core.model.transformer import Transformer
from core.tasks import Example, Task, get_task
from core.training.data import Batch, Batcher
from core.training.state import is_resume_state

HIGHER_IS_BETTER = {"exact_match": True, "accuracy": True, "perplexity": False}


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
    device = next(model.parameters()).device
    batches = Batcher(task, tokenizers, examples, model.config).in_order(batch_size, device)
    if task.architecture == "encoder":
        correct = sum(int((model(b.src).logits.argmax(-1) == b.targets).sum()) for _, b in batches)
        return {"accuracy": correct / len(examples)}
    if task.architecture == "decoder":
        total, count = 0.0, 0
        for _, batch in batches:
            logits = model(tgt=batch.tgt).logits.float()  # (B, T, V)
            mask = batch.targets != model.config.pad_id  # (B, T)
            total += float(torch.nn.functional.cross_entropy(logits[mask], batch.targets[mask], reduction="sum"))
            count += int(mask.sum())
        return {"perplexity": math.exp(total / count), "loss": total / count}
    return _seq2seq_metrics(model, tokenizers["target"], examples, batches)


def _seq2seq_metrics(model: Transformer, target_tok: Tokenizer, examples: Sequence[Example],
                     batches: Iterator[tuple[range, Batch]]) -> dict[str, float]:
    exact = token_hits = token_count = 0
    for rows, batch in batches:
        mask = batch.targets != model.config.pad_id  # (B, T)
        token_hits += int(((model(batch.src, batch.tgt).logits.argmax(-1) == batch.targets) & mask).sum())
        token_count += int(mask.sum())
        prefix = torch.full((len(rows), 1), BOS_ID, dtype=torch.long, device=batch.src.device)  # (B, 1)
        gen = greedy(model, batch.src, prefix, eos_id=EOS_ID, max_new_tokens=batch.targets.size(1) + 1)
        for row, done, i in zip(gen.ids.tolist(), gen.finished.tolist(), rows):
            exact += int(done and target_tok.decode(row) == examples[i].target)
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
    parser.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT",
                        help="Attnscope checkpoints (.safetensors) trained on a built-in task; resume states are skipped")
    args = parser.parse_args(argv)
    status = 0
    sys.stdout.write(f"{'checkpoint':<28} {'split':<10} metrics\n")
    for path in args.checkpoints:
        if is_resume_state(path):
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

