"""The model contract: what every model, ours and every pretrained family, returns and accepts.

The explain pipeline (:mod:`core.inspect.explainer`), generation (:mod:`core.generate`) and every
page depend on this module alone, never on a family. A model is an ``nn.Module`` whose ``config``
satisfies :class:`ModelSpec` and whose ``forward`` returns a :class:`ModelOutput` under the same
:class:`AttentionControls`; a decoder also answers :meth:`AttentionModel.next_token_logits` and ``unembed``
(the logits a residual stream would give: final norm, then the output layer, what the logit lens reads), and
an encoder-decoder runs its encoder once (``encode``) and its decoder over that memory (``decode``).

Glossary: B batch, L layers, H heads, Tq/Tk query/key length, V vocabulary.
Orientation: row = query (the token attending), column = key (the token attended to).
"""

from __future__ import annotations

import math

from dataclasses import asdict, dataclass, field
from typing import Mapping, Protocol, runtime_checkable

import torch
from torch import Tensor

KINDS = ("encoder", "decoder", "cross")
ARCHITECTURE_KINDS = {
    "encoder-decoder": ("encoder", "decoder", "cross"),
    "encoder": ("encoder",),
    "decoder": ("decoder",),
}


@dataclass(frozen=True)
class AttentionControls:
    """Per-call inference controls; they never change the model.

    Attributes:
        causal: apply the look-ahead mask in decoder self-attention.
        padding: mask padding keys.
        temperature: inverse temperature β on every attention score (1.0 = the paper).
        hard: one-hot argmax attention instead of softmax.
        head_mask: kind → (L, H) multipliers (1 keep, 0 knock the head out), or (L, B, H): one per batch row
            (a sweep knocks a different head out in each row of one batch).
    """

    causal: bool = True
    padding: bool = True
    temperature: float = 1.0
    hard: bool = False
    head_mask: Mapping[str, Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelOutput:
    """What :meth:`Transformer.forward` returns.

    Attributes:
        logits: (B, T, V) next-token scores, or (B, C) class scores for ``encoder``.
        loss: mean cross-entropy (pad targets ignored) when targets were given, else None.
        attention: kind → (L, B, H, Tq, Tk) float32 weights, when asked for.
        scores: kind → (L, B, H, Tq, Tk) float32 pre-softmax scores (β-scaled,
            unmasked), when asked for. A family may add the parts its scores are the sum of under
            ``"<kind>/<part>"`` keys (DeBERTa: ``encoder/c2c``, ``encoder/c2p``, ``encoder/p2c``);
            whoever reads the scores reads the kinds it knows.
        trace: the named intermediates ``record=`` asked for (:data:`core.model.trace.TRACE_NAMES`), else None.
    """

    logits: Tensor
    loss: Tensor | None = None
    attention: dict[str, Tensor] | None = None
    scores: dict[str, Tensor] | None = None
    trace: dict[str, Tensor] | None = None



@runtime_checkable
class ModelSpec(Protocol):
    """What core asks of every model's config (``ModelConfig`` and every family's).

    Attributes:
        architecture: ``encoder``, ``decoder`` or ``encoder-decoder``.
        attention_kinds: the kinds of map the model returns, in reading order.
        n_heads: query heads per layer. head_dim: width of one head.
        max_len: the most positions the model is run on.
        pad_id: the id that pads a batch.
    """

    architecture: str
    attention_kinds: tuple[str, ...]
    has_encoder: bool
    has_decoder: bool
    n_heads: int
    max_len: int
    pad_id: int

    @property
    def head_dim(self) -> int: ...

    def n_layers(self, kind: str) -> int: ...


@runtime_checkable
class AttentionModel(Protocol):
    """An ``nn.Module`` on the contract: ``forward`` returns logits and, on request, every map."""

    config: ModelSpec

    def forward(self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
                controls: AttentionControls = ..., return_attention: bool = False,
                return_scores: bool = False, record: list[str] | None = None) -> ModelOutput: ...


class FamilySpec:
    """Mixin for a pretrained family's frozen config dataclass: answers :class:`ModelSpec`'s questions
    from its ``architecture`` (a class attribute), ``d_model``, ``n_heads`` and ``n_encoder_layers`` /
    ``n_decoder_layers`` fields, so no family writes them again."""

    architecture: str

    @property
    def attention_kinds(self) -> tuple[str, ...]:
        """The kinds of map the model returns, in reading order."""
        return ARCHITECTURE_KINDS[self.architecture]

    @property
    def has_encoder(self) -> bool:
        """Whether the model has an encoder stack."""
        return "encoder" in self.attention_kinds

    @property
    def has_decoder(self) -> bool:
        """Whether the model has a decoder stack."""
        return "decoder" in self.attention_kinds

    @property
    def head_dim(self) -> int:
        """Width of one head (``d_model / n_heads`` unless the family's config says otherwise)."""
        return self.d_model // self.n_heads

    def n_layers(self, kind: str) -> int:
        """Layers holding attention of ``kind`` (cross-attention sits in every decoder layer)."""
        if kind not in self.attention_kinds:
            return 0
        return getattr(self, "n_encoder_layers" if kind == "encoder" else "n_decoder_layers")

    def to_dict(self) -> dict:
        """A plain dict of every field (JSON round trip)."""
        return asdict(self)

    def check_sizes(self, *names: str) -> None:
        """Refuse a size field of ``names`` below 1 (``ValueError`` naming it)."""
        for name in names:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    def check_positive(self, *names: str) -> None:
        """:func:`check_positive` of this config."""
        check_positive(self, *names)

    def check_pad_id(self) -> None:
        """Refuse a ``pad_id``, and a ``bos_id`` or ``eos_id`` the config has, outside ``[0, vocab_size)``."""
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name, None)
            if value is not None and not 0 <= value < self.vocab_size:
                raise ValueError(f"{name} {value} is outside the vocabulary")


