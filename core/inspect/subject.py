"""`Subject`: any loaded model as the explain pipeline sees it — ours and every pretrained family alike.

A :class:`~core.io.checkpoint.Checkpoint` and a :class:`~core.io.pretrained.load.PretrainedModel`
differ only in where their facts live (a task and our special ids, or a family's tokenizer and head);
:func:`as_subject` reads those facts once, so nothing after it asks which kind of model it has.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from core.io.checkpoint import Checkpoint, load
from core.io.pretrained.load import PretrainedModel, is_pretrained, load_pretrained
from core.model.contract import ModelSpec, kv_groups
from core.text.inputs import AnyTokenizer
from core.text.tokenizer import BOS_ID, EOS_ID

MAP_BUDGET_BYTES = 128 * 2**20  # maps held whole (the exact path) stay below this; longer inputs' are on demand
#: What one explanation's trace (every layer's queries and keys, the mask, the logits) may take: the most
#: tokens a model is explained with are its positions, or fewer where this ends first.
TRACE_BUDGET_BYTES = 3 * 2**30
#: What each architecture of Attnscope's own models predicts.
OWN_HEADS = {"encoder": "classes", "decoder": "next_token", "encoder-decoder": "text"}


@dataclass(frozen=True)
class Subject:
    """A loaded model with everything the pipeline needs to run it on text.

    Attributes:
        model: the network on the model contract. spec: its config (:class:`ModelSpec`).
        task: the built-in task it was trained on (normalises input, warns about lengths), or None.
        head: what its logits are: ``classes``, ``hidden``, ``masked_lm``, ``token_classes``,
            ``next_token`` or ``text``.
        labels: class names of a ``classes``/``token_classes`` head.
        source_tokenizer / target_tokenizer: the encoder's and the decoder's tokenizers.
        token_limit: the most input tokens explained at once. limit_reason: what sets it, for the truncation note.
        input_prefix: ids a decoder-only model's input starts with that the tokenizer does not add.
        decoder_start: the ids an encoder-decoder's decoder starts from.
        eos_id: the id that ends generation (-1 when the model has none).
        head_groups: for each query head, the key/value head it reads.
        pooling: how a ``hidden`` head's states become a sentence vector.
    """

    model: nn.Module
    spec: ModelSpec
    task: str | None
    head: str
    labels: tuple[str, ...]
    source_tokenizer: AnyTokenizer | None
    target_tokenizer: AnyTokenizer | None
    token_limit: int
    limit_reason: str = "the most this model is explained with"
    input_prefix: tuple[int, ...] = ()
    decoder_start: tuple[int, ...] = ()
    eos_id: int = -1
    head_groups: tuple[int, ...] = ()
    pooling: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        """Where the model's weights are."""
        return next(self.model.parameters()).device

    @property
    def grouped(self) -> bool:
        """Whether query heads share key/value heads (grouped-query attention)."""
        return self.head_groups != tuple(range(len(self.head_groups)))


def maps_on_demand(spec: ModelSpec) -> bool:
    """Whether the model's maps can be computed again from its trace's queries and keys: every family's
    scores are (biased, scaled) dot products; Attnscope's own ``general`` and ``additive`` scores are not."""
    return getattr(spec, "score", "scaled_dot") in ("scaled_dot", "dot")


def map_bytes(spec: ModelSpec, source: int, target: int) -> int:
    """Bytes of every float32 map of one explanation with ``source`` encoder and ``target`` decoder tokens."""
    sides = {"encoder": (source, source), "decoder": (target, target), "cross": (target, source)}
    return 4 * spec.n_heads * sum(spec.n_layers(k) * sides[k][0] * sides[k][1] for k in spec.attention_kinds)


def trace_bytes(spec: ModelSpec, tokens: int) -> int:
    """Bytes of one explanation's trace at ``tokens`` positions: every layer's float32 queries and keys,
    a (T, T) bool mask per kind and the (T, V) float32 logits."""
    kv = len(set(kv_groups(spec)))
    per_token = 4 * spec.head_dim * (spec.n_heads + kv) * sum(spec.n_layers(k) for k in spec.attention_kinds)
    vocab = getattr(spec, "vocab_size", None) or getattr(spec, "tgt_vocab_size", 0)
    return tokens * per_token + len(spec.attention_kinds) * tokens ** 2 + 4 * tokens * vocab


def token_limit(spec: ModelSpec) -> tuple[int, str]:
    """The most tokens a pretrained model is explained with at once, and why: its positions, or fewer
    where one explanation's trace (:func:`trace_bytes`) would pass :data:`TRACE_BUDGET_BYTES`, or, for
    maps that cannot be computed on demand, their :data:`MAP_BUDGET_BYTES`."""
    if not maps_on_demand(spec):
        maps = sum(spec.n_layers(kind) for kind in spec.attention_kinds) * spec.n_heads
        fits = math.isqrt(MAP_BUDGET_BYTES // (4 * maps))
        budget = f"{MAP_BUDGET_BYTES // 2**20} MB"
    else:
        low, high = 1, spec.max_len  # the largest length whose trace fits: trace_bytes grows with it
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if trace_bytes(spec, middle) <= TRACE_BUDGET_BYTES else (low, middle - 1)
        fits = low
        budget = f"{TRACE_BUDGET_BYTES / 2**30:g} GiB"
    if fits >= spec.max_len:
        return spec.max_len, f"the model's {spec.max_len} positions"
    return max(2, fits), (f"the most that fits one explanation's memory budget ({budget}; the model has "
                          f"{spec.max_len} positions)")


def _own(ckpt: Checkpoint) -> Subject:
    config = ckpt.config
    names = ckpt.info.run.labels or [f"class {i}" for i in range(config.n_classes)]
    return Subject(
        ckpt.model, config, ckpt.info.task, OWN_HEADS[config.architecture], tuple(names),
        ckpt.source_tokenizer, ckpt.target_tokenizer, config.max_len,
        input_prefix=(BOS_ID,) if config.architecture == "decoder" else (), decoder_start=(BOS_ID,),
        eos_id=EOS_ID, head_groups=kv_groups(config),
    )


def _pretrained(pretrained: PretrainedModel) -> Subject:
    spec, tokenizer = pretrained.config, pretrained.tokenizer
    eos = getattr(spec, "eos_id", None)
    start = () if pretrained.decoder_start_id is None else (pretrained.decoder_start_id,)
    forced = getattr(spec, "forced_bos_id", None)  # a first output token the config forces (mBART's language)
    start += () if forced is None or not start else (forced,)
    return Subject(
        pretrained.model, spec, None, pretrained.head, pretrained.labels, tokenizer,
        pretrained.target_tokenizer or tokenizer, *token_limit(spec), decoder_start=start,
        eos_id=-1 if eos is None else eos, head_groups=pretrained.head_groups(), pooling=pretrained.pooling,
    )


def as_subject(source: Checkpoint | PretrainedModel | Subject | str | os.PathLike) -> Subject:
    """The :class:`Subject` of a loaded model or of a path (an Attnscope checkpoint, a Hugging Face
    folder or a ``.gguf`` file).

    Raises:
        CheckpointError: a path that cannot be loaded.
    """
    if isinstance(source, Subject):
        return source
    if isinstance(source, Checkpoint):
        return _own(source)
    if is_pretrained(source):
        return _pretrained(source if isinstance(source, PretrainedModel) else load_pretrained(source))
    return _own(load(source))
