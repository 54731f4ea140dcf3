"""A Llama-family decoder (SmolLM2, Llama 2/3, …) that returns every head's attention.

Pre-norm blocks: x + Attention(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)); rotary
positions on queries and keys; grouped-query attention (H query heads share Hkv
key/value heads); an output projection optionally tied to the token embedding.
The maps show all H query heads; :attr:`LlamaConfig.kv_head_of` labels each with
the key/value head it reads.

Glossary: B batch, T length, L layers, H query heads, Hkv key/value heads, dk head
width, D model width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.families.grouped import HeadCall, embedding, grouped_attention, kv_head_of, stack_field
from core.model.masks import combine_masks, subsequent_mask
from core.model.rotary import apply_rotary, rotary_tables
from core.model.contract import check_ids, single_stack_head_mask
from core.model.contract import AttentionControls, ModelOutput


@dataclass(frozen=True)
class LlamaConfig:
    """Sizes and constants of a Llama-family decoder (JSON round trip with ``asdict``).

    Attributes:
        max_len: the longest input the model is run on (at most its trained context).
        pad_id: the id padding a batch (never attended to while ``padding`` is on).
        bos_id / eos_id: begin/end of sequence ids (None when the model has none).
    """

    vocab_size: int
    d_model: int
    n_decoder_layers: int
    n_heads: int
    n_kv_heads: int
    d_ff: int
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    max_len: int = 2048
    tie_embeddings: bool = True
    pad_id: int = 0
    bos_id: int | None = None
    eos_id: int | None = None

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_decoder_layers", "n_heads", "n_kv_heads", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model {self.d_model} must split into {self.n_heads} heads of even width")
        kv_head_of(self.n_heads, self.n_kv_heads)  # raises when the groups are uneven
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id {self.pad_id} is outside the vocabulary")

    # The same questions core asks a ModelConfig.
    architecture = "decoder"
    attention_kinds = ("decoder",)
    has_encoder = False
    has_decoder = True

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def never_generated(self) -> tuple[int, ...]:
        """Ids decoding must not produce: none, the model's distribution is used as it is."""
        return ()

    @property
    def kv_head_of(self) -> list[int]:
        """For each query head, the key/value head it shares."""
        return kv_head_of(self.n_heads, self.n_kv_heads)

    def n_layers(self, kind: str) -> int:
        """Layers holding attention of ``kind`` (as :meth:`ModelConfig.n_layers`)."""
        return self.n_decoder_layers if kind == "decoder" else 0

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    """x / RMS(x) · g, computed in float32 (no mean subtraction, no bias)."""

    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, T, D)
        return (normed * self.weight.float()).to(x.dtype)


class LlamaAttention(nn.Module):
    """Grouped-query self-attention with rotary positions and no biases."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = c.n_heads, c.n_kv_heads, c.head_dim
        self.q_proj = nn.Linear(c.d_model, c.n_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, c.d_model, bias=False)

    def forward(self, x: Tensor, rotary: tuple[Tensor, Tensor], mask: Tensor | None, call: HeadCall,
                head_mask: Tensor | None):
        batch, length, _ = x.shape
        q = self.q_proj(x).view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dk)
        k = self.k_proj(x).view(batch, length, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, dk)
        v = self.v_proj(x).view(batch, length, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, dk)
        cos, sin = rotary
        result = grouped_attention(apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v, mask, call, head_mask)
        return self.o_proj(result.output), result  # (B, T, D)


class SwiGLU(nn.Module):
    """down(SiLU(gate(x)) ⊙ up(x)): Llama's feed-forward network."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))  # (B, T, D)


class LlamaLayer(nn.Module):
    """One pre-norm block: attention then SwiGLU, each added to the residual stream."""

    def __init__(self, c: LlamaConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.norm_eps)
        self.attn = LlamaAttention(c)
        self.ffn_norm = RMSNorm(c.d_model, c.norm_eps)
        self.mlp = SwiGLU(c.d_model, c.d_ff)

    def forward(self, x, rotary, mask, call, head_mask):
        attended, result = self.attn(self.attn_norm(x), rotary, mask, call, head_mask)
        x = x + attended  # (B, T, D)
        return x + self.mlp(self.ffn_norm(x)), result


class LlamaModel(nn.Module):
    """A Llama-family causal language model; ``forward`` matches :class:`~core.model.transformer.Transformer`'s."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c.n_decoder_layers))
        self.norm = RMSNorm(c.d_model, c.norm_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def _check_ids(self, ids: Tensor) -> None:
        check_ids(ids, self.config.max_len, self.config.vocab_size)

    def _head_mask(self, controls: AttentionControls) -> Tensor | None:
        return single_stack_head_mask(controls, "decoder", self.config.n_decoder_layers, self.config.n_heads,
                                      "a decoder-only model")

    def decode(self, tgt: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None) -> tuple[Tensor, list]:
        """Hidden states (B, T, D) after the final norm, and per-layer attention results.

        Args:
            key_mask: (B, T) bool, ``False`` on right-padding (used while ``controls.padding``).
        """
        self._check_ids(tgt)
        causal = subsequent_mask(tgt.size(1), tgt.device) if controls.causal else None  # (T, T)
        pad = key_mask[:, None, None, :] if key_mask is not None and controls.padding else None  # (B, 1, 1, T)
        mask = combine_masks(causal, pad)
        rotary = rotary_tables(tgt.size(1), self.config.head_dim, self.config.rope_base, tgt.device)
        call = HeadCall(controls.temperature, controls.hard, need_weights)
        heads = self._head_mask(controls)
        x, results = self.embed(tgt), []  # (B, T, D)
        for i, layer in enumerate(self.layers):
            x, result = layer(x, rotary, mask, call, None if heads is None else heads[i])
            results.append(result)
        return self.norm(x), results

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None,
    ) -> ModelOutput:
        """Next-token logits (B, T, V) for ``tgt`` (B, T); maps under ``"decoder"`` on request.

        ``src`` must be None (there is no encoder); ``targets`` (B, T) gives the mean
        cross-entropy, ignoring positions where ``key_mask`` is False.
        """
        if src is not None or tgt is None:
            raise ValueError("a decoder-only model takes tgt ids and no src")
        hidden, results = self.decode(tgt, controls, return_attention or return_scores, key_mask)
        logits = self.lm_head(hidden)  # (B, T, V)
        loss = None
        if targets is not None:
            ignore = targets if key_mask is None else targets.masked_fill(~key_mask, -100)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), ignore.reshape(-1))
        return ModelOutput(
            logits=logits, loss=loss,
            attention={"decoder": stack_field(results, "weights")} if return_attention else None,
            scores={"decoder": stack_field(results, "scores")} if return_scores else None,
        )

    def next_token_logits(self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
                          controls: AttentionControls = AttentionControls()) -> Tensor:
        """Scores (B, V) for the token after ``tgt`` (B, T) (``memory`` is unused: no encoder)."""
        hidden, _ = self.decode(tgt, controls)
        return self.lm_head(hidden[:, -1])  # (B, V)