def check_positive(config: object, *names: str) -> None:
    """Refuse a constant of ``config`` named in ``names`` (a norm's ε, a rotary base) that is not a finite number
    above 0 (``ValueError`` naming it): such a value is refused, never used."""
    for name in names:
        value = getattr(config, name)
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number above 0, got {value!r}")


def kv_groups(spec: ModelSpec) -> tuple[int, ...]:
    """For each query head, the key/value head it reads (its own index without grouped-query attention)."""
    groups = getattr(spec, "kv_head_of", None)
    return tuple(groups) if groups is not None else tuple(range(spec.n_heads))


def check_ids(ids: Tensor, max_len: int, vocab_size: int) -> None:
    """Refuse ids that are not (B, T >= 1) int64 in [0, vocab_size) or longer than ``max_len``.

    Raises:
        ValueError: naming what is wrong.
    """
    if ids.dim() != 2 or ids.size(0) == 0 or ids.size(1) == 0:
        raise ValueError(f"token ids must be (batch, length >= 1), got shape {tuple(ids.shape)}")
    if ids.size(1) > max_len:
        raise ValueError(f"sequence of {ids.size(1)} tokens exceeds max_len {max_len}")
    if ids.dtype != torch.long or int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise ValueError(f"token ids must be int64 in [0, {vocab_size})")


def single_stack_head_mask(controls: AttentionControls, kind: str, layers: int, heads: int,
                           model: str) -> Tensor | None:
    """The (L, H) head mask of a model with one attention kind (``encoder`` or ``decoder``).

    Raises:
        ValueError: a kind the model lacks, or a mask of the wrong shape.
    """
    unknown = sorted(set(controls.head_mask) - {kind})
    if unknown:
        raise ValueError(f"head_mask has kinds {unknown} that {model} does not have")
    mask = controls.head_mask.get(kind)
    check_head_mask(mask, kind, layers, heads)
    return mask


def stack_head_mask(controls: AttentionControls, spec: ModelSpec, kind: str) -> Tensor | None:
    """The (L, H) head mask of ``kind`` for a model with several attention kinds.

    Raises:
        ValueError: a kind the model lacks, or a mask of the wrong shape.
    """
    unknown = sorted(set(controls.head_mask) - set(spec.attention_kinds))
    if unknown:
        raise ValueError(f"head_mask has kinds {unknown} that this {spec.architecture} model does not have")
    mask = controls.head_mask.get(kind)
    check_head_mask(mask, kind, spec.n_layers(kind), spec.n_heads)
    return mask


def check_head_mask(mask: Tensor | None, kind: str, layers: int, heads: int) -> None:
    """Refuse a head mask of ``kind`` that is neither (L, H) nor (L, B, H) (``ValueError`` naming the shapes)."""
    if mask is None:
        return
    shape = tuple(mask.shape)
    if not (len(shape) in (2, 3) and shape[0] == layers and shape[-1] == heads):
        raise ValueError(f"head_mask[{kind!r}] must have shape {(layers, heads)} or {(layers, 'B', heads)}, "
                         f"got {shape}")


def masked_heads(out: Tensor, head_mask: Tensor | None) -> Tensor:
    """Per-head outputs (B, H, T, dk) times a layer's head mask: (H,), or (B, H) one per batch row.

    Raises:
        ValueError: a mask that fits neither.
    """
    if head_mask is None:
        return out
    batch, heads = out.shape[:2]
    if tuple(head_mask.shape) not in ((heads,), (batch, heads)):
        raise ValueError(f"head_mask must have shape ({heads},) or ({batch}, {heads}), got {tuple(head_mask.shape)}")
    return out * head_mask.to(out.dtype).reshape(-1 if head_mask.dim() == 2 else 1, heads, 1, 1)
