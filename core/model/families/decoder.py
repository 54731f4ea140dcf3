"""What every pretrained decoder-only family shares: the config's contract answers, the self-attention
sublayer, the mask, and the model-contract methods (``decode``, ``forward``, ``next_token_logits``)
around a family's own embeddings and blocks.

The families (:mod:`~core.model.families.llama` for Llama, Mistral, Qwen2/3 and Gemma;
:mod:`~core.model.families.gpt` for GPT-2, GPT-NeoX, OPT and Phi) differ in their blocks; the
attention is the same computation everywhere: projections (with or without biases), optional
per-head normalisation of queries and keys (Qwen3), rotary positions on all or the first r
dimensions of a head, then :func:`~core.model.families.grouped.grouped_attention`.

Glossary: B batch, T length, H query heads, Hkv key/value heads, dk head width, D model width, V vocabulary.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.contract import AttentionControls, FamilySpec, ModelOutput, check_ids, single_stack_head_mask
from core.model.families.grouped import HeadCall, grouped_attention, kv_head_of, stacked_output
from core.model.families.rope import rotate_partial
from core.model.kv_cache import AttentionCache, KVCache
from core.model.masks import combine_masks
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site

#: Feed-forward activations by their Hugging Face names.
ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_fast": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
}


class DecoderSpec(FamilySpec):
    """Mixin for a decoder-only family's config: the contract's answers, plus grouped key/value heads
    (from its ``n_heads`` and ``n_kv_heads`` fields) and no ids barred from decoding."""

    architecture = "decoder"

    @property
    def kv_heads(self) -> int:
        """Key/value heads (as many as query heads unless the model groups them)."""
        return self.n_kv_heads or self.n_heads

    @property
    def never_generated(self) -> tuple[int, ...]:
        """Ids decoding must not produce: none, the model's distribution is used as it is."""
        return ()

    @property
    def kv_head_of(self) -> list[int]:
        """For each query head, the key/value head it shares."""
        return kv_head_of(self.n_heads, self.kv_heads)


