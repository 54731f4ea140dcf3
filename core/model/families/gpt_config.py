"""The configuration of a LayerNorm decoder (GPT-2, GPT-NeoX/Pythia, OPT, Phi) and its block variants.

Block layouts (``block``):

* ``sequential`` (GPT-2, OPT-125m, non-parallel NeoX): x + Attn(LN₁(x)), then + MLP(LN₂(·));
* ``post_norm`` (OPT-350m, ``do_layer_norm_before: false``): LN₁(x + Attn(x)), then LN₂(· + MLP(·));
* ``parallel`` (GPT-NeoX/Pythia): x + Attn(LN₁(x)) + MLP(LN₂(x));
* ``parallel_shared`` (Phi): x + Attn(LN(x)) + MLP(LN(x)) with one norm.

Positions are ``learned`` (GPT-2; OPT with its offset of 2) or ``rotary`` on the first
``rotary_dim`` dimensions of each head (NeoX, Phi).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.model.families.decoder import ACTIVATIONS, DecoderSpec
from core.model.families.grouped import kv_head_of

BLOCKS = ("sequential", "post_norm", "parallel", "parallel_shared")
POSITIONS = ("learned", "rotary")


@dataclass(frozen=True)
class GptConfig(DecoderSpec):
    """Sizes and constants of a LayerNorm decoder (JSON round trip with ``asdict``).

    Attributes:
        n_positions: rows of the learned position table (its offset included).
        position_offset: learned position p is row p + offset (OPT: 2).
        rotary_dim: rotated dimensions of each head (rotary positions).
        qkv_bias / out_bias / mlp_bias / lm_head_bias: which projections have biases.
        final_norm: a LayerNorm after the last block.
    """

    vocab_size: int
    d_model: int
    n_decoder_layers: int
    n_heads: int
    d_ff: int
    max_len: int
    n_kv_heads: int | None = None
    norm_eps: float = 1e-5
    activation: str = "gelu_new"
    block: str = "sequential"
    positions: str = "learned"
    n_positions: int = 0
    position_offset: int = 0
    rotary_dim: int = 0
    rope_base: float = 10000.0
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    final_norm: bool = True
    tie_embeddings: bool = True
    lm_head_bias: bool = False
    pad_id: int = 0
    bos_id: int | None = None
    eos_id: int | None = None

    def __post_init__(self) -> None:
        self.check_sizes("vocab_size", "d_model", "n_decoder_layers", "n_heads", "d_ff", "max_len")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} does not split into {self.n_heads} heads")
        kv_head_of(self.n_heads, self.kv_heads)  # raises when the groups are uneven
        if self.block not in BLOCKS or self.positions not in POSITIONS:
            raise ValueError(f"block must be one of {BLOCKS} and positions one of {POSITIONS}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not supported; supported: {', '.join(ACTIVATIONS)}")
        if self.positions == "learned" and self.n_positions < self.max_len + self.position_offset:
            raise ValueError(f"{self.n_positions} learned positions cannot cover max_len {self.max_len} "
                             f"+ offset {self.position_offset}")
        if self.positions == "rotary" and not (2 <= self.rotary_dim <= self.head_dim and self.rotary_dim % 2 == 0):
            raise ValueError(f"rotary_dim must be even and within the head width {self.head_dim}, "
                             f"got {self.rotary_dim}")
        self.check_pad_id()
        self.check_positive("norm_eps", "rope_base")
