"""Hugging Face DistilBERT folders: BERT's post-norm layers under other names, no token types.

DistilBERT stores ``distilbert.embeddings.{word,position}_embeddings`` and ``LayerNorm``, and per
layer ``transformer.layer.N.attention.{q,k,v,out}_lin``, ``sa_layer_norm``, ``ffn.lin1``/``lin2`` and
``output_layer_norm``; its heads are ``vocab_transform``/``vocab_layer_norm``/``vocab_projector``
(masked LM), ``pre_classifier`` + ReLU + ``classifier`` (sequence) and ``classifier`` (tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_encoder import (BERT_EMBEDDINGS, BERT_KEYS, EncoderFamily, HeadNames, body_names,
                                           layer_names, read_encoder)
from core.io.pretrained.hf_files import FolderRead
from core.model.families.encoder_heads import ACTIVATIONS

_body = body_names(r"^transformer\.layer\.(\d+)\.(.+)$",
                   layer_names("attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
                               "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm"),
                   {name: ours for name, ours in BERT_EMBEDDINGS.items() if "token_type" not in name})


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
    keys={**BERT_KEYS, "d_model": "dim", "n_encoder_layers": "n_layers", "n_heads": "n_heads", "d_ff": "hidden_dim"},
)


def read_distilbert(folder: Path) -> FolderRead:
    """A DistilBERT folder as :func:`~hf_encoder.read_encoder` reads it."""
    return read_encoder(Path(folder), DISTILBERT)
