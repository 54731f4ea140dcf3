"""What every BERT-like family's reader shares: the task head, tensor names, checks, then the model.

A family (``hf_bert.py``, ``hf_distilbert.py``, ``hf_albert.py``) describes itself as an
:class:`EncoderFamily`: how its ``config.json`` becomes :class:`BertConfig` settings, how its
stored tensor names become ours, and its head modules. :func:`read_encoder` then

1. picks the head from ``architectures`` in ``config.json`` (else from the tensors present);
2. names every stored tensor, refusing unknown ones in one line that names them;
3. checks what the config claims (layer count, heads, the embedding and layer shapes, the parameter
   count) against the safetensors headers (:mod:`hf_claims`) before any config object or module is
   built or any tensor data read (a config claiming 100,000 layers costs milliseconds), then every
   shape against the model built on the meta device;
4. reads the weights, builds the model and returns a :class:`FolderRead`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_claims import Claims, Stack, check_claims
from core.io.pretrained.hf_files import (FolderRead, folder_config, inside, read_capped_file, read_headers, read_json,
                                         read_tokenizer, read_weights)
from core.model.families.bert import BertConfig, BertModel
from core.model.families.encoder_heads import HeadConfig

_ALWAYS_IGNORED = ("embeddings.position_ids", "embeddings.token_type_ids")  # constant buffers of old saves
#: Our :class:`BertConfig` setting → the config.json key BERT stores it under (a family may rename some).
BERT_KEYS = {"vocab_size": "vocab_size", "d_model": "hidden_size", "n_encoder_layers": "num_hidden_layers",
             "n_heads": "num_attention_heads", "d_ff": "intermediate_size", "embedding_size": "embedding_size",
             "shared_layers": "num_hidden_groups"}

#: Our module of each part of a post-norm layer, in the order a family lists its stored names.
LAYER_PARTS = ("attn.query", "attn.key", "attn.value", "attn.out", "attn_norm", "up", "down", "ffn_norm")
#: BERT's stored embedding modules → ours (ALBERT keeps them; ELECTRA adds its projection).
BERT_EMBEDDINGS = {
    "embeddings.word_embeddings": "embed.word", "embeddings.position_embeddings": "embed.position",
    "embeddings.token_type_embeddings": "embed.token_type", "embeddings.LayerNorm": "embed.norm",
}


def layer_names(*parts: str) -> dict[str, str]:
    """Stored module inside a layer → ours, from the stored names in :data:`LAYER_PARTS`' order."""
    return dict(zip(parts, LAYER_PARTS, strict=True))


def body_names(layer: str, names: dict[str, str], embeddings: dict[str, str]) -> Callable[[str], str | None]:
    """A family's :attr:`EncoderFamily.body`: stored name (prefix removed) → ours, None when not a body tensor.

    Args:
        layer: regex of a layer's stored module name, groups (layer index, module inside the layer).
        names: stored module inside a layer → ours (:func:`layer_names`).
        embeddings: stored embedding module → ours.
    """
    pattern = re.compile(layer)

    def body(name: str) -> str | None:
        module, _, param = name.rpartition(".")
        if module in embeddings:
            return f"{embeddings[module]}.{param}"
        match = pattern.match(module)
        if match and match.group(2) in names:
            return f"layers.{match.group(1)}.{names[match.group(2)]}.{param}"
        return None

    return body


@dataclass(frozen=True)
class HeadNames:
    """One head of a family: its kind, stored module (or parameter) names → ours, and its settings."""

    kind: str
    names: dict[str, str]
    activation: str = "gelu"
    activation_key: str = ""  # config.json key naming the activation instead (``hidden_act``), if any
    width_key: str = ""  # config.json key of a masked-LM head's inner width (ELECTRA/ALBERT: embedding_size)
    dense: bool = False  # a token head with a dense layer before ``out`` (ELECTRA's discriminator)
    ignored: tuple[str, ...] = ()  # stored prefixes this head leaves unused (BERT's next-sentence head)
    labels: tuple[str, ...] = ()  # fixed class names (ELECTRA's discriminator: "replaced")


