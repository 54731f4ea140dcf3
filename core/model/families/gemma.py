"""Gemma 2 and Gemma 3 (text) decoders, every head's attention returned.

Both are Gemma with four changes in every block, flags of :class:`GemmaConfig`:

* **sandwich norms**: x + RMSNorm(Attention(RMSNorm(x))), then x + RMSNorm(GatedMLP(RMSNorm(x)))
  (each RMSNorm with Gemma's ``1 + g`` gain);
* **alternating local and global layers** (``layer_types``): a ``sliding_attention`` layer's query
  sees only its last ``sliding_window`` keys, a ``full_attention`` layer the whole causal past
  (Gemma 2: every other layer; Gemma 3: five local to one global). The maps of a local layer are
  exactly 0 outside the window;
* scores scaled by ``query_pre_attn_scalar``^−½ instead of 1/√dk, and (Gemma 2) bounded by the
  **attention logit softcap** c · tanh(s / c) before the mask; the logits by the **final logit
  softcap** the same way;
* (Gemma 3) an RMSNorm on each head's queries and keys (``qk_norm``), and a rotary base of its own
  for the local layers (``local_rope_base``, 10,000 beside the global layers' 1,000,000).

The attention is :class:`~core.model.families.decoder.DecoderAttention` (so
:func:`~core.model.families.grouped.grouped_attention`), the rest :class:`LlamaModel`'s.

Glossary: B batch, T length, L layers, H query heads, dk head width, D model width, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import Tensor, nn

from core.model.families.decoder import DecoderAttention
from core.model.families.grouped import embedding
from core.model.families.llama import GatedMLP, LlamaConfig, LlamaModel
from core.model.families.norms import RMSNorm
from core.model.families.rope import RopeScaling, rope_tables
from core.model.trace import put

__all__ = ["GemmaConfig", "GemmaModel", "LAYER_TYPES"]

#: The kinds of layer a Gemma 2/3 config lists, by their Hugging Face names.
LAYER_TYPES = ("sliding_attention", "full_attention")


@dataclass(frozen=True)
class GemmaConfig(LlamaConfig):
    """:class:`LlamaConfig` with Gemma's defaults and the Gemma 2/3 fields (JSON round trip with ``asdict``).

    Attributes:
        layer_types: one of :data:`LAYER_TYPES` per layer (``sliding_attention`` needs ``sliding_window``).
        query_pre_attn_scalar: the scores are q·k / √query_pre_attn_scalar.
        attn_softcap: c of the attention logit softcap (None: none, Gemma 3).
        final_softcap: c of the final logit softcap (None: none, Gemma 3).
        local_rope_base: the rotary base of the local layers, unscaled (None: every layer uses
            ``rope_base`` and the rope scaling, Gemma 2).
    """

    tie_embeddings: bool = True
    norm_plus_one: bool = True
    embed_scale: bool = True
    activation: str = "gelu_pytorch_tanh"
    layer_types: tuple[str, ...] = ()
    query_pre_attn_scalar: float = 256.0
    attn_softcap: float | None = None
    final_softcap: float | None = None
    local_rope_base: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "layer_types", tuple(self.layer_types))  # a list after a JSON round trip
        super().__post_init__()
        if len(self.layer_types) != self.n_decoder_layers:
            raise ValueError(f"layer_types lists {len(self.layer_types)} layers for {self.n_decoder_layers}")
        unknown = sorted(set(self.layer_types) - set(LAYER_TYPES))
        if unknown:
            raise ValueError(f"layer type {unknown[0]!r} is not supported; supported: {', '.join(LAYER_TYPES)}")
        if "sliding_attention" in self.layer_types and self.sliding_window is None:
            raise ValueError("sliding_attention layers need a sliding_window")
        self.check_positive("query_pre_attn_scalar")
        for name in ("attn_softcap", "final_softcap", "local_rope_base"):
            if getattr(self, name) is not None:
                self.check_positive(name)

    @property
    def layer_windows(self) -> tuple[int | None, ...]:
        """Each layer's window: ``sliding_window`` for a local layer, None (the whole past) for a global one."""
        return tuple(self.sliding_window if kind == "sliding_attention" else None for kind in self.layer_types)

    @property
    def score_scale(self) -> float:
        """The factor on q·k: query_pre_attn_scalar^−½."""
        return 1.0 / math.sqrt(self.query_pre_attn_scalar)


def gemma_norm(width: int, eps: float) -> RMSNorm:
    """Gemma's RMSNorm: the gain stored as an offset from 1."""
    return RMSNorm(width, eps, plus_one=True)


class GemmaLayer(nn.Module):
    """One block with sandwich norms; a local layer reads the local rotary tables."""

    def __init__(self, c: GemmaConfig, local: bool) -> None:
        super().__init__()
        self.local = local
        self.attn_norm, self.post_attn_norm, self.ffn_norm, self.post_ffn_norm = (
            gemma_norm(c.d_model, c.norm_eps) for _ in range(4))
        self.attn = DecoderAttention(c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, qkv_bias=c.qkv_bias,
                                     out_bias=c.out_bias, qk_norm=gemma_norm if c.qk_norm else None,
                                     norm_eps=c.norm_eps,
                                     scale=c.score_scale, softcap=c.attn_softcap)
        self.mlp = GatedMLP(c.d_model, c.d_ff, c.activation, c.mlp_bias)

    def forward(self, x, rotary, mask, call, head_mask, cache=None):
        tables = rotary[0] if self.local else rotary[1]  # (local, global) tables
        attended, result = self.attn(self.attn_norm(x), tables, mask, call, head_mask, cache)
        x = put(call, "resid_mid", x + put(call, "attn_out", self.post_attn_norm(attended)))  # (B, T, D)
        ffn = put(call, "ffn_out", self.post_ffn_norm(self.mlp(self.ffn_norm(x))))
        return put(call, "resid_out", x + ffn), result


class GemmaModel(LlamaModel):
    """A Gemma 2 or Gemma 3 text causal language model on the model contract (``forward`` as LlamaModel's)."""

    def __init__(self, config: GemmaConfig) -> None:
        nn.Module.__init__(self)
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(GemmaLayer(c, kind == "sliding_attention") for kind in c.layer_types)
        self.norm = gemma_norm(c.d_model, c.norm_eps)
        self._output_head(bias=False)

    def _embed(self, tgt: Tensor, start: int):
        """Token embeddings (B, T, D) times √D, and the (local, global) rotary tables from ``start``."""
        c = self.config
        x, global_tables = super()._embed(tgt, start)
        if c.local_rope_base is None:
            return x, (global_tables, global_tables)
        cos, sin = rope_tables(start + tgt.size(1), c.head_dim, c.local_rope_base, RopeScaling(), tgt.device)
        return x, ((cos[start:], sin[start:]), global_tables)
