"""What the decoder's cross-attention output reads (notes 000: "semantic representations from the
cross-attention output"): at each decoder step the cross-attention sublayer returns a d_model vector
that mixes the encoder's outputs, weighted by that row's attention — a representation of source meaning
placed at the target position. Its cosine similarity with each encoder output shows which source
tokens it resembles.

Axis letters: T decoder steps, S source tokens, D model width.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn


def last_cross_output(model: nn.Module, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None) -> np.ndarray:
    """(T, D) the last decoder layer's cross-attention sublayer output (after W^O, before Add & Norm) for
    decoder inputs ``tgt`` (1, T) reading ``memory`` (1, S, D), from the model's own ``decode``."""
    with torch.inference_mode():
        _, _, cross = model.decode(tgt, memory, memory_mask)  # per-layer results; .output is (1, T, D)
    return cross[-1].output[0].detach().double().cpu().numpy()


def cross_reading(cross_output: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """(T, S) cosine similarity between each decoder step's cross-attention output (T, D) and each
    encoder output (S, D); a zero vector has similarity 0.

    Raises:
        ValueError: the two do not share the width D.
    """
    if cross_output.ndim != 2 or memory.ndim != 2 or cross_output.shape[1] != memory.shape[1]:
        raise ValueError(f"need (T, D) and (S, D) arrays, got {cross_output.shape} and {memory.shape}")
    cross_output, memory = cross_output.astype(np.float64), memory.astype(np.float64)
    a = cross_output / np.maximum(np.linalg.norm(cross_output, axis=1, keepdims=True), 1e-12)  # (T, D)
    b = memory / np.maximum(np.linalg.norm(memory, axis=1, keepdims=True), 1e-12)  # (S, D)
    return a @ b.T  # (T, S)