@dataclass(frozen=True)
class EncoderFamily:
    """How one BERT-like family's folder maps onto :class:`BertModel`.

    Attributes:
        name: the family's short name (``bert``, ``roberta``, …).
        prefix: the stored base-model prefix (``bert.``), absent in a bare base model's folder.
        settings: ``config.json`` → :class:`BertConfig` keyword arguments (no ``head``); raises
            ``KeyError``/``TypeError``/``ValueError`` or :class:`CheckpointError`.
        body: a stored name without prefix → our name (embeddings and layers), None if not a body tensor.
        heads: ``architectures`` suffix (``ForMaskedLM``) → its :class:`HeadNames`; ``…Model`` has none.
        unused: stored prefixes of heads the ``hidden`` model leaves unused (poolers, pre-training heads).
        keys: our setting → its config.json key, for refusals (:data:`BERT_KEYS`).
        config / model: the config and model classes (BERT's unless the family has its own layers: DeBERTa).
        claims: the settings' :class:`Claims` (``claims(settings, keys)``; :func:`encoder_claims` for BERT's).
    """

    name: str
    prefix: str
    settings: Callable[[dict[str, Any]], dict[str, Any]]
    body: Callable[[str], str | None]
    heads: dict[str, HeadNames] = field(default_factory=dict)
    unused: tuple[str, ...] = ()
    keys: dict[str, str] = field(default_factory=lambda: dict(BERT_KEYS))
    config: Callable[..., Any] = BertConfig
    model: Callable[[Any], nn.Module] = BertModel
    claims: Callable[[dict[str, Any], dict[str, str]], Claims] | None = None


def _head_name(name: str, names: dict[str, str]) -> str | None:
    """A stored head tensor's name under ours, by its parameter name or its longest module prefix."""
    if name in names:
        return names[name]
    module, _, param = name.rpartition(".")
    for stored in sorted(names, key=len, reverse=True):
        if module == stored or module.startswith(stored + "."):
            return f"{names[stored]}{module[len(stored):]}.{param}"
    return None


def choose_head(folder: Path, raw: dict[str, Any], stored: list[str], family: EncoderFamily) -> HeadNames | None:
    """The head (None: the bare encoder) from ``architectures``' first entry, else from the head tensors present.

    A sentence-transformers folder (``modules.json``) whose weights hold none of the named head's tensors
    is the bare encoder sentence-transformers reads (all-mpnet-base-v2 names ``MPNetForMaskedLM``).

    Raises:
        CheckpointError: an architecture whose head is not supported.
    """
    architectures = raw.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        architecture = architectures[0]
        suffix = next((s for s in sorted(family.heads, key=len, reverse=True) if architecture.endswith(s)), None)
        if suffix is None and not architecture.endswith("Model"):
            raise CheckpointError(f"{folder.name}: {architecture} is not supported; the {family.name} heads that "
                                  f"open: Model, {', '.join(family.heads)}")
        head = family.heads[suffix] if suffix else None
        if head is not None and (folder / "modules.json").is_file() and not any(
                _head_name(name, head.names) for name in stored):
            return None
        return head
    best, score = None, (0.0, 0)
    for head in family.heads.values():  # the head whose modules are most completely present
        present = {k for k in head.names for name in stored if _head_name(name, {k: k})}
        if present and (len(present) / len(head.names), len(present)) > score:
            best, score = head, (len(present) / len(head.names), len(present))
    return best


def current_name(name: str) -> str:
    """A stored name in today's spelling: old TensorFlow-converted checkpoints call LayerNorm's gain and bias
    ``LayerNorm.gamma`` and ``LayerNorm.beta``, which ``transformers`` renames on load."""
    for old, new in (("LayerNorm.gamma", "LayerNorm.weight"), ("LayerNorm.beta", "LayerNorm.bias")):
        if name.endswith(old):
            return name[: -len(old)] + new
    return name


