"""What the decoder-only folder readers share: reading config.json values with one-line refusals,
the rotary settings (both ``rope_parameters`` and the older ``rope_theta``/``rope_scaling`` keys),
the special ids, stored tensor names (:class:`Layout`), the tokenizer and the final assembly into a
:class:`FolderRead`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from torch import Tensor, nn

from core.io.checkpoint import CheckpointError
from core.io.pretrained.assign import assign_weights
from core.io.pretrained.hf_claims import Claims, check_folder
from core.io.pretrained.hf_files import FolderRead, folder_config, read_json, read_tokenizer, read_weights
from core.model.families.rope import ROPE_TYPES, yarn_mscale

#: The most positions a model is given (its trained context, up to this); each input is bounded by the trace
#: budget of :mod:`core.inspect.subject`.
MAX_LEN = 131_072


@dataclass(frozen=True)
class Layout:
    """How one model_type names its tensors: a prefix to drop, top-level and per-layer module names.

    Attributes:
        layer: regex of a layer's module name, groups (layer index, module inside the layer).
        ignored: endings of stored buffers that are not weights (recomputed masks, ``inv_freq``).
    """

    prefix: str
    top: dict[str, str]
    layer: re.Pattern
    layer_names: dict[str, str]
    ignored: tuple[str, ...] = ()


def stored_name(name: str, layout: Layout, tied: bool, model: str) -> str | None:
    """Our parameter name for a stored tensor; None for buffers and a tied head.

    Raises:
        CheckpointError: a tensor the layout does not name (``model`` says what was being read).
    """
    if name.endswith(layout.ignored):
        return None
    module, _, param = name.removeprefix(layout.prefix).rpartition(".")
    if module == "lm_head" and tied:
        return None  # the tied head is the embedding
    if module in layout.top:
        return f"{layout.top[module]}.{param}"
    match = layout.layer.match(module)
    if match and match.group(2) in layout.layer_names:
        return f"layers.{match.group(1)}.{layout.layer_names[match.group(2)]}.{param}"
    raise CheckpointError(f"unexpected tensor {name!r} for a {model}")


def model_type(folder: Path, supported: tuple[str, ...], what: str) -> tuple[dict[str, Any], str]:
    """``folder/config.json`` and its ``model_type``, refused unless one of ``supported`` (``what`` names them)."""
    raw = folder_config(folder)
    kind = raw.get("model_type")
    if kind not in supported:
        raise CheckpointError(f"{folder.name}: model_type {kind!r} is not {what}; "
                              f"supported: {', '.join(supported)}")
    return raw, kind


def build_config(folder: Path, kind: str, make: Callable[..., Any], **values: Any) -> Any:
    """``make(**values)``, its ``ValueError`` turned into one :class:`CheckpointError` line."""
    try:
        return make(**values)
    except ValueError as error:
        raise CheckpointError(f"{folder.name}: config.json describes no valid {kind} model ({error})") from None


def setting(raw: dict[str, Any], folder: Path, *keys: str, default: Any = None, kind: type = int) -> Any:
    """The first of ``keys`` present (and not null) in config.json, converted to ``kind``.

    Raises:
        CheckpointError: none present and no default, or a value of the wrong type.
    """
    for key in keys:
        value = raw.get(key)
        if value is None:
            continue
        if kind is bool and not isinstance(value, bool):
            _bad(folder, key, value)
        try:
            return kind(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(1e400)
            _bad(folder, key, value)
    if default is None:
        raise CheckpointError(f"{folder.name}: config.json has no {keys[0]!r}")
    return default


def _bad(folder: Path, key: str, value: Any):
    raise CheckpointError(f"{folder.name}: config.json's {key!r} has an invalid value {value!r}")


#: The keys each rotary scaling type reads (besides the type itself, ``rope_theta`` and ``partial_rotary_factor``),
#: as ``transformers``' ``modeling_rope_utils`` validates them; any other key is refused by name.
ROPE_KEYS = {
    "default": (), "linear": ("factor",), "dynamic": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow", "mscale",
             "mscale_all_dim", "truncate"),
}
_ROPE_COMMON = ("rope_type", "type", "rope_theta", "partial_rotary_factor")


def rope_settings(raw: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Rotary base, partial fraction and scaling from config.json (transformers 4 or 5 layout).

    Returns:
        ``{"base", "fraction", "type", "factor", "low", "high", "original", "beta_fast", "beta_slow",
        "truncate", "attention_factor"}``: :class:`~core.model.families.rope.RopeScaling`'s fields, with the
        defaults ``transformers`` gives missing keys.

    Raises:
        CheckpointError: a scaling type other than :data:`ROPE_TYPES`, or a key the type does not read, named.
    """
    for key in ("rope_parameters", "rope_scaling"):
        if raw.get(key) is not None and not isinstance(raw[key], dict):
            raise CheckpointError(f"{folder.name}: config.json's {key!r} must be an object, got {raw[key]!r}")
    params, scaling = raw.get("rope_parameters") or {}, raw.get("rope_scaling") or {}
    merged = {**scaling, **params}
    kind = str(merged.get("rope_type", merged.get("type", "default")))
    if kind not in ROPE_TYPES:
        raise CheckpointError(f"{folder.name}: rope scaling type {kind!r} is not supported; "
                              f"supported: {', '.join(ROPE_TYPES)}")
    unknown = sorted(set(merged) - set(_ROPE_COMMON) - set(ROPE_KEYS[kind]))
    if unknown:
        raise CheckpointError(f"{folder.name}: config.json's rope scaling key {unknown[0]!r} is not understood "
                              f"for type {kind!r}; understood: {', '.join(ROPE_KEYS[kind]) or 'none'}")
    values = {**raw, **merged}
    base = setting(values, folder, "rope_theta", "rotary_emb_base", default=10000.0, kind=float)
    if not math.isfinite(base) or base <= 0:  # refused here, before the tokenizer is read or anything built
        raise CheckpointError(f"{folder.name}: config.json's rotary base must be a finite number above 0, got {base!r}")
    trained = setting(raw, folder, "max_position_embeddings", default=8192)
    # llama3 / yarn: the pretrained context (a top-level key wins, as transformers reads Phi-3's), else the
    # trained one; dynamic grows the base past the trained context itself
    original = trained if kind == "dynamic" else setting(
        raw, folder, "original_max_position_embeddings",
        default=setting(merged, folder, "original_max_position_embeddings", default=trained))
    return {
        "base": base,
        "fraction": setting(values, folder, "partial_rotary_factor", "rotary_pct", default=1.0, kind=float),
        "type": kind,
        "factor": _factor(merged, kind, trained, original, folder),
        "low": setting(merged, folder, "low_freq_factor", default=1.0, kind=float),
        "high": setting(merged, folder, "high_freq_factor", default=4.0, kind=float),
        "original": original,
        "beta_fast": setting(merged, folder, "beta_fast", default=32.0, kind=float),
        "beta_slow": setting(merged, folder, "beta_slow", default=1.0, kind=float),
        "truncate": setting(merged, folder, "truncate", default=True, kind=bool),
        "attention_factor": _attention_factor(merged, kind, folder),
    }


