"""Read a Hugging Face ModernBERT folder (``model_type`` ``modernbert``: bare, masked LM, sequence and token
classification) into a :class:`~core.model.families.modernbert.ModernBertModel`.

The fused ``Wqkv`` rows are split into the query, key and value projections (D rows each) and ``mlp.Wi``
into the activated input and the gate (F rows each), as views of the stored tensors. ``layer_types`` (or
the older ``global_attn_every_n_layers``), ``local_attention`` (its half is each side's reach) and the
two rotary bases (``rope_parameters`` per layer type, or the older ``global_rope_theta`` /
``local_rope_theta``) are read as ``transformers`` reads them; a rotary scaling, an unknown layer type or
pooling is refused, named. The task head comes from ``architectures``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from torch import Tensor

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_claims import Claims, Stack, check_folder, count
from core.io.pretrained.hf_decoder import (MAX_LEN, Layout, build_config, model_type, refuse_if, setting,
                                           stored_name, token_kind)
from core.io.pretrained.hf_encoder import labels_of, pooling
from core.io.pretrained.hf_files import FolderRead, read_tokenizer, read_weights
from core.model.families.encoder_heads import HeadConfig
from core.model.families.modernbert import LAYER_TYPES, ModernBertConfig, ModernBertModel

_HEADS = {"ForMaskedLM": "masked_lm", "ForSequenceClassification": "classes", "ForTokenClassification": "token_classes"}
_LAYOUT = Layout(  # a bare ModernBertModel's tensors have no "model." prefix
    "model.", {"embeddings.tok_embeddings": "embed", "embeddings.norm": "embed_norm", "final_norm": "norm",
               "head.dense": "head.dense", "head.norm": "head.norm", "decoder": "head.decoder",
               "classifier": "head.classifier"},
    re.compile(r"^layers\.(\d+)\.(.+)$"),
    {"attn_norm": "attn_norm", "attn.Wqkv": "attn.Wqkv", "attn.Wo": "attn.o_proj", "mlp_norm": "mlp_norm",
     "mlp.Wi": "mlp.Wi", "mlp.Wo": "mlp.down_proj"},
)


def _head(raw: dict[str, Any], folder: Path) -> str:
    """The head kind ``architectures`` names (``hidden`` for the bare model)."""
    architectures = raw.get("architectures") or ["ModernBertModel"]
    name = str(architectures[0]) if isinstance(architectures, list) and architectures else str(architectures)
    kind = next((k for suffix, k in _HEADS.items() if name.endswith(suffix)), "hidden" if name.endswith("Model")
                else None)
    refuse_if(kind is None, folder, f"{name[:60]} (the ModernBERT heads that open: Model, {', '.join(_HEADS)})")
    return kind


def _layer_types(raw: dict[str, Any], folder: Path, layers: int) -> tuple[str, ...]:
    listed = raw.get("layer_types")
    if listed is None:
        every = setting(raw, folder, "global_attn_every_n_layers", default=3)
        refuse_if(every < 1, folder, f"global_attn_every_n_layers {every}")
        return tuple("sliding_attention" if i % every else "full_attention" for i in range(layers))
    if not isinstance(listed, list) or any(t not in LAYER_TYPES for t in listed):
        raise CheckpointError(f"{folder.name}: config.json's 'layer_types' must list {' or '.join(LAYER_TYPES)} "
                              f"per layer, got {str(listed)[:60]}")
    return tuple(listed)


def _rope_base(raw: dict[str, Any], folder: Path, kind: str, old_key: str, default: float) -> float:
    """One layer type's rotary base: ``rope_parameters[kind]`` (transformers 5) or the older key; unscaled only."""
    params = raw.get("rope_parameters")
    entry = params.get(kind) if isinstance(params, dict) else None
    entry = entry if isinstance(entry, dict) else {}
    scaling = entry.get("rope_type", entry.get("type", "default"))
    refuse_if(scaling != "default" or raw.get("rope_scaling") is not None, folder,
              f"rotary scaling {scaling if scaling != 'default' else raw.get('rope_scaling')!r} in a ModernBERT")
    return setting({**raw, **entry}, folder, "rope_theta", old_key, default=default, kind=float)


