"""Hugging Face DeBERTa-v2 and DeBERTa-v3 folders (``model_type`` ``deberta-v2``: bare, masked LM — both of
``transformers``' head layouts —, sequence and token classification) as a
:class:`~core.model.families.deberta.DebertaModel`, through :mod:`hf_encoder`'s steps.

config.json's relative-attention keys are read as ``transformers`` reads them: ``relative_attention``,
``pos_att_type`` (a list, or the older ``"p2c|c2p"`` string), ``position_buckets``,
``max_relative_positions`` (below 1: ``max_position_embeddings``), ``share_att_key``, ``norm_rel_ebd``
(``layer_norm`` or ``none``), ``position_biased_input``, ``embedding_size``. What the model does not build
is refused, named: another position part (``p2p``), DeBERTa-v2-xlarge's convolution (``conv_kernel_size``),
an ``attention_head_size`` other than D / H, a pooler of another width.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_claims import Claims, Stack
from core.io.pretrained.hf_encoder import EncoderFamily, HeadNames, body_names, read_encoder
from core.io.pretrained.hf_files import FolderRead
from core.model.families.deberta import DebertaConfig, DebertaModel
from core.model.families.encoder_heads import ACTIVATIONS

_PARTS = ("c2p", "p2c")
_LAYER = {"attention.self.query_proj": "attn.query", "attention.self.key_proj": "attn.key",
          "attention.self.value_proj": "attn.value", "attention.self.pos_key_proj": "attn.pos_key",
          "attention.self.pos_query_proj": "attn.pos_query", "attention.output.dense": "attn.out",
          "attention.output.LayerNorm": "attn_norm", "intermediate.dense": "up", "output.dense": "down",
          "output.LayerNorm": "ffn_norm"}
_EMBEDDINGS = {"embeddings.word_embeddings": "embed.word", "embeddings.position_embeddings": "embed.position",
               "embeddings.token_type_embeddings": "embed.token_type", "embeddings.embed_proj": "embed.project",
               "embeddings.LayerNorm": "embed.norm", "encoder.rel_embeddings": "rel_embeddings",
               "encoder.LayerNorm": "rel_norm"}
_body = body_names(r"^encoder\.layer\.(\d+)\.(.+)$", _LAYER, _EMBEDDINGS)


def _flag(raw: dict[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"{key} {value!r} must be true or false")
    return value


def _parts(raw: dict[str, Any]) -> tuple[str, ...]:
    """``pos_att_type`` as a tuple of part names (``"p2c|c2p"`` split as transformers splits it)."""
    listed = raw.get("pos_att_type") or []
    if isinstance(listed, str):
        listed = [part.strip() for part in listed.lower().split("|")]
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise CheckpointError(f"pos_att_type {listed!r} must be a list of c2p and p2c")
    unknown = sorted(set(listed) - set(_PARTS))
    if unknown:
        raise CheckpointError(f"pos_att_type {unknown[0]!r} is not supported; supported: {', '.join(_PARTS)}")
    return tuple(listed)


def _refuse_unbuilt(raw: dict[str, Any]) -> None:
    """Refuse the variants :class:`DebertaModel` does not build, each naming its key."""
    if int(raw.get("conv_kernel_size", 0) or 0) > 0:
        raise CheckpointError("conv_kernel_size (DeBERTa-v2's convolution after the first layer) is not supported")
    width, heads = int(raw["hidden_size"]), int(raw["num_attention_heads"])
    if raw.get("attention_head_size") not in (None, width // heads):
        raise CheckpointError(f"attention_head_size {raw['attention_head_size']!r} other than hidden_size / "
                              f"num_attention_heads is not supported")
    pooled = "SequenceClassification" in str(raw.get("architectures"))  # the only head with the pooler
    if pooled and raw.get("pooler_hidden_size", width) != width:
        raise CheckpointError(f"pooler_hidden_size {raw['pooler_hidden_size']!r} other than hidden_size is not "
                              f"supported")
    norm = [part.strip() for part in str(raw.get("norm_rel_ebd", "none")).lower().split("|")]
    if set(norm) - {"none", "layer_norm"}:
        raise CheckpointError(f"norm_rel_ebd {raw['norm_rel_ebd']!r} is not supported; supported: layer_norm, none")
    if raw.get("hidden_act", "gelu") not in ACTIVATIONS or raw.get("pooler_hidden_act", "gelu") not in ACTIVATIONS:
        raise CheckpointError(f"activation {raw.get('hidden_act')!r} / {raw.get('pooler_hidden_act')!r} is not "
                              f"supported")


def _settings(raw: dict[str, Any]) -> dict[str, Any]:
    """``config.json`` of DeBERTa-v2/v3 → :class:`DebertaConfig` settings (without the head)."""
    _refuse_unbuilt(raw)
    longest = int(raw.get("max_position_embeddings", 512))
    relative = _flag(raw, "relative_attention", False)
    parts = _parts(raw) if relative else ()
    buckets = int(raw.get("position_buckets", -1))
    farthest = int(raw.get("max_relative_positions", -1))
    farthest = farthest if farthest >= 1 else longest
    width = int(raw["hidden_size"])
    embed = int(raw.get("embedding_size", width) or width)
    return dict(
        vocab_size=int(raw["vocab_size"]), d_model=width, n_encoder_layers=int(raw["num_hidden_layers"]),
        n_heads=int(raw["num_attention_heads"]), d_ff=int(raw["intermediate_size"]), max_len=longest,
        type_vocab_size=int(raw.get("type_vocab_size", 0)), norm_eps=float(raw.get("layer_norm_eps", 1e-7)),
        activation=raw.get("hidden_act", "gelu"), pad_id=int(raw.get("pad_token_id") or 0),
        embedding_size=embed if embed != width else 0,
        position_biased_input=_flag(raw, "position_biased_input", True),
        span=(buckets if buckets > 0 else farthest) if relative else 0, position_buckets=max(buckets, 0),
        max_relative_positions=farthest, c2p="c2p" in parts, p2c="p2c" in parts,
        share_att_key=_flag(raw, "share_att_key", False),
        norm_rel_embeddings="layer_norm" in str(raw.get("norm_rel_ebd", "none")).lower(),
    )


def _claims(settings: dict[str, Any], keys: dict[str, str]) -> Claims:
    """What the settings claim: the layers and heads, the embeddings present, the relative-position table."""
    width, inner = ("hidden_size", settings["d_model"]), ("intermediate_size", settings["d_ff"])
    embed = ("embedding_size", settings["embedding_size"]) if settings["embedding_size"] else width
    tensors = {"embed.word.weight": (("vocab_size", settings["vocab_size"]), embed)}
    if settings["position_biased_input"]:
        tensors["embed.position.weight"] = (("max_position_embeddings", settings["max_len"]), embed)
    if settings["type_vocab_size"]:
        tensors["embed.token_type.weight"] = (("type_vocab_size", settings["type_vocab_size"]), embed)
    if settings["span"]:
        tensors["rel_embeddings.weight"] = (("2 × position_buckets (or max_relative_positions)",
                                             2 * settings["span"]), width)
    layer = {"attn.query.weight": (width, width), "up.weight": (inner, width), "down.weight": (width, inner)}
    return Claims((Stack("layers.", ("num_hidden_layers", settings["n_encoder_layers"]), layer),), tensors,
                  splits=((("num_attention_heads", settings["n_heads"]), width),))


_LEGACY_MLM = {"cls.predictions.transform.dense": "head.dense", "cls.predictions.transform.LayerNorm": "head.norm",
               "cls.predictions.decoder": "head.decoder", "cls.predictions.bias": "head.decoder.bias"}
_MLM = {"lm_predictions.lm_head.dense": "head.dense", "lm_predictions.lm_head.LayerNorm": "head.norm",
        "lm_predictions.lm_head.bias": "head.decoder.bias"}
DEBERTA = EncoderFamily(
    "deberta-v2", "deberta.", _settings, _body,
    heads={
        "ForMaskedLM": HeadNames("masked_lm", {**_LEGACY_MLM, **_MLM}, activation_key="hidden_act",
                                 width_key="embedding_size", ignored=("mask_predictions.",)),
        "ForSequenceClassification": HeadNames("classes", {"pooler.dense": "head.dense", "classifier": "head.out"},
                                               activation_key="pooler_hidden_act"),
        "ForTokenClassification": HeadNames("token_classes", {"classifier": "head.out"}),
    },
    unused=("pooler.", "cls.", "lm_predictions.", "mask_predictions."),
    config=DebertaConfig, model=DebertaModel, claims=_claims,
)


def read_deberta(folder: Path) -> FolderRead:
    """A DeBERTa-v2/v3 folder as :func:`~hf_encoder.read_encoder` reads it.

    Raises:
        CheckpointError: as :func:`~hf_encoder.read_encoder`; a folder whose tokenizer is only SentencePiece's
            ``spm.model`` (microsoft/deberta-v3-*) with the one command that writes its ``tokenizer.json``.
    """
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file() and (folder / "spm.model").is_file():
        where = json.dumps(str(folder.absolute()))
        code = (f"from transformers import AutoTokenizer; "
                f"AutoTokenizer.from_pretrained({where}).save_pretrained({where})")
        raise CheckpointError(f"{folder.name} has only spm.model as its tokenizer; write its tokenizer.json once with "
                              f"`python -c {shlex.quote(code)}`")
    return read_encoder(folder, DEBERTA)
