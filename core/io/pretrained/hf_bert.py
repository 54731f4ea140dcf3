"""Hugging Face folders of the families that store BERT's tensor names: BERT, RoBERTa, XLM-RoBERTa, ELECTRA.

A folder holds ``config.json``, safetensors weights and ``tokenizer.json``, as ``transformers`` and
sentence-transformers save them (a sentence-transformers folder may add ``modules.json`` and
``1_Pooling/config.json``, which say how token states become one sentence vector). They differ
in their base-model prefix (``bert.``, ``roberta.``, ``electra.``), RoBERTa's position offset,
ELECTRA's narrower embeddings, and the names of their task heads; :mod:`hf_encoder` does the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_encoder import (BERT_EMBEDDINGS, EncoderFamily, HeadNames, body_names, layer_names,
                                           read_encoder)
from core.io.pretrained.hf_files import FolderRead
from core.model.families.encoder_heads import ACTIVATIONS

_LAYER_NAMES = layer_names("attention.self.query", "attention.self.key", "attention.self.value",
                           "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                           "output.dense", "output.LayerNorm")
_EMBED_NAMES = {**BERT_EMBEDDINGS, "embeddings_project": "embed.project"}  # ELECTRA: embedding width E → model width D
_body = body_names(r"^encoder\.layer\.(\d+)\.(.+)$", _LAYER_NAMES, _EMBED_NAMES)


def _settings(raw: dict[str, Any], *, roberta: bool = False, electra: bool = False) -> dict[str, Any]:
    """``config.json`` of a BERT-layout family → :class:`BertConfig` settings (without the head)."""
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError("only absolute position embeddings are supported, "
                              f"not {raw.get('position_embedding_type')!r}")
    if raw.get("hidden_act", "gelu") not in ACTIVATIONS:
        raise CheckpointError(f"activation {raw.get('hidden_act')!r} is not supported")
    if raw.get("add_cross_attention"):
        raise CheckpointError("cross-attention layers (add_cross_attention) are not supported")
    pad = int(raw.get("pad_token_id") or 0)
    offset = pad + 1 if roberta else 0  # RoBERTa: real tokens' positions start after the pad position
    width = int(raw["hidden_size"])
    embed = int(raw.get("embedding_size", 128)) if electra else 0
    return dict(
        vocab_size=int(raw["vocab_size"]), d_model=width, n_encoder_layers=int(raw["num_hidden_layers"]),
        n_heads=int(raw["num_attention_heads"]), d_ff=int(raw["intermediate_size"]),
        max_len=int(raw.get("max_position_embeddings", 512)) - offset,
        type_vocab_size=int(raw.get("type_vocab_size", 2)),
        norm_eps=float(raw.get("layer_norm_eps", 1e-12)), activation=raw.get("hidden_act", "gelu"), pad_id=pad,
        embedding_size=embed if embed != width else 0, position_offset=offset,  # ELECTRA projects only if E ≠ D
        causal=bool(raw.get("is_decoder", False)),
    )


_BERT_MLM = {"cls.predictions.transform.dense": "head.dense", "cls.predictions.transform.LayerNorm": "head.norm",
             "cls.predictions.decoder": "head.decoder", "cls.predictions.bias": "head.decoder.bias"}
BERT = EncoderFamily(
    "bert", "bert.", _settings, _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", _BERT_MLM, activation_key="hidden_act", ignored=("pooler.",)),
        "ForPreTraining": HeadNames("masked_lm", _BERT_MLM, activation_key="hidden_act",
                                    ignored=("pooler.", "cls.seq_relationship")),
        "LMHeadModel": HeadNames("masked_lm", _BERT_MLM, activation_key="hidden_act", ignored=("pooler.",)),
        "ForSequenceClassification": HeadNames("classes", {"bert.pooler.dense": "head.dense", "classifier": "head.out"},
                                               activation="tanh"),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}, ignored=("pooler.",)),
    },
    unused=("pooler.", "cls."),
)

_ROBERTA_MLM = HeadNames("masked_lm", {"lm_head.dense": "head.dense", "lm_head.layer_norm": "head.norm",
                                       "lm_head.decoder": "head.decoder", "lm_head.bias": "head.decoder.bias"},
                         ignored=("pooler.",))
_ROBERTA_HEADS = {
    "ForMaskedLM": _ROBERTA_MLM,
    "ForCausalLM": _ROBERTA_MLM,  # is_decoder: the same head, read causally
    "ForSequenceClassification": HeadNames("classes", {"classifier.dense": "head.dense",
                                                       "classifier.out_proj": "head.out"},
                                           activation="tanh", ignored=("pooler.",)),
    "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}, ignored=("pooler.",)),
}
ROBERTA = EncoderFamily("roberta", "roberta.", lambda raw: _settings(raw, roberta=True), _body,
                        heads=_ROBERTA_HEADS, unused=("pooler.", "lm_head."))
XLM_ROBERTA = EncoderFamily("xlm-roberta", "roberta.", lambda raw: _settings(raw, roberta=True), _body,
                            heads=_ROBERTA_HEADS, unused=("pooler.", "lm_head."))
ELECTRA = EncoderFamily(
    "electra", "electra.", lambda raw: _settings(raw, electra=True), _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", {"generator_predictions.dense": "head.dense",
                                               "generator_predictions.LayerNorm": "head.norm",
                                               "generator_lm_head": "head.decoder"}, width_key="embedding_size"),
        "ForPreTraining": HeadNames("token_classes", {"discriminator_predictions.dense": "head.dense",
                                                      "discriminator_predictions.dense_prediction": "head.out"},
                                    activation_key="hidden_act", dense=True, labels=("replaced",)),
        "ForSequenceClassification": HeadNames("classes", {"classifier.dense": "head.dense",
                                                           "classifier.out_proj": "head.out"}),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}),
    },
    unused=("generator_", "discriminator_"),
)


def read_bert(folder: Path) -> FolderRead:
    """A BERT folder (also MiniLM and sentence-transformers) as :func:`~hf_encoder.read_encoder` reads it."""
    return read_encoder(Path(folder), BERT)


def read_roberta(folder: Path) -> FolderRead:
    """A RoBERTa folder (positions from ``pad_id + 1``)."""
    return read_encoder(Path(folder), ROBERTA)


def read_xlm_roberta(folder: Path) -> FolderRead:
    """An XLM-RoBERTa folder (RoBERTa's layout with a SentencePiece vocabulary)."""
    return read_encoder(Path(folder), XLM_ROBERTA)


def read_electra(folder: Path) -> FolderRead:
    """An ELECTRA folder: the discriminator or generator encoder, with its head."""
    return read_encoder(Path(folder), ELECTRA)
