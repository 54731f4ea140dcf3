"""Hugging Face MPNet folders (``model_type`` ``mpnet``: all-mpnet-base-v2 and the other MPNet sentence
embedders, masked LM, sequence and token classification) as a :class:`~core.model.families.bert.BertModel`.

MPNet is BERT's post-norm encoder with RoBERTa's positions (counted over the real tokens from 2; the
padding id is 1) and no token types, plus one relative position bias shared by every layer: a
(32 buckets, H) table ``encoder.relative_attention_bias`` indexed by T5's bidirectional buckets of the
key-minus-query distance (exact below 8, logarithmic up to 128). ``transformers`` computes 32 buckets
whatever ``relative_attention_num_buckets`` says and counts positions from padding id 1 whatever
``pad_token_id`` says, so a config saying otherwise is refused, named. A sentence-transformers folder
(``modules.json``) reads its bare encoder even when config.json names a masked-LM architecture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_encoder import EncoderFamily, HeadNames, body_names, layer_names, read_encoder
from core.io.pretrained.hf_files import FolderRead
from core.model.families.encoder_heads import ACTIVATIONS

BUCKETS, MAX_DISTANCE, PADDING_ID = 32, 128, 1  # transformers' MPNet, fixed in its code
_body = body_names(
    r"^encoder\.layer\.(\d+)\.(.+)$",
    layer_names("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o",
                "attention.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"),
    {"embeddings.word_embeddings": "embed.word", "embeddings.position_embeddings": "embed.position",
     "embeddings.LayerNorm": "embed.norm", "encoder.relative_attention_bias": "relative.table"})


def _settings(raw: dict[str, Any]) -> dict[str, Any]:
    """``config.json`` of MPNet → :class:`BertConfig` settings (without the head)."""
    buckets = raw.get("relative_attention_num_buckets", BUCKETS)
    if buckets != BUCKETS:
        raise CheckpointError(f"relative_attention_num_buckets {buckets!r} is not supported (MPNet computes "
                              f"{BUCKETS} buckets)")
    pad = raw.get("pad_token_id", PADDING_ID)
    if pad != PADDING_ID:
        raise CheckpointError(f"pad_token_id {pad!r} is not supported (MPNet counts positions from padding id "
                              f"{PADDING_ID})")
    if raw.get("hidden_act", "gelu") not in ACTIVATIONS:
        raise CheckpointError(f"activation {raw.get('hidden_act')!r} is not supported")
    offset = PADDING_ID + 1
    return dict(
        vocab_size=int(raw["vocab_size"]), d_model=int(raw["hidden_size"]),
        n_encoder_layers=int(raw["num_hidden_layers"]), n_heads=int(raw["num_attention_heads"]),
        d_ff=int(raw["intermediate_size"]), max_len=int(raw.get("max_position_embeddings", 514)) - offset,
        type_vocab_size=0, norm_eps=float(raw.get("layer_norm_eps", 1e-12)), activation=raw.get("hidden_act", "gelu"),
        pad_id=PADDING_ID, position_offset=offset, relative_buckets=BUCKETS, relative_max_distance=MAX_DISTANCE,
    )


MPNET = EncoderFamily(
    "mpnet", "mpnet.", _settings, _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", {"lm_head.dense": "head.dense", "lm_head.layer_norm": "head.norm",
                                               "lm_head.decoder": "head.decoder", "lm_head.bias": "head.decoder.bias"},
                                 ignored=("pooler.",)),
        "ForSequenceClassification": HeadNames("classes", {"classifier.dense": "head.dense",
                                                           "classifier.out_proj": "head.out"},
                                               activation="tanh", ignored=("pooler.",)),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}, ignored=("pooler.",)),
    },
    unused=("pooler.", "lm_head."),
)


def read_mpnet(folder: Path) -> FolderRead:
    """An MPNet folder as :func:`~hf_encoder.read_encoder` reads it."""
    return read_encoder(Path(folder), MPNET)
