"""BART and mBART: learned absolute positions (offset by 2), a norm on the embeddings.

BART is post-norm like the paper, with ``layernorm_embedding`` after token + position embeddings;
mBART moves every norm before its sublayer and adds a final norm to each stack. Both read the
position table two rows on (``position + 2``: fairseq reserved the first rows), add a
``final_logits_bias`` to the tied head's logits and may force the first generated token
(``forced_bos_token_id``: ``<s>`` for BART, the target language code for mBART). The shared layers
are :mod:`core.model.families.seq2seq_layers`, the model :mod:`core.model.families.seq2seq`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from core.model.families.grouped import embedding

POSITION_OFFSET = 2  # fairseq's first two rows of the position table are never read


class LearnedPositions(nn.Module):
    """A learned (max_len + 2, D) position table read from row ``position + 2``."""

    def __init__(self, max_len: int, width: int) -> None:
        super().__init__()
        self.table = embedding(max_len + POSITION_OFFSET, width)

    def forward(self, start: int, length: int, device: torch.device) -> Tensor:
        """(T, D) embeddings of positions start … start + T − 1."""
        first = start + POSITION_OFFSET
        return self.table.weight[first : first + length]
