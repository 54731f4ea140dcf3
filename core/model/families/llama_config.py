"""The configuration of a Llama-family decoder, and what it says about the model's variant.

One :class:`LlamaConfig` covers Llama 2/3, SmolLM2, Mistral (``sliding_window``), Qwen2
(``qkv_bias``), Qwen3 (``qk_norm``, explicit ``explicit_head_dim``) and Gemma (``norm_plus_one``,
``embed_scale``, ``activation="gelu_pytorch_tanh"``, explicit head width): every flag defaults
to plain Llama. It round-trips through JSON with ``asdict``.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.model.families.decoder import ACTIVATIONS, DecoderSpec
from core.model.families.grouped import kv_head_of
from core.model.families.rope import RopeScaling


@dataclass(frozen=True)
class LlamaConfig(DecoderSpec):
    """Sizes and constants of a Llama-family decoder (JSON round trip with ``asdict``).

    Attributes:
        max_len: the longest input the model is run on (at most its trained context).
        pad_id: the id padding a batch (never attended to while ``padding`` is on).
        bos_id / eos_id: begin/end of sequence ids (None when the model has none).
        explicit_head_dim: the head width when it is not d_model / n_heads (Gemma, Qwen3).
        qkv_bias / out_bias / mlp_bias: biases on the q/k/v, output and feed-forward projections.
        qk_norm: an RMSNorm on each head's queries and keys before the rotation (Qwen3).
        norm_plus_one: RMSNorm gains stored as offsets from 1 (Gemma).
        embed_scale: token embeddings multiplied by √d_model (Gemma).
        activation: the gated feed-forward's activation (SiLU = SwiGLU; Gemma's tanh GELU = GeGLU).
        sliding_window: each query sees only the last ``sliding_window`` keys (Mistral).
        rope_type … rope_freq_factors: rotary scaling (:class:`~core.model.families.rope.RopeScaling`'s
            fields of the same names; ``rope_freq_factors`` a GGUF's ``rope_freqs``).
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
    explicit_head_dim: int | None = None
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norm_plus_one: bool = False
    embed_scale: bool = False
    activation: str = "silu"
    sliding_window: int | None = None
    rope_type: str = RopeScaling.kind  # the rope_* defaults are RopeScaling's, written once
    rope_factor: float = RopeScaling.factor
    rope_low_freq_factor: float = RopeScaling.low_freq_factor
    rope_high_freq_factor: float = RopeScaling.high_freq_factor
    rope_original_max_len: int = RopeScaling.original_max_len
    rope_beta_fast: float = RopeScaling.beta_fast
    rope_beta_slow: float = RopeScaling.beta_slow
    rope_truncate: bool = RopeScaling.truncate
    rope_attention_factor: float | None = RopeScaling.attention_factor
    rope_freq_factors: tuple[float, ...] | None = RopeScaling.freq_factors

    def __post_init__(self) -> None:
        self.check_sizes("vocab_size", "d_model", "n_decoder_layers", "n_heads", "n_kv_heads", "d_ff", "max_len")
        if self.explicit_head_dim is None and self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} does not split into {self.n_heads} heads")
        if self.head_dim < 2 or self.head_dim % 2:
            raise ValueError(f"the head width must be even for rotary positions, got {self.head_dim}")
        kv_head_of(self.n_heads, self.n_kv_heads)  # raises when the groups are uneven
        self.check_pad_id()
        self.check_positive("norm_eps", "rope_base")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
        if self.sliding_window is not None and self.sliding_window < 1:
            raise ValueError(f"sliding_window must be at least 1, got {self.sliding_window}")
        if self.rope_freq_factors is not None:  # a list after a JSON round trip
            object.__setattr__(self, "rope_freq_factors", tuple(float(f) for f in self.rope_freq_factors))
            if len(self.rope_freq_factors) != self.head_dim // 2:
                raise ValueError(f"{len(self.rope_freq_factors)} rope frequency factors for a head width of "
                                 f"{self.head_dim}")
        self.rope_scaling  # noqa: B018 (building it raises on an unsupported type or factor)

    @property
    def head_dim(self) -> int:
        """Width of one head: the explicit one, else d_model / n_heads."""
        return self.explicit_head_dim or self.d_model // self.n_heads

    @property
    def rope_scaling(self) -> RopeScaling:
        """The rotary scaling these fields describe."""
        return RopeScaling(self.rope_type, self.rope_factor, self.rope_low_freq_factor, self.rope_high_freq_factor,
                           self.rope_original_max_len, self.rope_beta_fast, self.rope_beta_slow, self.rope_truncate,
                           self.rope_attention_factor, self.rope_freq_factors)