def _factor(merged: dict[str, Any], kind: str, trained: int, original: int, folder: Path) -> float:
    """The scaling factor (``yarn`` without one: the trained context over the original, as ``transformers``)."""
    if kind == "yarn" and merged.get("factor") is None:
        return trained / original
    return setting(merged, folder, "factor", default=1.0, kind=float)


def _attention_factor(merged: dict[str, Any], kind: str, folder: Path) -> float | None:
    """``yarn``'s cos/sin multiplier: given, else from ``mscale`` and ``mscale_all_dim`` when both are set,
    else None (derived from the factor alone)."""
    if kind != "yarn":
        return None
    if merged.get("attention_factor") is not None:
        return setting(merged, folder, "attention_factor", kind=float)
    mscale, all_dim = merged.get("mscale"), merged.get("mscale_all_dim")
    if not (mscale and all_dim):
        return None
    factor = setting(merged, folder, "factor", default=1.0, kind=float)
    return yarn_mscale(factor, setting(merged, folder, "mscale", kind=float)) / yarn_mscale(
        factor, setting(merged, folder, "mscale_all_dim", kind=float))


def refuse_unknown_keys(raw: dict[str, Any], folder: Path, understood: set[str], pattern: re.Pattern) -> None:
    """Refuse a config.json key that ``pattern`` marks as changing the attention or positions (``attn``,
    ``rope``, ``window`` …) unless it is one of ``understood``: a setting the reader would otherwise ignore
    silently (Gemma 2's soft-capping, Llama 4's chunked attention …) is named instead."""
    unknown = sorted(k for k in raw if pattern.search(k) and k not in understood)
    if unknown:
        raise CheckpointError(f"{folder.name}: config.json's {unknown[0]!r} is not understood by this reader "
                              "(it would change the attention or the positions)")


