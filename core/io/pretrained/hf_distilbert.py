"""Hugging Face DistilBERT folders: BERT's post-norm layers under other names, no token types.

DistilBERT stores ``distilbert.embeddings.{word,position}_embeddings`` and ``LayerNorm``, and per
layer ``transformer.layer.N.attention.{q,k,v,out}_lin``, ``sa_layer_norm``, ``ffn.lin1``/``lin2`` and
``output_layer_norm``; its heads are ``vocab_transform``/``vocab_layer_norm``/``vocab_projector``
(masked LM), ``pre_classifier`` + ReLU + ``classifier`` (sequence) and ``classifier`` (tokens).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_encoder import EncoderFamily, HeadNames, read_encoder
from core.io.pretrained.hf_files import FolderRead
from core.model.families.encoder_heads import ACTIVATIONS

_LAYER = re.compile(r"^transformer\.layer\.(\d+)\.(.+)$")
_LAYER_NAMES = {
    "attention.q_lin": "attn.query", "attention.k_lin": "attn.key", "attention.v_lin": "attn.value",
    "attention.out_lin": "attn.out", "sa_layer_norm": "attn_norm",
    "ffn.lin1": "up", "ffn.lin2": "down", "output_layer_norm": "ffn_norm",
}
_EMBED_NAMES = {"embeddings.word_embeddings": "embed.word", "embeddings.position_embeddings": "embed.position",
                "embeddings.LayerNorm": "embed.norm"}


def _body(name: str) -> str | None:
    module, _, param = name.rpartition(".")
    if module in _EMBED_NAMES:
        return f"{_EMBED_NAMES[module]}.{param}"
    match = _LAYER.match(module)
    if match and match.group(2) in _LAYER_NAMES:
        return f"layers.{match.group(1)}.{_LAYER_NAMES[match.group(2)]}.{param}"
    return None


def _settings(raw: dict[str, Any]) -> dict[str, Any]:
    if raw.get("activation", "gelu") not in ACTIVATIONS:
        raise CheckpointError(f"activation {raw.get('activation')!r} is not supported")
    return dict(
        vocab_size=int(raw["vocab_size"]), d_model=int(raw["dim"]), n_encoder_layers=int(raw["n_layers"]),
        n_heads=int(raw["n_heads"]), d_ff=int(raw["hidden_dim"]), max_len=int(raw.get("max_position_embeddings", 512)),
        type_vocab_size=0, norm_eps=1e-12, activation=raw.get("activation", "gelu"),
        pad_id=int(raw.get("pad_token_id") or 0),
    )


DISTILBERT = EncoderFamily(
    "distilbert", "distilbert.", _settings, _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", {"vocab_transform": "head.dense", "vocab_layer_norm": "head.norm",
                                               "vocab_projector": "head.decoder"}, activation_key="activation"),
        "ForSequenceClassification": HeadNames("classes", {"pre_classifier": "head.dense", "classifier": "head.out"},
                                               activation="relu"),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}),
    },
)


def read_distilbert(folder: Path) -> FolderRead:
    """A DistilBERT folder as :func:`~hf_encoder.read_encoder` reads it."""
    return read_encoder(Path(folder), DISTILBERT)
