"""The only place that reads or writes model weights: one self-describing ``.safetensors`` file.

Tensors hold the weights (plus optional extra tensors such as attention snapshots);
the header metadata (str → str, JSON values) holds the format version, the
``ModelConfig``, the tokenizer(s), the task, metrics and free-form extra data, a record of
the model's answer to a fixed probe, and a SHA-256 over all of it, verified on load.
Nothing is ever unpickled.

Loading is ordered so that a hostile file cannot make us allocate: the header (metadata and
tensor shapes, no tensor data) is read, the config is checked against its bounds and the
size budget (:data:`core.config.LOAD_BUDGET`) and against the header's shapes and dtypes;
only then is anything read, hashed (once per version of the file) or built. Every fault is a
:class:`CheckpointError`.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as safetensors_bytes
from torch import Tensor

from core.config import ModelConfig
from core.budget import LOAD_BUDGET, Budget, check_budget
from core.text.tokenizer import Tokenizer
from core.io.atomic import clean_stale_temp_files, write_atomic
from core.io.run_record import RunRecord
from core.io.verify import (EXTRA_PREFIX, TIED, CheckpointError, DigestCache, check_extra_bytes, check_finite,
                            check_header_size, check_layout, check_probe, digest, looks_like_hf_weights, probe_record)
from core.model.transformer import Transformer

log = logging.getLogger(__name__)

__all__ = ["CheckpointError", "CheckpointInfo", "Checkpoint", "save", "read_info", "load", "header_entries",
           "info_from_header",
           "clean_stale_temp_files", "FORMAT", "FORMAT_VERSION", "EXTRA_PREFIX"]

FORMAT = "attnscope"
FORMAT_VERSION = 1
_VERIFIED = DigestCache()


@dataclass(frozen=True)
class CheckpointInfo:
    """A checkpoint's header: everything but the weights (cheap to read)."""

    path: Path
    config: ModelConfig
    tokenizers: dict[str, Tokenizer]
    task: str | None
    metrics: dict[str, Any]
    extra: dict[str, Any]
    sha256: str
    probe: str | None = field(default=None, repr=False, compare=False)  # see core.io.verify.check_probe

    @property
    def run(self) -> RunRecord:
        """The typed view of ``extra``: labels, best step, training settings, history."""
        return RunRecord(self.extra)


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the model in ``eval()`` mode plus its header and extra tensors."""

    model: Transformer
    info: CheckpointInfo
    extra_tensors: dict[str, Tensor] = field(default_factory=dict)

    @property
    def config(self) -> ModelConfig:
        """The model's config."""
        return self.info.config

    @property
    def source_tokenizer(self) -> Tokenizer | None:
        """The encoder's tokenizer, if any."""
        return self.info.tokenizers.get("source")

    @property
    def target_tokenizer(self) -> Tokenizer | None:
        """The decoder's tokenizer, if any."""
        return self.info.tokenizers.get("target")


def save(
    path: str | os.PathLike,
    model: Transformer,
    tokenizers: dict[str, Tokenizer],
    *,
    task: str | None = None,
    metrics: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    extra_tensors: dict[str, Tensor] | None = None,
) -> str:
    """Write ``model`` and its description atomically to ``path``.

    Stale temp files of saves killed earlier in the same folder are removed first.

    Args:
        tokenizers: ``{"source": ..., "target": ...}`` as the architecture needs.
        task: the built-in task name the model was trained on, if any.
        metrics: JSON-serialisable test/validation metrics.
        extra: any other JSON-serialisable data (history, snapshot index, command).
        extra_tensors: additional tensors (e.g. attention snapshots), stored under ``extra/``.

    Returns:
        the SHA-256 recorded in the file.

    Raises:
        CheckpointError: the file could not be written; any previous file is untouched.
    """
    path = Path(path)
    tensors = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_embeddings:
        del tensors[TIED[0]]
    for name, tensor in (extra_tensors or {}).items():
        tensors[EXTRA_PREFIX + name] = tensor.detach().cpu().contiguous()
    try:
        metadata = {
            "format": FORMAT,
            "format_version": str(FORMAT_VERSION),
            "config": model.config.to_json(),
            "tokenizers": json.dumps({role: tok.to_json() for role, tok in tokenizers.items()}),
            "task": json.dumps(task),
            "metrics": json.dumps(metrics or {}),
            "extra": json.dumps(extra or {}),
            "probe": json.dumps(probe_record(model)),
        }
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"cannot save {path.name}: metadata is not JSON-serialisable ({error})") from None
    metadata["sha256"] = _digest(tensors, metadata)
    write_atomic(path, safetensors_bytes(tensors, metadata=metadata))
    log.debug("saved checkpoint %s (%d tensors)", path, len(tensors))
    return metadata["sha256"]


