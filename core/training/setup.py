"""What a training run is built from: model presets, tokenizers and the model config."""

from __future__ import annotations

from typing import Any

from core.config import ModelConfig
from core.text.tokenizer import Tokenizer
from core.tasks import Task, TaskData

PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"n_layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64},
    "small": {"n_layers": 2, "d_model": 64, "n_heads": 4, "d_ff": 256},
    "medium": {"n_layers": 3, "d_model": 128, "n_heads": 4, "d_ff": 512},
    "base": {"n_layers": 6, "d_model": 512, "n_heads": 8, "d_ff": 2048},  # the paper's base model
}


def build_tokenizers(task: Task, data: TaskData) -> dict[str, Tokenizer]:
    """Tokenizers trained on the training split: ``source`` for an encoder, ``target`` for a decoder."""
    sources = [e.source for e in data.train]
    if task.architecture == "encoder":
        return {"source": Tokenizer.train(task.tokenizer_kind, sources, spelled=task.spelled)}
    if task.architecture == "decoder":
        return {"target": Tokenizer.train(task.tokenizer_kind, sources, spelled=task.spelled)}
    return {
        "source": Tokenizer.train(task.tokenizer_kind, sources, spelled=task.spelled),
        "target": Tokenizer.train(task.tokenizer_kind, [e.target for e in data.train], spelled=task.spelled),
    }


def longest_sequence(tokenizers: dict[str, Tokenizer], data: TaskData) -> int:
    """Tokens in the longest encoder input or decoder sequence (with ``<bos>``) of any split."""
    examples = [*data.train, *data.validation, *data.test, *(e for s in data.extra_tests.values() for e in s)]
    longest = 1
    for example in examples:
        if "source" in tokenizers:
            longest = max(longest, len(tokenizers["source"].encode(example.source)))
        if "target" in tokenizers:
            text = example.target if "source" in tokenizers else example.source
            longest = max(longest, len(tokenizers["target"].encode(text)) + 1)
    return longest


def model_config(task: Task, tokenizers: dict[str, Tokenizer], data: TaskData, **options: Any) -> ModelConfig:
    """The :class:`ModelConfig` for ``task``: vocabularies from the tokenizers, ``max_len`` with headroom.

    Args:
        options: the remaining ModelConfig fields (sizes, dropout, norm, …), e.g. ``TrainConfig.model_options()``.
    """
    return ModelConfig(
        architecture=task.architecture,
        src_vocab_size=tokenizers["source"].vocab_size if "source" in tokenizers else 0,
        tgt_vocab_size=tokenizers["target"].vocab_size if "target" in tokenizers else 0,
        max_len=max(32, 2 * longest_sequence(tokenizers, data)),
        n_classes=len(task.labels) if task.labels else 0, **options,
    )
