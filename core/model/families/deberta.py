"""DeBERTa-v2 and DeBERTa-v3: BERT's post-norm encoder with disentangled attention, every map returned.

Each layer's score of query i for key j is the sum of three parts, each divided by √(dk · (1 + parts
with positions)):

* content → content: q_i · k_j (as in BERT);
* content → position (``c2p``): q_i · K_r[δ(i, j)], the query against the key projection of the
  relative-position embedding of δ(i, j), the bucketed distance i − j;
* position → content (``p2c``): k_j · Q_r[−δ(j, i)], the key against the query projection of the
  relative-position embedding of the opposite distance.

K_r and Q_r project one (2·span, D) table of relative-position embeddings (normalised when the
config says ``norm_rel_ebd``) with the layer's own key and query projections (``share_att_key``,
DeBERTa-v3) or with separate ``pos_key``/``pos_query`` projections; distances beyond ±span/2 fall
into logarithmic buckets (``position_buckets``). The position parts are an additive bias of
:func:`~core.model.families.grouped.grouped_attention`, so the softmax, masks, β, hard attention and
knocked-out heads are the shared ones. v3 drops absolute positions from the input
(``position_biased_input``).

With ``return_scores`` the parts come back too, in :attr:`ModelOutput.scores` under
``"encoder/c2c"``, ``"encoder/c2p"`` and ``"encoder/p2c"`` (each (L, B, H, T, T), times β like the
scores, so that they sum to ``scores["encoder"]``).

Glossary: B batch, T length, L layers, H heads, dk head width, D model width, E embedding width,
S = 2·span relative-position rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from core.model.contract import AttentionControls, FamilySpec, ModelOutput, check_ids, single_stack_head_mask
from core.model.families.bert import BertAttention, BertLayer
from core.model.families.encoder_heads import ACTIVATIONS, HeadConfig, build_head
from core.model.families.grouped import HeadCall, embedding, grouped_attention, stacked_output
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site

#: The parts of a score a DeBERTa model returns beside its scores, by key suffix.
SCORE_PARTS = ("c2c", "c2p", "p2c")


@dataclass(frozen=True)
class DebertaConfig(FamilySpec):
    """Sizes and constants of a DeBERTa-v2/v3 encoder (JSON round trip with ``asdict``).

    Attributes:
        embedding_size: E, projected to D without a bias (0: embed at D).
        position_biased_input: absolute position embeddings added to the input (v2; not v3).
        span: relative distances the table holds on each side (``position_buckets`` or
            ``max_relative_positions``); 0: no relative attention (c2p and p2c off).
        position_buckets: > 0: distances beyond span/2 bucketed logarithmically up to ``max_relative_positions``.
        c2p / p2c: which position parts the score has.
        share_att_key: the position parts use the layer's query/key projections (v3).
        norm_rel_embeddings: the relative-position table is layer-normalised before use.
    """

    vocab_size: int
    d_model: int
    n_encoder_layers: int
    n_heads: int
    d_ff: int
    max_len: int = 512
    type_vocab_size: int = 0
    norm_eps: float = 1e-7
    activation: str = "gelu"
    pad_id: int = 0
    embedding_size: int = 0
    position_biased_input: bool = True
    span: int = 0
    position_buckets: int = 0
    max_relative_positions: int = 512
    c2p: bool = False
    p2c: bool = False
    share_att_key: bool = False
    norm_rel_embeddings: bool = False
    head: HeadConfig = HeadConfig()

    architecture = "encoder"

    def __post_init__(self) -> None:
        if isinstance(self.head, dict):  # from a JSON round trip
            object.__setattr__(self, "head", HeadConfig(**self.head))
        self.check_sizes("vocab_size", "d_model", "n_encoder_layers", "n_heads", "d_ff", "max_len")
        for name in ("type_vocab_size", "embedding_size", "span", "position_buckets"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be at least 0, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if (self.c2p or self.p2c) and not self.span:
            raise ValueError("c2p and p2c need relative attention (a span of at least 1)")
        buckets = self.position_buckets
        if buckets and (buckets < 4 or self.max_relative_positions <= buckets // 2):
            raise ValueError(f"position_buckets {self.position_buckets} needs at least 4 buckets and "
                             f"max_relative_positions above half of them, got {self.max_relative_positions}")
        self.check_pad_id()
        self.check_positive("norm_eps")

    @property
    def score_factor(self) -> int:
        """How many parts the score has (1 + c2p + p2c): the scores are divided by √(dk · this)."""
        return 1 + int(self.c2p) + int(self.p2c)


def log_bucket(relative: Tensor, buckets: int, max_position: int) -> Tensor:
    """DeBERTa's bucket (same shape, int64) of each distance: exact within ±buckets/2, logarithmic beyond,
    up to ``max_position``; as ``transformers`` computes it (``make_log_bucket_position``)."""
    sign = torch.sign(relative)
    mid = buckets // 2
    inside = (relative < mid) & (relative > -mid)
    absolute = torch.where(inside, torch.tensor(mid - 1).type_as(relative), torch.abs(relative))
    log_position = torch.ceil(torch.log(absolute / mid) / torch.log(torch.tensor((max_position - 1) / mid))
                              * (mid - 1)) + mid
    return torch.where(absolute <= mid, relative.type_as(log_position), log_position * sign).long()


def relative_positions(length: int, c: DebertaConfig, device: torch.device) -> Tensor:
    """δ (T, T) int64: the (bucketed) distance i − j of query i to key j."""
    positions = torch.arange(length, device=device)
    distance = positions[:, None] - positions[None, :]  # (T, T)
    return log_bucket(distance, c.position_buckets, c.max_relative_positions) if c.position_buckets else distance


class DisentangledAttention(BertAttention):
    """BERT's projections plus (unless ``share_att_key``) ``pos_key``/``pos_query``; the score parts as a bias."""

    def __init__(self, c: DebertaConfig) -> None:
        super().__init__(c)
        self.c, self.scale = c, 1.0 / math.sqrt(c.head_dim * c.score_factor)
        shared = c.share_att_key or not c.span
        self.pos_key = nn.Linear(c.d_model, c.d_model) if c.c2p and not shared else None
        self.pos_query = nn.Linear(c.d_model, c.d_model) if c.p2c and not shared else None

    def _table(self, projection: nn.Linear, rel: Tensor) -> Tensor:
        """One projection of the relative-position table (S, D) split into heads: (H, S, dk)."""
        return projection(rel).view(rel.size(0), self.n_heads, self.head_dim).transpose(0, 1)

    def position_parts(self, q: Tensor, k: Tensor, delta: Tensor, rel: Tensor) -> dict[str, Tensor]:
        """c2p and p2c (B, H, T, T) float32, already scaled, for queries/keys (B, H, T, dk)."""
        span, parts = self.c.span, {}
        if self.c.c2p:
            pos_key = self._table(self.key if self.pos_key is None else self.pos_key, rel)  # (H, S, dk)
            index = torch.clamp(delta + span, 0, 2 * span - 1)  # (T, T)
            full = q @ pos_key.transpose(-1, -2)  # (B, H, T, S)
            parts["c2p"] = torch.gather(full, -1, index.expand(*full.shape[:2], -1, -1)).float() * self.scale
        if self.c.p2c:
            pos_query = self._table(self.query if self.pos_query is None else self.pos_query, rel)  # (H, S, dk)
            index = torch.clamp(-delta + span, 0, 2 * span - 1)  # (Tk, Tq): row j, column i
            full = k @ pos_query.transpose(-1, -2)  # (B, H, Tk, S)
            gathered = torch.gather(full, -1, index.expand(*full.shape[:2], -1, -1))  # (B, H, Tk, Tq)
            parts["p2c"] = gathered.transpose(-1, -2).float() * self.scale  # (B, H, Tq, Tk)
        return parts

    def forward(self, x: Tensor, mask: Tensor | None, call: HeadCall, head_mask: Tensor | None,
                relative: tuple[Tensor, Tensor] | None = None):
        """(output (B, T, D), the result, the score parts or None); ``relative`` = (δ (T, T), table (S, D))."""
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))  # (B, H, T, dk)
        parts = self.position_parts(q, k, *relative) if relative is not None else {}
        bias = sum(parts.values()) if parts else None  # (B, H, T, T)
        result = grouped_attention(q, k, v, mask, call, head_mask, scale=self.scale, bias=bias)
        if not call.need_weights:
            return self.out(result.output), result, None
        parts["c2c"] = (q @ k.transpose(-1, -2)).float() * self.scale
        return self.out(result.output), result, {name: p * call.temperature for name, p in parts.items()}


