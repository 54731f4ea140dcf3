"""A BERT-family encoder (BERT, MiniLM, …) that returns every head's attention.

Post-norm blocks as in the paper: x = LayerNorm(x + Attention(x)), then
x = LayerNorm(x + FFN(x)) with a GELU feed-forward network. The input is the sum of
a token embedding, a learned absolute position embedding and a token-type (segment)
embedding, normalised. :func:`sentence_embedding` mean-pools the last hidden states
over the real tokens and normalises them, as sentence-transformers does.

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, F
feed-forward width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.families.grouped import HeadCall, embedding, grouped_attention, stack_field
from core.model.contract import check_ids, single_stack_head_mask
from core.model.contract import AttentionControls, ModelOutput

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
}


@dataclass(frozen=True)
class BertConfig:
    """Sizes and constants of a BERT-family encoder (JSON round trip with ``asdict``)."""

    vocab_size: int
    d_model: int
    n_encoder_layers: int
    n_heads: int
    d_ff: int
    max_len: int = 512
    type_vocab_size: int = 2
    norm_eps: float = 1e-12
    activation: str = "gelu"
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_encoder_layers", "n_heads", "d_ff", "max_len", "type_vocab_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if not 0 <= self.pad_id < self.vocab_size:
            raise ValueError(f"pad_id {self.pad_id} is outside the vocabulary")

    # The same questions core asks a ModelConfig.
    architecture = "encoder"
    attention_kinds = ("encoder",)
    has_encoder = True
    has_decoder = False

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def n_layers(self, kind: str) -> int:
        """Layers holding attention of ``kind`` (as :meth:`ModelConfig.n_layers`)."""
        return self.n_encoder_layers if kind == "encoder" else 0

    def to_dict(self) -> dict:
        return asdict(self)


class BertEmbeddings(nn.Module):
    """LayerNorm(token + position + token type) embeddings."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.word = embedding(c.vocab_size, c.d_model)
        self.position = embedding(c.max_len, c.d_model)
        self.token_type = embedding(c.type_vocab_size, c.d_model)
        self.norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)

    def forward(self, ids: Tensor, token_types: Tensor | None) -> Tensor:
        types = torch.zeros_like(ids) if token_types is None else token_types  # (B, T): one segment
        x = self.word(ids) + self.position.weight[: ids.size(1)] + self.token_type(types)  # (B, T, D)
        return self.norm(x)


class BertAttention(nn.Module):
    """Multi-head self-attention with separate, biased query/key/value projections."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.n_heads, self.head_dim = c.n_heads, c.head_dim
        self.query = nn.Linear(c.d_model, c.d_model)
        self.key = nn.Linear(c.d_model, c.d_model)
        self.value = nn.Linear(c.d_model, c.d_model)
        self.out = nn.Linear(c.d_model, c.d_model)

    def _heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, dk)

    def forward(self, x: Tensor, mask: Tensor | None, call: HeadCall, head_mask: Tensor | None):
        result = grouped_attention(self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x)),
                                   mask, call, head_mask)
        return self.out(result.output), result  # (B, T, D)


class BertLayer(nn.Module):
    """Post-norm: LayerNorm(x + attention), then LayerNorm(x + up/act/down)."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.attn = BertAttention(c)
        self.attn_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.up = nn.Linear(c.d_model, c.d_ff)
        self.down = nn.Linear(c.d_ff, c.d_model)
        self.ffn_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.activation = ACTIVATIONS[c.activation]

    def forward(self, x, mask, call, head_mask):
        attended, result = self.attn(x, mask, call, head_mask)
        x = self.attn_norm(x + attended)  # (B, T, D)
        return self.ffn_norm(x + self.down(self.activation(self.up(x)))), result


class BertModel(nn.Module):
    """A BERT-family encoder; ``forward`` matches :class:`~core.model.transformer.Transformer`'s.

    Its ``logits`` are the last hidden states (B, T, D): BERT has no output head here, and
    :func:`sentence_embedding` turns them into one vector per input.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = BertEmbeddings(c)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c.n_encoder_layers))

    def _check_ids(self, ids: Tensor) -> None:
        check_ids(ids, self.config.max_len, self.config.vocab_size)

    def _head_mask(self, controls: AttentionControls) -> Tensor | None:
        return single_stack_head_mask(controls, "encoder", self.config.n_encoder_layers, self.config.n_heads,
                                      "an encoder-only model")

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, token_types: Tensor | None = None) -> tuple[Tensor, list]:
        """Last hidden states (B, T, D) and per-layer attention results.

        Args:
            key_mask: (B, T) bool, ``False`` on padding; default: ids equal to ``pad_id``.
            token_types: (B, T) segment ids (default: all 0, one sentence).
        """
        self._check_ids(src)
        real = src != self.config.pad_id if key_mask is None else key_mask  # (B, T)
        mask = real[:, None, None, :] if controls.padding else None  # (B, 1, 1, T): keys only
        call = HeadCall(controls.temperature, controls.hard, need_weights)
        heads = self._head_mask(controls)
        x, results = self.embed(src, token_types), []  # (B, T, D)
        for i, layer in enumerate(self.layers):
            x, result = layer(x, mask, call, None if heads is None else heads[i])
            results.append(result)
        return x, results

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None,
    ) -> ModelOutput:
        """Hidden states (B, T, D) for ``src`` (B, T) as ``logits``; maps under ``"encoder"`` on request.

        The causal control does not apply (an encoder has no look-ahead mask); ``tgt`` and
        ``targets`` must be None.
        """
        if src is None or tgt is not None or targets is not None:
            raise ValueError("an encoder-only model takes src ids only")
        hidden, results = self.encode(src, controls, return_attention or return_scores, key_mask)
        return ModelOutput(
            logits=hidden,
            attention={"encoder": stack_field(results, "weights")} if return_attention else None,
            scores={"encoder": stack_field(results, "scores")} if return_scores else None,
        )


def sentence_embedding(hidden: Tensor, key_mask: Tensor) -> Tensor:
    """Mean of the hidden states (B, T, D) over the real tokens (B, T), L2-normalised: (B, D)."""
    weights = key_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, D)
    return F.normalize(pooled, p=2, dim=1)
