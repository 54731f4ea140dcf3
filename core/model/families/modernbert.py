"""ModernBERT: a pre-norm encoder with rotary positions, alternating local and global attention and GeGLU,
every map returned.

Each layer is x + Attention(LayerNorm(x)) (the first layer reads the normalised embeddings without a norm of
its own), then x + GeGLU(LayerNorm(x)); a final LayerNorm. The norms have no bias unless ``norm_bias``.
A ``sliding_attention`` layer lets token i see only keys j with |i − j| ≤ ``window`` (half of the config's
``local_attention``; its cells outside the band are exactly 0) and rotates with the local base (10,000), a
``full_attention`` layer sees every token and rotates with the global base (160,000); every third layer is
global. The attention is :class:`~core.model.families.decoder.DecoderAttention` without the causal mask
(so :func:`~core.model.families.grouped.grouped_attention`), the feed-forward Llama's
:class:`~core.model.families.llama.GatedMLP`.

Heads: masked LM (dense → activation → LayerNorm → the tied decoder), sequence classification (the first
token's state, or the mean over the real tokens, → the same dense/activation/norm → classifier) and
token classification (every state through them).

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, F feed-forward width,
V vocabulary, C classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.contract import AttentionControls, FamilySpec, ModelOutput, check_ids, single_stack_head_mask
from core.model.families.decoder import ACTIVATIONS, DecoderAttention
from core.model.families.encoder_heads import HeadConfig
from core.model.families.grouped import HeadCall, embedding, stacked_output
from core.model.families.llama import GatedMLP
from core.model.families.rope import rope_tables
from core.model.masks import combine_masks
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site

LAYER_TYPES = ("sliding_attention", "full_attention")
POOLINGS = ("cls", "mean")


@dataclass(frozen=True)
class ModernBertConfig(FamilySpec):
    """Sizes and constants of a ModernBERT encoder (JSON round trip with ``asdict``).

    Attributes:
        layer_types: one of :data:`LAYER_TYPES` per layer. window: a local layer's reach on each side.
        global_rope_base / local_rope_base: the rotary base of the global and the local layers.
        head: the task head (``kind``, ``n_labels``, ``activation``: the classifier activation).
        head_bias: the head's dense layer has a bias. decoder_bias: the masked-LM decoder has one.
        pooling: how a sequence classifier pools the states (:data:`POOLINGS`).
    """

    vocab_size: int
    d_model: int
    n_encoder_layers: int
    n_heads: int
    d_ff: int
    layer_types: tuple[str, ...]
    max_len: int = 2048
    norm_eps: float = 1e-5
    norm_bias: bool = False
    activation: str = "gelu"
    pad_id: int = 0
    attention_bias: bool = False
    mlp_bias: bool = False
    window: int = 64
    global_rope_base: float = 160_000.0
    local_rope_base: float = 10_000.0
    head: HeadConfig = HeadConfig()
    head_bias: bool = False
    decoder_bias: bool = True
    pooling: str = "cls"

    architecture = "encoder"

    def __post_init__(self) -> None:
        object.__setattr__(self, "layer_types", tuple(self.layer_types))  # a list after a JSON round trip
        if isinstance(self.head, dict):
            object.__setattr__(self, "head", HeadConfig(**self.head))
        self.check_sizes("vocab_size", "d_model", "n_encoder_layers", "n_heads", "d_ff", "max_len", "window")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} must split into {self.n_heads} heads of an even width")
        if len(self.layer_types) != self.n_encoder_layers or set(self.layer_types) - set(LAYER_TYPES):
            raise ValueError(f"layer_types must give one of {', '.join(LAYER_TYPES)} for each of the "
                             f"{self.n_encoder_layers} layers")
        for name, allowed in (("activation", ACTIVATIONS), ("pooling", POOLINGS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} {getattr(self, name)!r} is not one of {', '.join(allowed)}")
        if self.head.activation not in ACTIVATIONS:
            raise ValueError(f"head activation {self.head.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        self.check_pad_id()
        self.check_positive("norm_eps", "global_rope_base", "local_rope_base")


def _norm(c: ModernBertConfig) -> nn.LayerNorm:
    return nn.LayerNorm(c.d_model, eps=c.norm_eps, bias=c.norm_bias)


class ModernBertLayer(nn.Module):
    """One pre-norm block; a local layer reads the local rotary tables and the banded mask."""

    def __init__(self, c: ModernBertConfig, index: int) -> None:
        super().__init__()
        self.local = c.layer_types[index] == "sliding_attention"
        self.attn_norm = _norm(c) if index else None  # the first layer reads the normalised embeddings
        self.attn = DecoderAttention(c.d_model, c.n_heads, c.n_heads, c.head_dim, qkv_bias=c.attention_bias,
                                     out_bias=c.attention_bias)
        self.mlp_norm = _norm(c)
        self.mlp = GatedMLP(c.d_model, c.d_ff, c.activation, c.mlp_bias)

    def forward(self, x, rotary, masks, call, head_mask):
        which = 0 if self.local else 1  # (local, global)
        attended, result = self.attn(x if self.attn_norm is None else self.attn_norm(x), rotary[which], masks[which],
                                     call, head_mask)
        x = put(call, "resid_mid", x + put(call, "attn_out", attended))  # (B, T, D)
        return put(call, "resid_out", x + put(call, "ffn_out", self.mlp(self.mlp_norm(x)))), result


class ModernBertHead(nn.Module):
    """dense → activation → LayerNorm, then the decoder (masked LM, tied) or the classifier."""

    def __init__(self, c: ModernBertConfig) -> None:
        super().__init__()
        self.kind, self.pooling = c.head.kind, c.pooling
        self.dense = nn.Linear(c.d_model, c.d_model, bias=c.head_bias)
        self.norm = _norm(c)
        self.activation = ACTIVATIONS[c.head.activation]
        if self.kind == "masked_lm":
            self.decoder = nn.Linear(c.d_model, c.vocab_size, bias=c.decoder_bias)
        else:
            self.classifier = nn.Linear(c.d_model, c.head.n_labels)

    def forward(self, hidden: Tensor, real: Tensor) -> Tensor:
        if self.kind == "classes":
            mean = (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)  # (B, D) over real tokens
            hidden = hidden[:, 0] if self.pooling == "cls" else mean
        transformed = self.norm(self.activation(self.dense(hidden)))
        return self.decoder(transformed) if self.kind == "masked_lm" else self.classifier(transformed)


class ModernBertModel(nn.Module):
    """A ModernBERT encoder; ``forward`` matches :class:`~core.model.families.bert.BertModel`'s."""

    def __init__(self, config: ModernBertConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.embed_norm = _norm(c)
        self.layers = nn.ModuleList(ModernBertLayer(c, i) for i in range(c.n_encoder_layers))
        self.norm = _norm(c)  # the final norm
        self.head = ModernBertHead(c) if c.head.kind != "hidden" else None
        if self.head is not None and c.head.kind == "masked_lm":
            self.head.decoder.weight = self.embed.weight  # tied

    def _masks(self, real: Tensor, controls: AttentionControls) -> tuple[Tensor | None, Tensor | None]:
        """(local, global) bool masks (B|1, 1, T, T) or None: padding keys, and the local band |i − j| ≤ window."""
        positions = torch.arange(real.size(1), device=real.device)
        band = (positions[:, None] - positions[None, :]).abs() <= self.config.window  # (T, T)
        pad = real[:, None, None, :] if controls.padding else None  # (B, 1, 1, T)
        return combine_masks(band, pad), pad

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, recorder: Recorder | None = None) -> tuple[Tensor, list]:
        """Last hidden states (B, T, D) after the final norm, and per-layer attention results; ``recorder``
        collects the pass's trace (:mod:`core.model.trace`) under ``encoder.…``."""
        c = self.config
        check_ids(src, c.max_len, c.vocab_size)
        real = src != c.pad_id if key_mask is None else key_mask  # (B, T)
        masks = self._masks(real, controls)
        length = src.size(1)
        rotary = tuple(rope_tables(length, c.head_dim, base, device=src.device)
                       for base in (c.local_rope_base, c.global_rope_base))  # (T, dk) tables each
        call = HeadCall(controls.temperature, controls.hard, need_weights, site=stack_site(recorder, "encoder"))
        heads = single_stack_head_mask(controls, "encoder", c.n_encoder_layers, c.n_heads, "an encoder-only model")
        x, results = put(call, "embed", self.embed_norm(self.embed(src))), []  # (B, T, D)
        for i, layer in enumerate(self.layers):
            x, result = layer(x, rotary, masks, at_layer(call, i), None if heads is None else heads[i])
            results.append(result)
        return put(call, "final", self.norm(x)), results

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None, record: list[str] | None = None,
    ) -> ModelOutput:
        """The head's logits for ``src`` (B, T) (the hidden states without one); maps under ``"encoder"`` on request;
        ``record`` names the trace's parts to keep."""
        if src is None or tgt is not None or targets is not None:
            raise ValueError("an encoder-only model takes src ids only")
        recorder = recorder_of(record)
        hidden, results = self.encode(src, controls, return_attention or return_scores, key_mask, recorder)
        real = src != self.config.pad_id if key_mask is None else key_mask
        return stacked_output(hidden if self.head is None else self.head(hidden, real.to(hidden.dtype)),
                              {"encoder": results}, return_attention, return_scores, recorder)