class DecoderAttention(nn.Module):
    """Grouped-query self-attention: q/k/v/o projections, optional q/k norms, (partial) rotary positions.

    ``scale`` (default 1/√dk) and ``softcap`` are :func:`~core.model.families.grouped.grouped_attention`'s;
    ``qk_norm`` builds each norm as ``qk_norm(head_dim, norm_eps)``.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int, *, qkv_bias: bool = False,
                 out_bias: bool = False, qk_norm: Callable[[int, float], nn.Module] | None = None,
                 norm_eps: float = 1e-6, scale: float | None = None, softcap: float | None = None) -> None:
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, head_dim
        self.scale, self.softcap = scale, softcap
        self.q_proj = nn.Linear(d_model, n_heads * head_dim, bias=qkv_bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=qkv_bias)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model, bias=out_bias)
        self.q_norm = qk_norm(head_dim, norm_eps) if qk_norm is not None else None
        self.k_norm = qk_norm(head_dim, norm_eps) if qk_norm is not None else None

    def _heads(self, projected: Tensor, count: int, norm: nn.Module | None = None) -> Tensor:
        batch, length, _ = projected.shape
        x = projected.view(batch, length, count, self.head_dim)  # (B, T, H, dk)
        if norm is not None:
            x = norm(x)
        return x.transpose(1, 2)  # (B, H, T, dk)

    def forward(self, x: Tensor, rotary: tuple[Tensor, Tensor] | None, mask: Tensor | None, call: HeadCall,
                head_mask: Tensor | None, cache: AttentionCache | None = None):
        """(output (B, T, D), the :class:`AttentionResult`) for x (B, T, D); ``rotary`` (T, r) tables or None.

        With a ``cache`` the keys and values of x's positions are appended to those of the earlier
        ones, and x's queries attend over all of them.
        """
        q = self._heads(self.q_proj(x), self.n_heads, self.q_norm)  # (B, H, T, dk)
        k = self._heads(self.k_proj(x), self.n_kv_heads, self.k_norm)  # (B, Hkv, T, dk)
        v = self._heads(self.v_proj(x), self.n_kv_heads)  # (B, Hkv, T, dk)
        if rotary is not None:
            q, k = rotate_partial(q, *rotary), rotate_partial(k, *rotary)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, Hkv, start + T, dk)
        result = grouped_attention(q, k, v, mask, call, head_mask, scale=self.scale, softcap=self.softcap)
        return self.o_proj(result.output), result  # (B, T, D)


def decoder_mask(length: int, controls: AttentionControls, key_mask: Tensor | None, window: int | None,
                 device: torch.device, start: int = 0) -> Tensor | None:
    """The bool mask (B|1, 1, T, start + T), ``True`` = may attend: causal, a sliding window, padding.

    Rows are the positions start … start + T − 1 (``start`` > 0 after a KV cache's earlier steps),
    columns every position from 0.

    Args:
        key_mask: (B, T) bool, ``False`` on padding (used while ``controls.padding``).
        window: with a sliding window (Mistral), query i sees only keys j with i − j < window.
    """
    queries = torch.arange(start, start + length, device=device)[:, None]  # (T, 1)
    keys = torch.arange(start + length, device=device)[None, :]  # (1, start + T)
    causal = keys <= queries if controls.causal else None  # (T, start + T)
    band = (queries - keys) < min(window, start + length) if window is not None else None  # a wider one: no band
    pad = key_mask[:, None, None, :] if key_mask is not None and controls.padding else None  # (B, 1, 1, T)
    return combine_masks(causal, band, pad)


class DecoderLM(nn.Module):
    """The model contract of a decoder-only language model, around the family's embeddings and blocks.

    Subclasses set ``config`` (with ``max_len``, ``vocab_size``, ``n_decoder_layers``, ``n_heads`` and
    optionally ``sliding_window``), ``embed``, ``layers``, ``norm`` (None: no final norm), ``lm_head``
    (:meth:`_output_head`) and ``_embed(tgt, start) -> (x (B, T, D), rotary (cos, sin) or None)``.
    """

    def _begin(self, ids: Tensor, cache: KVCache | None) -> int:
        """Check ``ids`` (B, T) and return the position of their first token (what ``cache`` holds before them)."""
        check_ids(ids, self.config.max_len, self.config.vocab_size)
        if cache is None:
            return 0
        start = cache.length
        if start + ids.size(1) > self.config.max_len:
            raise ValueError(f"sequence of {start + ids.size(1)} tokens exceeds max_len {self.config.max_len}")
        cache.extend_ids(ids)
        return start

    def kv_cache(self) -> KVCache:
        """A fresh key/value cache for ONE decoding call (never stored on the model)."""
        return KVCache(self.config.n_decoder_layers)

    def unembed(self, resid: Tensor) -> Tensor:
        """Logits (…, V) of a residual stream (…, D): the final norm (when there is one), then the output layer
        (and its softcap, :meth:`logits`)."""
        return self.logits(resid if self.norm is None else self.norm(resid))

    def _head_mask(self, controls: AttentionControls) -> Tensor | None:
        return single_stack_head_mask(controls, "decoder", self.config.n_decoder_layers, self.config.n_heads,
                                      "a decoder-only model")

    def _output_head(self, bias: bool) -> None:
        """Set ``lm_head`` (D → V), its weight tied to ``embed``'s when the config says so."""
        c = self.config
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=bias)
        if c.tie_embeddings:
            self.lm_head.weight = self.embed.weight

    def _layer_windows(self) -> tuple[int | None, ...]:
        """Each layer's sliding window (None: the whole causal past): the config's ``sliding_window``
        in every layer, unless the config lists one per layer (``layer_windows``: Gemma 2/3)."""
        per_layer = getattr(self.config, "layer_windows", None)
        if per_layer is not None:
            return tuple(per_layer)
        return (getattr(self.config, "sliding_window", None),) * self.config.n_decoder_layers

    def logits(self, hidden: Tensor) -> Tensor:
        """Next-token scores (..., V) of hidden states (..., D), float32 whatever the weights' dtype: ``lm_head``,
        then the final logit softcap c · tanh(z / c) when the config has one (``final_softcap``: Gemma 2)."""
        scores = self.lm_head(hidden)
        cap = getattr(self.config, "final_softcap", None)
        return (scores if cap is None else torch.tanh(scores / cap) * cap).float()

    def decode(self, tgt: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               key_mask: Tensor | None = None, cache: KVCache | None = None,
               recorder: Recorder | None = None) -> tuple[Tensor, list]:
        """Hidden states (B, T, D) after the final norm, and per-layer attention results.

        Args:
            key_mask: (B, T) bool, ``False`` on right-padding (used while ``controls.padding``).
            cache: with a KV cache (causal decoding), ``tgt`` holds only the positions after those it has seen.
            recorder: collects the pass's trace (:mod:`core.model.trace`) under ``decoder.…``.
        """
        start = self._begin(tgt, cache)
        windows = self._layer_windows()
        padded = key_mask is not None and controls.padding
        if padded and not torch.compiler.is_compiling():  # reading the mask back would break a compiled graph
            padded = not bool(key_mask.all())
        causal = controls.causal and all(w is None for w in windows) and not padded and start == 0
        masks = {} if causal else {w: decoder_mask(tgt.size(1), controls, key_mask if padded else None, w,
                                                   tgt.device, start) for w in set(windows)}
        x, rotary = self._embed(tgt, start)  # (B, T, D), (T, r) tables or None
        call = HeadCall(controls.temperature, controls.hard, need_weights, causal, stack_site(recorder, "decoder"))
        put(call, "embed", x)
        heads = self._head_mask(controls)  # (L, H) or None
        results = []
        for i, layer in enumerate(self.layers):
            x, result = layer(x, rotary, masks.get(windows[i]), at_layer(call, i), None if heads is None else heads[i],
                              None if cache is None else cache.layers[i][0])
            results.append(result)
        return put(call, "final", x if self.norm is None else self.norm(x)), results  # (B, T, D), L results

    def forward(
        self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
        controls: AttentionControls = AttentionControls(), return_attention: bool = False,
        return_scores: bool = False, key_mask: Tensor | None = None, record: list[str] | None = None,
    ) -> ModelOutput:
        """Next-token logits (B, T, V) for ``tgt`` (B, T); maps under ``"decoder"`` on request.

        ``src`` must be None (there is no encoder); ``targets`` (B, T) gives the mean
        cross-entropy, ignoring positions where ``key_mask`` is False; ``record`` names the trace's parts to keep.
        """
        if src is not None or tgt is None:
            raise ValueError("a decoder-only model takes tgt ids and no src")
        recorder = recorder_of(record)
        hidden, results = self.decode(tgt, controls, return_attention or return_scores, key_mask, recorder=recorder)
        logits = self.logits(hidden)  # (B, T, V)
        loss = None
        if targets is not None:
            ignore = targets if key_mask is None else targets.masked_fill(~key_mask, -100)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ignore.reshape(-1))
        return stacked_output(logits, {"decoder": results}, return_attention, return_scores, recorder, loss)

    def next_token_logits(self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
                          controls: AttentionControls = AttentionControls(), cache: KVCache | None = None) -> Tensor:
        """Scores (B, V) for the token after ``tgt`` (B, T) (``memory`` is unused: no encoder).

        Pass the same :meth:`kv_cache` with the growing ``tgt`` at every step of one decoding call:
        only the ids it has not seen run. Without the causal mask the whole prefix runs.
        """
        if cache is not None and controls.causal:
            hidden, _ = self.decode(tgt[:, cache.length :], controls, cache=cache)
        else:
            hidden, _ = self.decode(tgt, controls)
        return self.logits(hidden[:, -1])  # (B, V)
