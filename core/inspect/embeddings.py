"""What a model adds before its first layer: token embedding tables, the positional table, the scale.

The Positional-encoding page shows a loaded model's own numbers; this module reads them
through the model's modules so no caller needs to know the state-dict keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from core.io.checkpoint import Checkpoint
from core.text.tokenizer import Tokenizer


@dataclass(frozen=True)
class Embeddings:
    """A model's embedding tables as float32 numpy arrays (pure data).

    Attributes:
        source: (V_src, D) encoder token embeddings, or None without an encoder.
        source_tokens: the V_src token strings labelling ``source``'s rows.
        target: (V_tgt, D) decoder token embeddings, or None without a decoder.
        target_tokens: the V_tgt token strings labelling ``target``'s rows.
        positional: (max_len, D) the table added at each position (zeros when ``positional_kind`` is "none").
        positional_kind: "sinusoidal", "learned" or "none".
        scale: what the token embedding is multiplied by before the position is added (√d_model).
    """

    source: np.ndarray | None
    source_tokens: list[str] | None
    target: np.ndarray | None
    target_tokens: list[str] | None
    positional: np.ndarray
    positional_kind: str
    scale: float

    def input_rows(self, ids: list[int], table: str) -> np.ndarray:
        """(T, D) what the first layer receives for ``ids``: scale · E[ids] + P[:T] (dropout aside).

        Args:
            table: "source" or "target".
        """
        weights = self.source if table == "source" else self.target
        if weights is None:
            raise ValueError(f"this model has no {table} embedding")
        return self.scale * weights[ids] + self.positional[: len(ids)]  # (T, D)


def _vocabulary(tokenizer: Tokenizer | None, size: int) -> list[str] | None:
    return tokenizer.token_strings(list(range(size))) if tokenizer is not None else None


@torch.inference_mode()
def model_embeddings(ckpt: Checkpoint) -> Embeddings:
    """The token and position embeddings of ``ckpt``'s model, read from its modules."""
    model, config = ckpt.model, ckpt.config
    source = target = None
    if config.has_encoder:
        source = model.src_embed.weight.float().cpu().numpy()  # (V_src, D)
    if config.has_decoder:
        target = model.tgt_embed.weight.float().cpu().numpy()  # (V_tgt, D)
    zeros = torch.zeros(1, config.max_len, config.d_model, device=next(model.parameters()).device)
    positional = model.positional(zeros)[0].float().cpu().numpy()  # (max_len, D): what forward adds
    return Embeddings(
        source=source, source_tokens=_vocabulary(ckpt.source_tokenizer, len(source)) if source is not None else None,
        target=target, target_tokens=_vocabulary(ckpt.target_tokenizer, len(target)) if target is not None else None,
        positional=positional, positional_kind=config.positional, scale=math.sqrt(config.d_model),
    )