class DebertaLayer(BertLayer):
    """BERT's post-norm layer around disentangled attention."""

    def __init__(self, c: DebertaConfig) -> None:
        super().__init__(c, DisentangledAttention(c))

    def forward(self, x, mask, call, head_mask, relative=None):
        attended, result, parts = self.attn(x, mask, call, head_mask, relative)
        x = put(call, "resid_mid", self.attn_norm(x + put(call, "attn_out", attended)))  # (B, T, D)
        ffn = put(call, "ffn_out", self.down(self.activation(self.up(x))))
        return put(call, "resid_out", self.ffn_norm(x + ffn)), result, parts


class DebertaEmbeddings(nn.Module):
    """token (+ position) (+ token type) in E, projected to D without a bias, LayerNorm, padding zeroed."""

    def __init__(self, c: DebertaConfig) -> None:
        super().__init__()
        width = c.embedding_size or c.d_model
        self.word = embedding(c.vocab_size, width)
        self.position = embedding(c.max_len, width) if c.position_biased_input else None
        self.token_type = embedding(c.type_vocab_size, width) if c.type_vocab_size else None
        self.project = nn.Linear(width, c.d_model, bias=False) if width != c.d_model else None
        self.norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)

    def forward(self, ids: Tensor, token_types: Tensor | None, real: Tensor) -> Tensor:
        x = self.word(ids)  # (B, T, E)
        if self.position is not None:
            x = x + self.position(torch.arange(ids.size(1), device=ids.device))
        if self.token_type is not None:
            x = x + self.token_type(torch.zeros_like(ids) if token_types is None else token_types)
        if self.project is not None:
            x = self.project(x)  # (B, T, D)
        return self.norm(x) * real[..., None].to(x.dtype)  # padding positions zeroed, as DeBERTa does


