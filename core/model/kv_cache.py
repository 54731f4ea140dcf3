"""Incremental decoding: every decoder layer's keys and values kept between steps (a KV cache).

Greedy and sampled decoding ask for the next token once per step. Without a cache each step
re-runs the decoder over the whole prefix, O(T²) work for T tokens; with one a step projects
only the new token(s) and attends over the stored keys and values. Under the causal mask an
earlier position never sees a later one, so the logits are the same; the cross-attention keys
and values of the encoder memory are projected once, on the first step.

A cache belongs to ONE decoding call (a local variable of the loop), never to the model:
the model is shared by every session and thread.
"""

from __future__ import annotations

import torch
from torch import Tensor


class AttentionCache:
    """One attention sublayer's keys and values, (B, H, T, dk) each.

    Self-attention appends the new positions every step; cross-attention stores the encoder
    memory's projections once (``fixed``) and reuses them.
    """

    def __init__(self) -> None:
        self.keys: Tensor | None = None  # (B, H, capacity, dk), the first ``length`` positions valid
        self.values: Tensor | None = None
        self.length = 0

    def store(self, keys: Tensor, values: Tensor) -> None:
        """Keep fixed keys and values (B, H, Tk, dk) (the encoder memory's)."""
        self.keys, self.values, self.length = keys, values, keys.size(2)

    def fixed(self) -> tuple[Tensor, Tensor] | None:
        """The stored keys and values, or None before the first :meth:`store`."""
        return None if self.keys is None else (self.keys, self.values)

    def append(self, keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
        """Add the new positions (B, H, n, dk); return every position so far (B, H, T, dk)."""
        batch, heads, new, width = keys.shape
        end = self.length + new
        if self.keys is None or end > self.keys.size(2):
            capacity = max(16, 2 * end)  # doubling: amortised O(1) copies per step
            grown_k, grown_v = keys.new_empty(batch, heads, capacity, width), values.new_empty(
                batch, heads, capacity, values.size(-1))
            if self.keys is not None:
                grown_k[:, :, : self.length] = self.keys[:, :, : self.length]
                grown_v[:, :, : self.length] = self.values[:, :, : self.length]
            self.keys, self.values = grown_k, grown_v
        self.keys[:, :, self.length : end] = keys
        self.values[:, :, self.length : end] = values
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]


class KVCache:
    """What a decoding loop keeps between steps: per decoder layer a self-attention and a
    cross-attention :class:`AttentionCache`, and the ids seen so far (B, T) for the padding mask.

    Pass the same cache with the growing sequence to ``Transformer.next_token_logits``; it
    feeds the decoder only the ids the cache has not seen yet.
    """

    def __init__(self, n_layers: int) -> None:
        self.layers = [(AttentionCache(), AttentionCache()) for _ in range(n_layers)]
        self.ids: Tensor | None = None  # (B, T)
        self.positions: Tensor | None = None  # (1, max_len, D): the positional table, built on the first step

    def add_positions(self, positional: torch.nn.Module, x: Tensor, start: int, max_len: int) -> Tensor:
        """``x`` (B, n, D) with the positional encoding of positions start … start + n − 1 added,
        from a table of every position built once per decoding call (not once per step)."""
        if self.positions is None:
            self.positions = positions_from(positional, x.new_zeros(1, max_len, x.size(2)), 0)  # (1, max_len, D)
        return x + self.positions[:, start : start + x.size(1)]  # (B, n, D)

    @property
    def length(self) -> int:
        """How many positions the cache holds."""
        return 0 if self.ids is None else self.ids.size(1)

    def reorder(self, rows: Tensor) -> None:
        """Keep, as row i, what row ``rows[i]`` (B,) held: beam search continues some hypotheses twice
        and drops others. The cross-attention memory is shared by a source's beams, so it stays."""
        for self_cache, _ in self.layers:
            if self_cache.keys is not None:
                self_cache.keys, self_cache.values = self_cache.keys[rows], self_cache.values[rows]
        self.ids = None if self.ids is None else self.ids[rows]

    def extend_ids(self, new: Tensor) -> Tensor:
        """Record the new ids (B, n); return every id so far (B, T)."""
        self.ids = new if self.ids is None else torch.cat([self.ids, new], dim=1)
        return self.ids


def positions_from(positional: torch.nn.Module, x: Tensor, start: int) -> Tensor:
    """``x`` (B, n, D) with the positional encoding of positions start … start + n − 1 added.

    The positional modules add a per-position table to (B, T, D) from position 0; running one on
    zeros of the full length and keeping the last n rows gives exactly that table's rows
    (0 + PE = PE) without reaching into its internals.
    """
    if start == 0:
        return positional(x)
    table = positional(x.new_zeros(1, start + x.size(1), x.size(2)))[:, start:]  # (1, n, D)
    return x + table  # (B, n, D)


def decoding_step(model, tgt: Tensor, memory: Tensor | None, memory_mask: Tensor | None, controls,
                  cache: KVCache | None) -> Tensor:
    """Scores (B, V) for the token after ``tgt`` (B, T) of an encoder-decoder's ``decode``/``lm_head``: with a
    ``cache`` (causal only) just the ids it has not seen run; without one, or without the causal mask (the
    cache cannot be exact then), the whole prefix runs."""
    if cache is not None and controls.causal:
        hidden, _, _ = model.decode(tgt[:, cache.length :], memory, memory_mask, controls, cache=cache)
    else:
        hidden, _, _ = model.decode(tgt, memory, memory_mask, controls)
    return model.lm_head(hidden[:, -1])  # (B, V)
