"""The task heads of BERT-like encoders: masked-LM, sequence classification, token classification.

Every BERT-like family (BERT, RoBERTa, XLM-RoBERTa, ELECTRA, DistilBERT, ALBERT) uses one of
three shapes, differing only in widths and activations:

* masked LM: dense (D → E), activation, LayerNorm (E), decoder (E → V) with a bias → (B, T, V);
* sequence classification: the first token's state → dense (D → D), activation → out (D → C): (B, C)
  (BERT and ALBERT call the first dense the pooler, with tanh);
* token classification: out (D → C) on every state, optionally after dense + activation: (B, T, C)
  (ELECTRA's replaced-token discriminator is the one-class case with the dense).

Glossary: B batch, T length, D model width, E embedding width, V vocabulary, C classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "tanh": torch.tanh,
}
#: What a head's logits are (see :class:`~core.io.pretrained.hf_files.FolderRead`).
HEAD_KINDS = ("hidden", "masked_lm", "classes", "token_classes")


@dataclass(frozen=True)
class HeadConfig:
    """Which head an encoder carries and its sizes.

    Attributes:
        kind: one of :data:`HEAD_KINDS` (``hidden``: no head, the logits are the hidden states).
        n_labels: classes of a classification head.
        activation: the head's activation (after its first dense layer).
        width: a masked-LM head's inner width E (its LayerNorm's), 0 = the model width.
        dense: whether a token-classification head has a dense + activation before ``out``.
    """

    kind: str = "hidden"
    n_labels: int = 0
    activation: str = "gelu"
    width: int = 0
    dense: bool = False

    def __post_init__(self) -> None:
        if self.kind not in HEAD_KINDS:
            raise ValueError(f"head {self.kind!r} is not one of {', '.join(HEAD_KINDS)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"head activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if self.kind in ("classes", "token_classes") and self.n_labels < 1:
            raise ValueError(f"a {self.kind} head needs at least one label, got {self.n_labels}")


class MaskedLMHead(nn.Module):
    """dense → activation → LayerNorm → decoder: hidden (B, T, D) → vocabulary scores (B, T, V)."""

    def __init__(self, d_model: int, width: int, vocab_size: int, activation: str, eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, width)
        self.norm = nn.LayerNorm(width, eps=eps)
        self.decoder = nn.Linear(width, vocab_size)
        self.activation = ACTIVATIONS[activation]

    def forward(self, hidden: Tensor) -> Tensor:
        return self.decoder(self.norm(self.activation(self.dense(hidden))))  # (B, T, V)


class SequenceHead(nn.Module):
    """The first token's state → dense → activation → out: (B, T, D) → (B, C)."""

    def __init__(self, d_model: int, n_labels: int, activation: str) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, n_labels)
        self.activation = ACTIVATIONS[activation]

    def forward(self, hidden: Tensor) -> Tensor:
        return self.out(self.activation(self.dense(hidden[:, 0])))  # (B, C)


class TokenHead(nn.Module):
    """Every state → (dense → activation →) out: (B, T, D) → (B, T, C)."""

    def __init__(self, d_model: int, n_labels: int, activation: str, dense: bool) -> None:
        super().__init__()
        self.dense = nn.Linear(d_model, d_model) if dense else None
        self.out = nn.Linear(d_model, n_labels)
        self.activation = ACTIVATIONS[activation]

    def forward(self, hidden: Tensor) -> Tensor:
        if self.dense is not None:
            hidden = self.activation(self.dense(hidden))  # (B, T, D)
        return self.out(hidden)  # (B, T, C)


def build_head(head: HeadConfig, d_model: int, vocab_size: int, eps: float) -> nn.Module | None:
    """The head module for ``head`` (None for ``hidden``)."""
    if head.kind == "masked_lm":
        return MaskedLMHead(d_model, head.width or d_model, vocab_size, head.activation, eps)
    if head.kind == "classes":
        return SequenceHead(d_model, head.n_labels, head.activation)
    if head.kind == "token_classes":
        return TokenHead(d_model, head.n_labels, head.activation, head.dense)
    return None
