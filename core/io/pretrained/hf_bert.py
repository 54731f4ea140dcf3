"""Read a Hugging Face-format BERT-family folder into a :class:`~core.model.families.bert.BertModel`.

The folder holds ``config.json`` (``model_type: bert``), ``model.safetensors`` and
``tokenizer.json``, as sentence-transformers and ``transformers`` save them; a
sentence-transformers folder may add ``modules.json`` and ``1_Pooling/config.json``,
which say how token states become one sentence vector. Only safetensors weights are
read: a ``pytorch_model.bin`` (a pickle) is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_files import FolderRead, folder_config, inside, read_json, read_tokenizer, read_weights
from core.model.families.bert import ACTIVATIONS, BertConfig, BertModel

SUPPORTED_MODEL_TYPES = ("bert",)
_LAYER = re.compile(r"^encoder\.layer\.(\d+)\.(.+)$")
_LAYER_NAMES = {
    "attention.self.query": "attn.query", "attention.self.key": "attn.key", "attention.self.value": "attn.value",
    "attention.output.dense": "attn.out", "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "up", "output.dense": "down", "output.LayerNorm": "ffn_norm",
}
_EMBED_NAMES = {
    "embeddings.word_embeddings": "embed.word", "embeddings.position_embeddings": "embed.position",
    "embeddings.token_type_embeddings": "embed.token_type", "embeddings.LayerNorm": "embed.norm",
}
_IGNORED = ("pooler.", "cls.", "embeddings.position_ids")  # heads for other tasks, a constant buffer


def bert_config(folder: Path) -> BertConfig:
    """The :class:`BertConfig` of ``folder/config.json``.

    Raises:
        CheckpointError: another ``model_type``, or settings this encoder cannot reproduce.
    """
    raw = folder_config(folder)
    kind = raw.get("model_type")
    if kind not in SUPPORTED_MODEL_TYPES:
        raise CheckpointError(f"{folder.name}: model_type {kind!r} is not supported; "
                              f"supported: {', '.join(SUPPORTED_MODEL_TYPES)} (BERT-family encoders)")
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"{folder.name}: only absolute position embeddings are supported")
    if raw.get("hidden_act", "gelu") not in ACTIVATIONS:
        raise CheckpointError(f"{folder.name}: activation {raw.get('hidden_act')!r} is not supported")
    try:
        return BertConfig(
            vocab_size=int(raw["vocab_size"]), d_model=int(raw["hidden_size"]),
            n_encoder_layers=int(raw["num_hidden_layers"]),
            n_heads=int(raw["num_attention_heads"]), d_ff=int(raw["intermediate_size"]),
            max_len=int(raw.get("max_position_embeddings", 512)), type_vocab_size=int(raw.get("type_vocab_size", 2)),
            norm_eps=float(raw.get("layer_norm_eps", 1e-12)), activation=raw.get("hidden_act", "gelu"),
            pad_id=int(raw.get("pad_token_id") or 0),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{folder.name}: config.json is incomplete or invalid ({error})") from None


def pooling(folder: Path) -> dict[str, Any]:
    """How a sentence vector is made: ``{"mode": "mean" | "cls", "normalize": bool}``.

    From sentence-transformers' ``modules.json`` and pooling config when present; a plain
    BERT folder gets the mean over tokens, normalised (as all-MiniLM-L6-v2 does).
    """
    modules = folder / "modules.json"
    if not modules.is_file():
        return {"mode": "mean", "normalize": True}
    entries = json.loads(modules.read_text(encoding="utf-8"))
    kinds = [str(e.get("type", "")).rsplit(".", 1)[-1] for e in entries if isinstance(e, dict)]
    mode = "mean"
    for entry in entries:
        if isinstance(entry, dict) and str(entry.get("type", "")).endswith("Pooling"):
            settings = inside(folder, str(entry.get("path", ""))) / "config.json"
            if settings.is_file():
                raw = read_json(settings, folder)
                mode = "cls" if raw.get("pooling_mode_cls_token") else "mean"
    return {"mode": mode, "normalize": "Normalize" in kinds}


def _our_name(name: str) -> str | None:
    name = name.removeprefix("bert.")
    if name.startswith(_IGNORED):
        return None
    module, _, param = name.rpartition(".")
    if module in _EMBED_NAMES:
        return f"{_EMBED_NAMES[module]}.{param}"
    match = _LAYER.match(module)
    if match and match.group(2) in _LAYER_NAMES:
        return f"layers.{match.group(1)}.{_LAYER_NAMES[match.group(2)]}.{param}"
    raise CheckpointError(f"unexpected tensor {name!r} for a BERT encoder")


def read_bert(folder: Path) -> FolderRead:
    """Load a BERT-family folder: the encoder in eval mode, its tokenizer and pooling settings.

    Raises:
        CheckpointError: missing files, another model_type, tensors that do not match config.json.
    """
    folder = Path(folder)
    config = bert_config(folder)
    tokenizer = read_tokenizer(folder, config.max_len)
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(f"{folder.name}: the tokenizer has {tokenizer.vocab_size} tokens but the model "
                              f"{config.vocab_size}")
    weights = read_weights(folder, _our_name)
    model = assign_weights(lambda: BertModel(config), weights, folder.name)
    return FolderRead(model, tokenizer, "bert", "hidden", pooling=pooling(folder))