class DebertaModel(nn.Module):
    """A DeBERTa-v2/v3 encoder; ``forward`` matches :class:`~core.model.families.bert.BertModel`'s, its
    ``logits`` what ``config.head`` says (the hidden states without a head)."""

    def __init__(self, config: DebertaConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = DebertaEmbeddings(c)
        self.layers = nn.ModuleList(DebertaLayer(c) for _ in range(c.n_encoder_layers))
        self.rel_embeddings = embedding(2 * c.span, c.d_model) if c.span else None
        self.rel_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps) if c.span and c.norm_rel_embeddings else None
        self.head = build_head(c.head, c.d_model, c.vocab_size, c.norm_eps)

    def _relative(self, length: int, device: torch.device) -> tuple[Tensor, Tensor] | None:
        """(δ (T, T), the relative-position table (S, D), normalised when the config says so), or None."""
        if self.rel_embeddings is None:
            return None
        table = self.rel_embeddings.weight  # (S, D)
        return relative_positions(length, self.config, device), table if self.rel_norm is None else self.rel_norm(table)

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, token_types: Tensor | None = None,
               recorder: Recorder | None = None) -> tuple[Tensor, list, list]:
        """Last hidden states (B, T, D), per-layer attention results and score parts (None unless ``need_weights``).

        Args:
            key_mask: (B, T) bool, ``False`` on padding; default: ids equal to ``pad_id``.
            recorder: collects the pass's trace (:mod:`core.model.trace`) under ``encoder.…``; a layer's ``bias``
                is its c2p + p2c.
        """
        c = self.config
        check_ids(src, c.max_len, c.vocab_size)
        real = src != c.pad_id if key_mask is None else key_mask  # (B, T)
        mask = real[:, None, None, :] if controls.padding else None  # (B, 1, 1, T): keys only
        call = HeadCall(controls.temperature, controls.hard, need_weights, site=stack_site(recorder, "encoder"))
        heads = single_stack_head_mask(controls, "encoder", c.n_encoder_layers, c.n_heads, "an encoder-only model")
        relative = self._relative(src.size(1), src.device)
        x, results, parts = put(call, "embed", self.embed(src, token_types, real)), [], []  # (B, T, D)
        for i, layer in enumerate(self.layers):
            x, result, layer_parts = layer(x, mask, at_layer(call, i), None if heads is None else heads[i], relative)
            results.append(result)
            parts.append(layer_parts)
        return put(call, "final", x), results, parts

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None, record: list[str] | None = None,
    ) -> ModelOutput:
        """The head's logits for ``src`` (B, T); maps under ``"encoder"`` on request, and with the scores
        their parts under ``"encoder/c2c"``, ``"encoder/c2p"``, ``"encoder/p2c"`` (the ones the config has);
        ``record`` names the trace's parts to keep."""
        if src is None or tgt is not None or targets is not None:
            raise ValueError("an encoder-only model takes src ids only")
        recorder = recorder_of(record)
        hidden, results, parts = self.encode(src, controls, return_attention or return_scores, key_mask,
                                             recorder=recorder)
        output = stacked_output(hidden if self.head is None else self.head(hidden), {"encoder": results},
                                return_attention, return_scores, recorder)
        if return_scores:
            output.scores.update({f"encoder/{name}": torch.stack([p[name] for p in parts])
                                  for name in SCORE_PARTS if name in parts[0]})  # (L, B, H, T, T) each
        return output
