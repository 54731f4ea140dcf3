"""Hugging Face ALBERT folders: factorised embeddings (E → D) and layer weights shared across layers.

ALBERT stores its embeddings at width E (``albert.embeddings.*``), projects them with
``encoder.embedding_hidden_mapping_in``, and keeps ``num_hidden_groups`` sets of layer weights
(``encoder.albert_layer_groups.G.albert_layers.0.*``) that its ``num_hidden_layers`` layers run
in turn; each layer still returns its own attention maps. Its heads: ``predictions.*`` (masked
LM at width E), ``albert.pooler`` + tanh + ``classifier`` (sequence), ``classifier`` (tokens).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_encoder import (BERT_EMBEDDINGS, EncoderFamily, HeadNames, body_names, layer_names,
                                           read_encoder)
from core.io.pretrained.hf_files import FolderRead
from core.model.families.encoder_heads import ACTIVATIONS

_body = body_names(r"^encoder\.albert_layer_groups\.(\d+)\.albert_layers\.0\.(.+)$",
                   layer_names("attention.query", "attention.key", "attention.value", "attention.dense",
                               "attention.LayerNorm", "ffn", "ffn_output", "full_layer_layer_norm"),
                   {**BERT_EMBEDDINGS, "encoder.embedding_hidden_mapping_in": "embed.project"})


def _settings(raw: dict[str, Any]) -> dict[str, Any]:
    if int(raw.get("inner_group_num", 1)) != 1:
        raise CheckpointError(f"inner_group_num {raw.get('inner_group_num')} is not supported (only 1)")
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError("only absolute position embeddings are supported")
    if raw.get("hidden_act", "gelu_new") not in ACTIVATIONS:
        raise CheckpointError(f"activation {raw.get('hidden_act')!r} is not supported")
    width, embed = int(raw["hidden_size"]), int(raw.get("embedding_size", 128))
    return dict(
        vocab_size=int(raw["vocab_size"]), d_model=width, n_encoder_layers=int(raw["num_hidden_layers"]),
        n_heads=int(raw["num_attention_heads"]), d_ff=int(raw["intermediate_size"]),
        max_len=int(raw.get("max_position_embeddings", 512)), type_vocab_size=int(raw.get("type_vocab_size", 2)),
        norm_eps=float(raw.get("layer_norm_eps", 1e-12)), activation=raw.get("hidden_act", "gelu_new"),
        pad_id=int(raw.get("pad_token_id") or 0), embedding_size=embed,
        shared_layers=int(raw.get("num_hidden_groups", 1)),
    )


ALBERT = EncoderFamily(
    "albert", "albert.", _settings, _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", {"predictions.dense": "head.dense", "predictions.LayerNorm": "head.norm",
                                               "predictions.decoder": "head.decoder",
                                               "predictions.bias": "head.decoder.bias"},
                                 activation_key="hidden_act", width_key="embedding_size", ignored=("pooler.",)),
        "ForSequenceClassification": HeadNames("classes", {"albert.pooler": "head.dense", "classifier": "head.out"},
                                               activation="tanh"),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}, ignored=("pooler.",)),
    },
    unused=("pooler.", "predictions.", "sop_classifier."),
)


def read_albert(folder: Path) -> FolderRead:
    """An ALBERT folder as :func:`~hf_encoder.read_encoder` reads it."""
    return read_encoder(Path(folder), ALBERT)