def _digest(tensors: dict[str, Tensor], metadata: dict[str, str]) -> str:
    """The checksum of in-memory tensors and metadata (see :func:`core.io.verify.digest`)."""
    return digest(sorted(tensors.items()), metadata)


def read_info(path: str | os.PathLike, *, budget: Budget = LOAD_BUDGET, verify: bool = True) -> CheckpointInfo:
    """Read and verify a checkpoint's header without building the model.

    Checks the config against its bounds, ``budget`` and the tensor shapes, and verifies the
    checksum (reading one tensor at a time; skipped when this version of the file was verified). Without
    ``verify`` only the header is read (a file read in place whose model is loaded elsewhere: its loader
    verifies it there).

    Raises:
        CheckpointError: missing, unreadable, corrupted, over budget or invalid file.
    """
    return _guarded(Path(path), budget, with_weights=False, verify=verify)[0]


def load(path: str | os.PathLike, device: torch.device | str = "cpu", *, budget: Budget = LOAD_BUDGET) -> Checkpoint:
    """Load, verify and rebuild a checkpoint.

    Before anything is allocated: bounds, ``budget``, header shapes and dtypes (float32 weights).
    Then the checksum (once per version of the file), finite values in every tensor (weights and
    extra tensors), a strict ``load_state_dict``, and the probe record (config fields that do
    not show in shapes, such as ``n_heads``).

    Raises:
        CheckpointError: for every fault, with a message naming the file.
    """
    info, tensors = _guarded(Path(path), budget, with_weights=True)
    name = info.path.name
    extra = {k[len(EXTRA_PREFIX):]: v for k, v in tensors.items() if k.startswith(EXTRA_PREFIX)}
    weights = {k: v for k, v in tensors.items() if not k.startswith(EXTRA_PREFIX)}
    if info.config.tie_embeddings:
        weights[TIED[0]] = weights[TIED[1]]
    try:
        with torch.random.fork_rng(devices=[]):  # random initialisation, overwritten: leave the global RNG alone
            model = Transformer(info.config)
        model.load_state_dict(weights, strict=True)
        model.eval()
        check_probe(name, model, info.probe)
        model = model.to(device)
    except CheckpointError:
        raise
    except Exception as error:  # noqa: BLE001 - the untrusted-input boundary (CUDA out-of-memory included)
        raise CheckpointError(f"{name} cannot be loaded: {type(error).__name__}: {_short(error)}") from None
    return Checkpoint(model, info, extra)


def _guarded(path: Path, budget: Budget, *, with_weights: bool,
             verify: bool = True) -> tuple[CheckpointInfo, dict[str, Tensor]]:
    """:func:`_open` with every exception turned into a CheckpointError naming the file."""
    try:
        if not path.exists() and not path.is_symlink():
            raise CheckpointError(f"checkpoint not found: {path.name}")
        if not path.is_file():  # a folder, a FIFO, a device: never opened
            raise CheckpointError(f"checkpoint {path.name} is not a file" if path.exists()
                                  else f"checkpoint not found: {path.name} (a broken link)")
        return _open(path, budget, with_weights, verify)
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(f"{path.name} has invalid metadata: JSON nested too deeply") from None
    except MemoryError:
        raise CheckpointError(f"{path.name} is too large to read") from None
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path.name} is not a readable safetensors file ({_short(error)})") from None
    except Exception as error:  # noqa: BLE001 - the untrusted-input boundary: nothing else may escape
        log.debug("unexpected error reading %s", path, exc_info=True)
        raise CheckpointError(f"{path.name} cannot be read: {type(error).__name__}: {_short(error)}") from None


def _short(error: BaseException, limit: int = 300) -> str:
    """An exception's text cut to ``limit`` characters (messages may quote untrusted input)."""
    text = str(error)
    return text if len(text) <= limit else text[:limit] + "…"