def name_tensors(folder: Path, stored: list[str], family: EncoderFamily, head: HeadNames | None) -> dict[str, str]:
    """Stored name → our name for every tensor the model uses (the others skipped by name; legacy
    ``LayerNorm.gamma``/``beta`` read as ``weight``/``bias``).

    Raises:
        CheckpointError: one line naming the tensors this family and head do not know, or stored twice
            (under the legacy and the current name).
    """
    skipped = _ALWAYS_IGNORED + (head.ignored if head else family.unused)
    ours, unknown, seen = {}, [], {}
    for name in stored:
        current = current_name(name)
        bare = current.removeprefix(family.prefix)
        mapped = (_head_name(current, head.names) if head else None) or family.body(bare)
        if mapped is not None and mapped in seen:
            raise CheckpointError(f"{folder.name}: {seen[mapped]} and {name} are the same weight")
        if mapped is not None:
            ours[name], seen[mapped] = mapped, name
        elif not bare.startswith(skipped):
            unknown.append(name)
    if unknown:
        kind = head.kind if head else "hidden"
        raise CheckpointError(f"{folder.name}: unexpected tensor(s) for a {family.name} {kind} model: "
                              f"{', '.join(unknown[:5])}{' …' if len(unknown) > 5 else ''}")
    return ours


def encoder_claims(settings: dict[str, Any], keys: dict[str, str]) -> Claims:
    """What :class:`BertConfig` ``settings`` claim: the layers with their own weights, the heads splitting
    the width, the word, position and token-type embeddings (at E), each layer's query, up and down projections."""
    def dim(ours: str) -> tuple[str, int]:
        return keys.get(ours, ours), settings[ours]

    width, inner, shared = dim("d_model"), dim("d_ff"), bool(settings.get("shared_layers"))
    embed = dim("embedding_size") if settings.get("embedding_size") else width
    layer = {"attn.query.weight": (width, width), "up.weight": (inner, width), "down.weight": (width, inner)}
    positions = ("max_position_embeddings", settings["max_len"] + settings.get("position_offset", 0))
    tensors = {"embed.word.weight": (dim("vocab_size"), embed), "embed.position.weight": (positions, embed)}
    if settings.get("type_vocab_size"):
        tensors["embed.token_type.weight"] = (("type_vocab_size", settings["type_vocab_size"]), embed)
    return Claims((Stack("layers.", dim("shared_layers" if shared else "n_encoder_layers"), layer),), tensors,
                  splits=((dim("n_heads"), width),), runs=(dim("n_encoder_layers"),) if shared else ())


def check_shapes(folder: Path, config: Any, found: dict[str, tuple[int, ...]],
                 model: Callable[[Any], nn.Module] = BertModel) -> None:
    """Every tensor's shape against ``model(config)`` built on the meta device, once the claims held.

    Raises:
        CheckpointError: one line naming the first disagreement.
    """
    with torch.device("meta"):
        expected = {k: tuple(v.shape) for k, v in model(config).state_dict().items()}
    missing, extra = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    wrong = [(k, found[k], expected[k]) for k in expected if k in found and found[k] != expected[k]]
    if missing or extra or wrong:
        detail = (f"missing {missing[:4]}" if missing else f"unexpected {extra[:4]}" if extra
                  else f"{wrong[0][0]} is {wrong[0][1]}, config says {wrong[0][2]}")
        raise CheckpointError(f"{folder.name}: the weights do not match config.json ({detail})")


def labels_of(raw: dict[str, Any], count: int) -> tuple[str, ...]:
    """The class names in id order: ``id2label`` when it names ``count`` classes, else ``LABEL_i``."""
    table = raw.get("id2label")
    if isinstance(table, dict) and len(table) == count:
        try:
            return tuple(str(table[k]) for k in sorted(table, key=int))
        except (TypeError, ValueError):
            pass
    return tuple(f"LABEL_{i}" for i in range(count))


