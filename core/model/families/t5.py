"""T5: relative position buckets instead of position embeddings.

The first layer of each stack owns a table (buckets, H) of learned biases; the bias of a query at
position i for a key at position j depends only on the bucket of j − i: exact for small distances,
logarithmic up to ``max_distance`` (the encoder's buckets tell left from right, the decoder's only
look back). That one bias is added to the unscaled scores (no 1/√dk) of every layer's
self-attention; cross-attention has none. Norms are RMSNorm without mean or bias, before each
sublayer; the feed-forward is ReLU (t5-small) or gated GELU (v1.1); with a tied head the last
hidden states are scaled by D^-0.5. The shared layers are :mod:`core.model.families.seq2seq_layers`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from core.model.families.grouped import embedding


def relative_bucket(relative: Tensor, bidirectional: bool, buckets: int, max_distance: int) -> Tensor:
    """The bucket (same shape, int64) of each key-minus-query distance in ``relative``, as T5 computes it."""
    result = torch.zeros_like(relative)
    if bidirectional:
        buckets //= 2
        result += (relative > 0).long() * buckets
        relative = relative.abs()
    else:
        relative = -torch.clamp(relative, max=0)
    exact = buckets // 2
    small = relative < exact
    large = exact + (torch.log(relative.float() / exact) / math.log(max_distance / exact)
                     * (buckets - exact)).long()
    large = torch.clamp(large, max=buckets - 1)
    return result + torch.where(small, relative, large)


class RelativeBias(nn.Module):
    """The (buckets, H) bias table of one stack and the (1, H, Tq, Tk) bias it gives."""

    def __init__(self, buckets: int, max_distance: int, n_heads: int, bidirectional: bool) -> None:
        super().__init__()
        self.buckets, self.max_distance, self.bidirectional = buckets, max_distance, bidirectional
        self.table = embedding(buckets, n_heads)

    def forward(self, query_start: int, queries: int, keys: int, device: torch.device) -> Tensor:
        """Bias (1, H, Tq, Tk) of queries at positions query_start … and keys at 0 … Tk − 1."""
        context = torch.arange(query_start, query_start + queries, device=device)[:, None]  # (Tq, 1)
        memory = torch.arange(keys, device=device)[None, :]  # (1, Tk)
        bucket = relative_bucket(memory - context, self.bidirectional, self.buckets, self.max_distance)
        return self.table(bucket).permute(2, 0, 1).unsqueeze(0)  # (1, H, Tq, Tk)
