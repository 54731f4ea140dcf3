"""The BERT-like encoders (BERT, MiniLM, RoBERTa, XLM-RoBERTa, ELECTRA, DistilBERT, ALBERT), every map returned.

Post-norm blocks as in the paper: x = LayerNorm(x + Attention(x)), then
x = LayerNorm(x + FFN(x)) with a GELU feed-forward network. The input is the sum of
a token embedding, a learned absolute position embedding and a token-type (segment)
embedding, normalised. The families differ only in settings of :class:`BertConfig`:

* RoBERTa / XLM-RoBERTa count positions over the real tokens from ``pad_id + 1``
  (``position_offset``) and pads sit at position ``pad_id``;
* DistilBERT has no token-type embedding (``type_vocab_size = 0``);
* ELECTRA and ALBERT embed in a width E (usually narrower), projected to D (``embedding_size``);
* ALBERT shares its layer weights: layer i runs group ``i * G // L`` (``shared_layers = G``),
  and every layer still returns its own maps;
* a BERT saved with ``is_decoder`` attends causally (``causal``);
* MPNet adds a relative position bias to every layer's scores: one (buckets, H) table, T5's
  bidirectional buckets of the key-minus-query distance (``relative_buckets``), computed once per input.

A task head (:mod:`core.model.families.encoder_heads`) turns the hidden states into the logits;
without one, :func:`core.inspect.heads.pool` makes the sentence vector, as sentence-transformers does.

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, E embedding
width, F feed-forward width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.contract import AttentionControls, FamilySpec, ModelOutput, check_ids, single_stack_head_mask
from core.model.families.encoder_heads import ACTIVATIONS, HeadConfig, build_head
from core.model.families.grouped import HeadCall, embedding, grouped_attention, stacked_output
from core.model.families.t5 import RelativeBias
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site


@dataclass(frozen=True)
class BertConfig(FamilySpec):
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
    embedding_size: int = 0  # E, projected to D (even when equal, as ALBERT does); 0 = embed at D, no projection
    position_offset: int = 0  # > 0: real tokens' positions start here, pads at position_offset - 1
    shared_layers: int = 0  # G distinct layers shared by the L layers; 0 = every layer its own
    causal: bool = False
    relative_buckets: int = 0  # > 0: a relative position bias of this many buckets in every layer (MPNet)
    relative_max_distance: int = 128  # the distance where the last logarithmic bucket starts
    head: HeadConfig = HeadConfig()

    def __post_init__(self) -> None:
        if isinstance(self.head, dict):  # from a JSON round trip
            object.__setattr__(self, "head", HeadConfig(**self.head))
        self.check_sizes("vocab_size", "d_model", "n_encoder_layers", "n_heads", "d_ff", "max_len")
        for name in ("type_vocab_size", "embedding_size", "position_offset", "shared_layers", "relative_buckets"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be at least 0, got {getattr(self, name)}")
        if self.shared_layers > self.n_encoder_layers:
            raise ValueError(f"{self.shared_layers} shared layers for {self.n_encoder_layers} layers")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        self.check_pad_id()
        self.check_positive("norm_eps")
        if self.relative_buckets and (self.relative_buckets < 4 or self.relative_buckets % 2
                                      or self.relative_max_distance <= self.relative_buckets // 4):
            raise ValueError(f"relative_buckets must be even and at least 4 with relative_max_distance above a "
                             f"quarter of them, got {self.relative_buckets} and {self.relative_max_distance}")

    architecture = "encoder"  # FamilySpec answers the rest of the contract's questions from it

    @property
    def embed_width(self) -> int:
        """E, the width tokens are embedded in (D unless the family factorises its embeddings)."""
        return self.embedding_size or self.d_model

    @property
    def distinct_layers(self) -> int:
        """How many layers have their own weights (G for ALBERT, else L)."""
        return self.shared_layers or self.n_encoder_layers


class BertEmbeddings(nn.Module):
    """LayerNorm(token + position (+ token type)) embeddings, projected from E to D when they differ."""

    def __init__(self, c: BertConfig) -> None:
        super().__init__()
        self.pad_id, self.offset = c.pad_id, c.position_offset
        self.word = embedding(c.vocab_size, c.embed_width)
        self.position = embedding(c.max_len + c.position_offset, c.embed_width)
        self.token_type = embedding(c.type_vocab_size, c.embed_width) if c.type_vocab_size else None
        self.norm = nn.LayerNorm(c.embed_width, eps=c.norm_eps)
        self.project = nn.Linear(c.embed_width, c.d_model) if c.embedding_size else None

    def positions(self, ids: Tensor) -> Tensor:
        """Position ids (B, T): 0, 1, …; or, with an offset, counted over the real tokens as RoBERTa does."""
        if not self.offset:
            return torch.arange(ids.size(1), device=ids.device).expand_as(ids)  # (B, T)
        real = (ids != self.pad_id).long()  # (B, T)
        return torch.cumsum(real, dim=1) * real + (self.offset - 1)  # pads at offset - 1

    def forward(self, ids: Tensor, token_types: Tensor | None) -> Tensor:
        x = self.word(ids) + self.position(self.positions(ids))  # (B, T, E)
        if self.token_type is not None:
            types = torch.zeros_like(ids) if token_types is None else token_types  # (B, T): one segment
            x = x + self.token_type(types)
        x = self.norm(x)
        return x if self.project is None else self.project(x)  # (B, T, D)


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

    def forward(self, x: Tensor, mask: Tensor | None, call: HeadCall, head_mask: Tensor | None,
                bias: Tensor | None = None):
        result = grouped_attention(self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x)),
                                   mask, call, head_mask, bias=bias)
        return self.out(result.output), result  # (B, T, D)


class BertLayer(nn.Module):
    """Post-norm: LayerNorm(x + attention), then LayerNorm(x + up/act/down); ``attention`` replaces BERT's own
    (DeBERTa's disentangled attention)."""

    def __init__(self, c: BertConfig, attention: nn.Module | None = None) -> None:
        super().__init__()
        self.attn = BertAttention(c) if attention is None else attention
        self.attn_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.up = nn.Linear(c.d_model, c.d_ff)
        self.down = nn.Linear(c.d_ff, c.d_model)
        self.ffn_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.activation = ACTIVATIONS[c.activation]

    def forward(self, x, mask, call, head_mask, bias=None):
        attended, result = self.attn(x, mask, call, head_mask, bias)
        x = put(call, "resid_mid", self.attn_norm(x + put(call, "attn_out", attended)))  # (B, T, D)
        ffn = put(call, "ffn_out", self.down(self.activation(self.up(x))))
        return put(call, "resid_out", self.ffn_norm(x + ffn)), result


class BertModel(nn.Module):
    """A BERT-like encoder; ``forward`` matches :class:`~core.model.transformer.Transformer`'s.

    Its ``logits`` are what ``config.head`` says: the last hidden states (B, T, D) for ``hidden``
    (:func:`core.inspect.heads.pool` turns them into one vector per input), vocabulary scores
    (B, T, V) for ``masked_lm``, class scores (B, C) for ``classes`` or (B, T, C) for
    ``token_classes``. :meth:`encode` always gives the hidden states.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = BertEmbeddings(c)
        self.layers = nn.ModuleList(BertLayer(c) for _ in range(c.distinct_layers))
        self.relative = (RelativeBias(c.relative_buckets, c.relative_max_distance, c.n_heads, bidirectional=True)
                         if c.relative_buckets else None)
        self.head = build_head(c.head, c.d_model, c.vocab_size, c.norm_eps)

    def _check_ids(self, ids: Tensor) -> None:
        check_ids(ids, self.config.max_len, self.config.vocab_size)

    def _head_mask(self, controls: AttentionControls) -> Tensor | None:
        return single_stack_head_mask(controls, "encoder", self.config.n_encoder_layers, self.config.n_heads,
                                      "an encoder-only model")

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, token_types: Tensor | None = None,
               recorder: Recorder | None = None) -> tuple[Tensor, list]:
        """Last hidden states (B, T, D) and per-layer attention results.

        Args:
            key_mask: (B, T) bool, ``False`` on padding; default: ids equal to ``pad_id``.
            token_types: (B, T) segment ids (default: all 0, one sentence).
            recorder: collects the pass's trace (:mod:`core.model.trace`) under ``encoder.…``.
        """
        self._check_ids(src)
        c, length = self.config, src.size(1)
        real = src != c.pad_id if key_mask is None else key_mask  # (B, T)
        mask = real[:, None, None, :] if controls.padding else None  # (B, 1, 1, T): keys only
        if c.causal and controls.causal:
            look_back = torch.ones(length, length, dtype=torch.bool, device=src.device).tril()  # (T, T)
            mask = look_back if mask is None else mask & look_back  # (B, 1, T, T)
        call = HeadCall(controls.temperature, controls.hard, need_weights, site=stack_site(recorder, "encoder"))
        heads = self._head_mask(controls)
        x, results = put(call, "embed", self.embed(src, token_types)), []  # (B, T, D)
        bias = None if self.relative is None else self.relative(0, length, length, src.device)  # (1, H, T, T)
        for i in range(c.n_encoder_layers):
            layer = self.layers[i * c.distinct_layers // c.n_encoder_layers]  # ALBERT: layers share weights
            x, result = layer(x, mask, at_layer(call, i), None if heads is None else heads[i], bias)
            results.append(result)
        return put(call, "final", x), results

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None, record: list[str] | None = None,
    ) -> ModelOutput:
        """The head's logits for ``src`` (B, T) (see the class); maps under ``"encoder"`` on request.

        The causal control applies only to a causal model (``config.causal``: a BERT saved with
        ``is_decoder``); ``tgt`` and ``targets`` must be None; ``record`` names the trace's parts to keep.
        """
        if src is None or tgt is not None or targets is not None:
            raise ValueError("an encoder-only model takes src ids only")
        recorder = recorder_of(record)
        hidden, results = self.encode(src, controls, return_attention or return_scores, key_mask, recorder=recorder)
        return stacked_output(hidden if self.head is None else self.head(hidden), {"encoder": results},
                              return_attention, return_scores, recorder)