def pooling(folder: Path) -> dict[str, Any]:
    """How a sentence vector is made: ``{"mode": "mean" | "cls", "normalize": bool}``.

    From sentence-transformers' ``modules.json`` (a list of objects whose ``path`` stays inside the
    folder) and pooling config when present; a plain folder gets the mean over tokens, normalised
    (as all-MiniLM-L6-v2 does).

    Raises:
        CheckpointError: ``modules.json`` is not valid JSON, not a list of objects, has a path or type
            that is not text, or a path leading out of the folder.
    """
    modules = folder / "modules.json"
    if not modules.is_file():
        return {"mode": "mean", "normalize": True}
    try:
        entries = json.loads(read_capped_file(modules, folder))
    except (ValueError, RecursionError):
        raise CheckpointError(f"{folder.name}: modules.json is not valid JSON") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CheckpointError(f"{folder.name}: modules.json must be a list of objects")
    if not all(isinstance(e.get("path", ""), str) and isinstance(e.get("type", ""), str) for e in entries):
        raise CheckpointError(f"{folder.name}: modules.json has a path or type that is not text")
    kinds = [e.get("type", "").rsplit(".", 1)[-1] for e in entries]
    mode = "mean"
    for entry in entries:
        settings = inside(folder, entry.get("path", "")) / "config.json"  # every path checked, used or not
        if entry.get("type", "").endswith("Pooling") and settings.is_file():
            mode = "cls" if read_json(settings, folder).get("pooling_mode_cls_token") else "mean"
    return {"mode": mode, "normalize": "Normalize" in kinds}


def _head_config(raw: dict[str, Any], head: HeadNames | None, found: dict[str, tuple[int, ...]]) -> HeadConfig:
    if head is None:
        return HeadConfig()
    if not any(name.startswith("head.") for name in found):
        raise CheckpointError(f"config.json names a {head.kind} model but the weights hold no head tensors")
    out = found.get("head.out.weight")
    activation = str(raw.get(head.activation_key, head.activation)) if head.activation_key else head.activation
    return HeadConfig(head.kind, n_labels=out[0] if out else 0, activation=activation,
                      width=int(raw.get(head.width_key) or 0) if head.width_key else 0, dense=head.dense)


def _refused_in(folder: Path, make: Callable[[], Any]) -> Any:
    """``make()``, its faults one :class:`CheckpointError` line naming ``folder``."""
    try:
        return make()
    except (KeyError, TypeError, ValueError, OverflowError) as error:  # OverflowError: int(1e400)
        raise CheckpointError(f"{folder.name}: config.json is incomplete or invalid ({error})") from None
    except CheckpointError as error:
        raise CheckpointError(f"{folder.name}: {error}") from None


def read_encoder(folder: Path, family: EncoderFamily) -> FolderRead:
    """Open a BERT-like folder of ``family`` (see the module's steps).

    Raises:
        CheckpointError: missing files, unsupported settings or heads, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw = folder_config(folder)
    headers = read_headers(folder)
    shapes = {name: header.shape for name, header in headers.items()}
    head = choose_head(folder, raw, sorted(current_name(name) for name in shapes), family)
    kind = head.kind if head else "hidden"
    ours = name_tensors(folder, sorted(shapes), family, head)
    found = {mine: shapes[name] for name, mine in ours.items()}
    if kind == "masked_lm" and "head.decoder.weight" not in found and "embed.word.weight" in found:
        found["head.decoder.weight"] = found["embed.word.weight"]  # tied to the word embeddings
    settings = _refused_in(folder, lambda: family.settings(raw))
    claims = (family.claims or encoder_claims)(settings, family.keys)
    check_claims(folder, headers, ours, claims)  # before anything is built
    config = _refused_in(folder, lambda: family.config(**settings, head=_head_config(raw, head, found)))
    check_shapes(folder, config, found, family.model)
    sentence = pooling(folder) if kind == "hidden" else {}  # modules.json checked before any weight is read
    tokenizer = read_tokenizer(folder, config.max_len)
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(f"{folder.name}: the tokenizer has {tokenizer.vocab_size} tokens but the model "
                              f"{config.vocab_size}")
    weights = read_weights(folder, ours.get)
    if kind == "masked_lm" and "head.decoder.weight" not in weights:
        weights["head.decoder.weight"] = weights["embed.word.weight"]
    model = assign_weights(lambda: family.model(config), weights, folder.name)
    labels = (head.labels or labels_of(raw, config.head.n_labels)) if kind in ("classes", "token_classes") else ()
    return FolderRead(model, tokenizer, family.name, kind, labels=labels,
                      pooling=sentence)
