"""How text becomes model input, one definition for training, evaluation and ``explain``.

* encoder input (source): the text's tokens, no specials, at most ``max_len``;
* decoder sequence: ``<bos>`` tokens ``<eos>``; the decoder reads it without the last
  token and is trained to predict it shifted by one;
* a batch: id lists right-padded into one (B, T) tensor.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from core.text.tokenizer import BOS_ID, EOS_ID, Encoding, Tokenizer


def truncate(encoding: Encoding, limit: int) -> tuple[Encoding, bool]:
    """Keep the first ``limit`` tokens; also say whether anything was cut."""
    if len(encoding) <= limit:
        return encoding, False
    return Encoding(encoding.ids[:limit], encoding.tokens[:limit], encoding.offsets[:limit]), True


def source_encoding(tokenizer: Tokenizer, text: str, max_len: int) -> tuple[Encoding, bool]:
    """Encoder input for ``text``: its tokens, at most ``max_len``."""
    return truncate(tokenizer.encode(text), max_len)


def decoder_sequence(tokenizer: Tokenizer, text: str, max_len: int) -> list[int]:
    """``<bos>`` + tokens + ``<eos>``, cut so the decoder input (all but the last) fits ``max_len``."""
    ids = tokenizer.encode(text).ids[: max_len - 1]
    return [BOS_ID, *ids, EOS_ID]


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device | str = "cpu") -> Tensor:
    """Right-pad id lists into a (B, T) int64 tensor."""
    width = max(len(r) for r in rows)
    batch = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        batch[i, : len(row)] = torch.as_tensor(list(row), dtype=torch.long)
    return batch.to(device)
