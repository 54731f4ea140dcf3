"""Score a model on a task split: exact match, token accuracy, accuracy or perplexity.

``python -m core evaluate assets/checkpoints/*.safetensors`` (:mod:`core.cli.evaluate`) re-measures
checkpoints on their task's held-out test split with these functions.
"""

from __future__ import annotations

import math
from typing import Iterator, Sequence

import torch

from core.generate.decode import greedy
from core.text.tokenizer import BOS_ID, EOS_ID, Tokenizer
from core.model.transformer import Transformer
from core.tasks import Example, Task
from core.training.data import Batch, Batcher

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
