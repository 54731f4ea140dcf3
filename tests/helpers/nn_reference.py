"""PyTorch's own ``nn.Transformer``, tiny and seeded: the reference the imported checkpoints are compared with."""

from __future__ import annotations

import torch
from torch import nn

SRC_VOCAB, TGT_VOCAB = 13, 11


def reference(norm_first: bool, seed: int = 0) -> nn.Transformer:
    """A seeded tiny ``nn.Transformer`` (d_model 16, 4 heads, 2 + 2 layers), post- or pre-norm, in eval mode."""
    torch.manual_seed(seed)
    ref = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
                         dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():  # non-trivial LayerNorms and biases, so a wrong mapping would show
        for name, parameter in ref.named_parameters():
            if "norm" in name or name.endswith("bias"):
                parameter.add_(torch.randn_like(parameter) * 0.2)
    return ref