def modernbert_settings(raw: dict[str, Any], folder: Path, labels: int) -> dict[str, Any]:
    """The :class:`ModernBertConfig` keyword arguments of config.json (``labels``: the classifier's rows)."""
    layers = setting(raw, folder, "num_hidden_layers")
    kind = _head(raw, folder)
    pooling_mode = str(raw.get("classifier_pooling", "cls"))
    refuse_if(kind == "classes" and pooling_mode not in ("cls", "mean"), folder, f"classifier_pooling {pooling_mode!r}")
    vocab = setting(raw, folder, "vocab_size")
    return dict(
        vocab_size=vocab, d_model=setting(raw, folder, "hidden_size"), n_encoder_layers=layers,
        n_heads=setting(raw, folder, "num_attention_heads"), d_ff=setting(raw, folder, "intermediate_size"),
        layer_types=_layer_types(raw, folder, layers),
        max_len=min(MAX_LEN, setting(raw, folder, "max_position_embeddings", default=MAX_LEN)),
        norm_eps=setting(raw, folder, "norm_eps", default=1e-5, kind=float),
        norm_bias=setting(raw, folder, "norm_bias", default=False, kind=bool),
        activation=str(raw.get("hidden_activation", "gelu")), pad_id=setting(raw, folder, "pad_token_id", default=0),
        attention_bias=setting(raw, folder, "attention_bias", default=False, kind=bool),
        mlp_bias=setting(raw, folder, "mlp_bias", default=False, kind=bool),
        window=setting(raw, folder, "local_attention", default=128) // 2,
        global_rope_base=_rope_base(raw, folder, "full_attention", "global_rope_theta", 160_000.0),
        local_rope_base=_rope_base(raw, folder, "sliding_attention", "local_rope_theta", 10_000.0),
        head=HeadConfig(kind, n_labels=labels if kind in ("classes", "token_classes") else 0,
                        activation=str(raw.get("classifier_activation", "gelu"))),
        head_bias=setting(raw, folder, "classifier_bias", default=False, kind=bool),
        decoder_bias=setting(raw, folder, "decoder_bias", default=True, kind=bool), pooling=pooling_mode,
    )


def _claims(raw: dict[str, Any], folder: Path) -> Claims:
    width, inner = ("hidden_size", count(raw, folder, "hidden_size")), ("intermediate_size",
                                                                       count(raw, folder, "intermediate_size"))
    layer = {"attn.Wqkv.weight": (("3 × hidden_size", 3 * width[1]), width),
             "mlp.Wi.weight": (("2 × intermediate_size", 2 * inner[1]), width), "mlp.down_proj.weight": (width, inner)}
    return Claims((Stack("layers.", ("num_hidden_layers", count(raw, folder, "num_hidden_layers")), layer),),
                  {"embed.weight": (("vocab_size", count(raw, folder, "vocab_size")), width)},
                  splits=((("num_attention_heads", count(raw, folder, "num_attention_heads")), width),))


def split_fused(weights: dict[str, Tensor], config: ModernBertConfig) -> dict[str, Tensor]:
    """``weights`` with each layer's ``Wqkv`` and ``Wi`` replaced by their parts (row views)."""
    for i in range(config.n_encoder_layers):
        for param in ("weight", "bias"):
            fused = weights.pop(f"layers.{i}.attn.Wqkv.{param}", None)  # (3·D, …)
            if fused is not None:
                for name, part in zip(("q_proj", "k_proj", "v_proj"), fused.chunk(3)):
                    weights[f"layers.{i}.attn.{name}.{param}"] = part
            fused = weights.pop(f"layers.{i}.mlp.Wi.{param}", None)  # (2·F, …): the activated input, then the gate
            if fused is not None:
                gate, up = fused.chunk(2)
                weights[f"layers.{i}.mlp.gate_proj.{param}"], weights[f"layers.{i}.mlp.up_proj.{param}"] = gate, up
    return weights


def read_modernbert(folder: Path) -> FolderRead:
    """Load a ModernBERT folder: the encoder with its head in eval mode, and its tokenizer.

    Raises:
        CheckpointError: missing files, unsupported settings, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw, kind = model_type(folder, ("modernbert",), "a ModernBERT folder")
    headers = check_folder(folder, lambda name: stored_name(name, _LAYOUT, False, "ModernBERT encoder"),
                           _claims(raw, folder))
    classifier = headers.get("classifier.weight")
    settings = modernbert_settings(raw, folder, classifier.shape[0] if classifier is not None else 0)
    config = build_config(folder, kind, ModernBertConfig, **settings)
    head = config.head.kind
    sentence = pooling(folder) if head == "hidden" else {}
    byte_level = token_kind(folder) == "gguf-bpe"  # ModernBERT's own; a WordPiece one shows its ## pieces
    tokenizer = read_tokenizer(folder, config.max_len, kind="gguf-bpe" if byte_level else "wordpiece")
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(f"{folder.name}: the tokenizer has {tokenizer.vocab_size} tokens but the model "
                              f"{config.vocab_size}")

    refuse_if(head == "masked_lm" and raw.get("tie_word_embeddings", True) is not True, folder,
              "a masked-LM decoder not tied to the token embedding (tie_word_embeddings false)")

    def ours(name: str) -> str | None:
        mine = stored_name(name, _LAYOUT, False, "ModernBERT encoder")
        if mine is None or mine == "head.decoder.weight" or head == "hidden" and mine.startswith("head."):
            return None  # the decoder is the embedding; a bare model leaves a stored head unused
        return mine

    weights = split_fused(read_weights(folder, ours), config)
    if head == "masked_lm":
        weights["head.decoder.weight"] = weights["embed.weight"]
    model = assign_weights(lambda: ModernBertModel(config), weights, folder.name)
    labels = labels_of(raw, config.head.n_labels) if head in ("classes", "token_classes") else ()
    return FolderRead(model, tokenizer, "modernbert", head, labels=labels, pooling=sentence)