def _open(path: Path, budget: Budget, with_weights: bool, verify: bool) -> tuple[CheckpointInfo, dict[str, Tensor]]:
    name, before = path.name, _stat_key(path)
    check_header_size(path)
    with safe_open(str(path), framework="pt", device="cpu") as handle:
        metadata = handle.metadata() or {}
        if metadata.get("format") != FORMAT:
            if looks_like_hf_weights(path, metadata):
                raise CheckpointError(f"{name} is a Hugging Face weights file, not an Attnscope checkpoint: open "
                                      "the folder that holds it (with its config.json and tokenizer) as a pretrained "
                                      "model")
            raise CheckpointError(f"{name} is a safetensors file but not an Attnscope checkpoint")
        if metadata.get("format_version") != str(FORMAT_VERSION):
            raise CheckpointError(f"{name} has format version {str(metadata.get('format_version'))[:20]!r}; "
                                  f"this Attnscope reads version {FORMAT_VERSION}")
        info = _parse_info(path, metadata, budget)
        header = {}
        for key in handle.keys():
            view = handle.get_slice(key)
            header[key] = (view.get_dtype(), tuple(view.get_shape()))
        check_layout(name, info.config, header)  # every check so far read the header only
        check_extra_bytes(name, header, budget.max_extra_bytes)
        tensors = {k: handle.get_tensor(k) for k in sorted(header)} if with_weights else {}
        check_finite(name, tensors)
        version = (*before, info.sha256)
        if verify and version not in _VERIFIED:
            stream = tensors.items() if with_weights else ((k, handle.get_tensor(k)) for k in sorted(header))
            if info.sha256 != digest(stream, metadata):
                raise CheckpointError(f"{name} is corrupted: checksum mismatch")
            if _stat_key(path) != before:
                raise CheckpointError(f"{name} changed while it was being read; try again")
            _VERIFIED.add(version)
    return info, tensors


def header_entries(info: CheckpointInfo) -> dict[str, str]:
    """The metadata entries of ``info`` as the file's header holds them (text values), for a process that reads
    a checkpoint it does not load: :func:`info_from_header` rebuilds the same ``info`` from them."""
    return {"config": info.config.to_json(),
            "tokenizers": json.dumps({role: tok.to_json() for role, tok in info.tokenizers.items()}),
            "task": json.dumps(info.task), "metrics": json.dumps(info.metrics), "extra": json.dumps(info.extra),
            "sha256": info.sha256}


def info_from_header(path: str | os.PathLike, entries: dict[str, str], *, budget: Budget = LOAD_BUDGET) -> CheckpointInfo:
    """The :class:`CheckpointInfo` of a checkpoint at ``path`` from its header's entries (no file is read), with
    every check :func:`read_info` makes of them: the config's bounds and ``budget``, the tokenizers, the records.

    Raises:
        CheckpointError: a missing entry or one that fails its check (one line naming the file).
    """
    path = Path(path)
    if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
        raise CheckpointError(f"{path.name} has invalid metadata: its entries are not text")
    try:
        return _parse_info(path, entries, budget)
    except RecursionError:
        raise CheckpointError(f"{path.name} has invalid metadata: JSON nested too deeply") from None


def _stat_key(path: Path) -> tuple:
    """What identifies one version of a file: real path, device, inode, size, mtime and ctime."""
    st = os.stat(path)
    return os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _parse_info(path: Path, metadata: dict[str, str], budget: Budget) -> CheckpointInfo:
    """The header's JSON entries, the config checked against its bounds and ``budget`` first."""
    try:
        config = ModelConfig.from_json(metadata["config"])
        check_budget(config, budget)
    except KeyError as error:
        raise CheckpointError(f"{path.name} lacks the metadata entry {error}") from None
    except (ValueError, TypeError, OverflowError) as error:
        raise CheckpointError(f"{path.name} is refused: {_short(error)}") from None
    try:
        roles = json.loads(metadata["tokenizers"])
        tokenizers = {role: Tokenizer.from_json(text) for role, text in roles.items()}
        task, metrics, extra = (json.loads(metadata[k]) for k in ("task", "metrics", "extra"))
    except KeyError as error:
        raise CheckpointError(f"{path.name} lacks the metadata entry {error}") from None
    except (ValueError, TypeError, AttributeError) as error:
        raise CheckpointError(f"{path.name} has invalid metadata: {_short(error)}") from None
    _check_tokenizers(path, config, tokenizers)
    if not isinstance(metrics, dict) or not isinstance(extra, dict) or not isinstance(task, (str, type(None))):
        raise CheckpointError(f"{path.name} has invalid metadata: task, metrics or extra has the wrong type")
    labels = extra.get("labels")
    if config.architecture == "encoder" and labels and len(labels) != config.n_classes:
        raise CheckpointError(f"{path.name} names {len(labels)} labels for {config.n_classes} classes")
    return CheckpointInfo(path, config, tokenizers, task, metrics, extra, str(metadata.get("sha256", "")),
                          metadata.get("probe"))


def _check_tokenizers(path: Path, config: ModelConfig, tokenizers: dict[str, Tokenizer]) -> None:
    needed = {"source": config.src_vocab_size} if config.has_encoder else {}
    if config.has_decoder:
        needed["target"] = config.tgt_vocab_size
    for role, vocab in needed.items():
        if role not in tokenizers:
            raise CheckpointError(f"{path.name} has no {role} tokenizer")
        if tokenizers[role].vocab_size != vocab:
            raise CheckpointError(
                f"{path.name}: the {role} tokenizer has {tokenizers[role].vocab_size} tokens "
                f"but the model's embedding has {vocab} rows"
            )