def special_ids(raw: dict[str, Any], folder: Path, vocab_size: int) -> dict[str, int | None]:
    """``bos_id``, ``eos_id`` and ``pad_id`` (pad falls back to eos, then 0) from config.json."""
    def one(key: str) -> int | None:
        value = raw.get(key)
        if isinstance(value, list):  # several end ids (Llama 3 instruct): the first ends decoding
            value = value[0] if value else None
        if value is None:
            return None
        if not isinstance(value, int) or not 0 <= value < vocab_size:
            raise CheckpointError(f"{folder.name}: {key} {value!r} is outside the vocabulary of {vocab_size}")
        return value

    bos, eos, pad = one("bos_token_id"), one("eos_token_id"), one("pad_token_id")
    return {"bos_id": bos, "eos_id": eos, "pad_id": pad if pad is not None else (eos if eos is not None else 0)}


def refuse_if(condition: bool, folder: Path, what: str) -> None:
    """Raise one :class:`CheckpointError` line ``folder: what is not supported`` when ``condition``."""
    if condition:
        raise CheckpointError(f"{folder.name}: {what} is not supported")


def token_kind(folder: Path) -> str:
    """``gguf-bpe`` (tokens shown as text: ``Ġthe`` → `` the``) for a byte-level BPE tokenizer.json, else ``bpe``."""
    path = folder / "tokenizer.json"
    decoder = read_json(path, folder).get("decoder") if path.is_file() else None
    return "gguf-bpe" if "ByteLevel" in json.dumps(decoder) else "bpe"


def read_decoder(folder: Path, kind: str, settings: dict[str, Any], claims: Claims, layout: Layout, label: str,
                 config_type: Callable[..., Any], build: Callable[[Any], nn.Module], *,
                 adapt: Callable[[dict[str, Tensor], Any], dict[str, Tensor]] | None = None,
                 keep_dtype: bool = True) -> FolderRead:
    """A decoder folder read in the order every family keeps: config.json's ``claims`` checked against the
    headers before any weight is read, the config built from ``settings``, the weights read under our names
    (``layout``; ``adapt`` splits fused ones), then the model (``build(config)`` on meta, the weights assigned
    and checked) and its byte-level BPE tokenizer. A tied ``lm_head`` shares ``embed.weight``.

    Raises:
        CheckpointError: a claim the headers do not bear out, invalid sizes, unreadable or missing weights, or a
            tokenizer larger than the vocabulary.
    """
    check_folder(folder, lambda name: stored_name(name, layout, False, label), claims)
    config = build_config(folder, kind, config_type, **settings)
    weights = read_weights(folder, lambda name: stored_name(name, layout, config.tie_embeddings, label),
                           keep_dtype=keep_dtype)
    weights = adapt(weights, config) if adapt else weights
    if config.tie_embeddings and "embed.weight" in weights:
        weights["lm_head.weight"] = weights["embed.weight"]
    tokenizer = read_tokenizer(folder, config.max_len, kind=token_kind(folder))
    if tokenizer.vocab_size > config.vocab_size:
        raise CheckpointError(f"{folder.name}: the tokenizer has {tokenizer.vocab_size} tokens but the model "
                              f"{config.vocab_size}")
    model = assign_weights(lambda: build(config), weights, folder.name)
    return FolderRead(model, tokenizer, kind, "next_token")
