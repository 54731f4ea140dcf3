"""The only place that reads or writes model weights: one self-describing ``.safetensors`` file.

Tensors hold the weights (plus optional extra tensors such as attention snapshots);
the header metadata (str → str, JSON values) holds the format version, the
``ModelConfig``, the tokenizer(s), the task, metrics and free-form extra data, and a
SHA-256 over all of it, verified on load. Nothing is ever unpickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as safetensors_bytes
from torch import Tensor

from core.config import ModelConfig
from core.model.transformer import Transformer
from core.io.tokenizer import Tokenizer

log = logging.getLogger(__name__)

FORMAT = "attnscope"
FORMAT_VERSION = 1
EXTRA_PREFIX = "extra/"
_TIED = ("lm_head.weight", "tgt_embed.weight")  # (dropped on save, shares storage with)


class CheckpointError(Exception):
    """Any fault reading or writing a checkpoint: the message names the file and the cause."""


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


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the model in ``eval()`` mode plus its header and extra tensors."""

    model: Transformer
    info: CheckpointInfo
    extra_tensors: dict[str, Tensor] = field(default_factory=dict)

    @property
    def config(self) -> ModelConfig:
        return self.info.config

    @property
    def source_tokenizer(self) -> Tokenizer | None:
        return self.info.tokenizers.get("source")

    @property
    def target_tokenizer(self) -> Tokenizer | None:
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
        del tensors[_TIED[0]]
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
        }
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"cannot save {path.name}: metadata is not JSON-serialisable ({error})") from None
    metadata["sha256"] = _digest(tensors, metadata)
    _write_atomic(path, safetensors_bytes(tensors, metadata=metadata))
    log.debug("saved checkpoint %s (%d tensors)", path, len(tensors))
    return metadata["sha256"]


def _write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same folder → fsync → os.replace → fsync the folder."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise CheckpointError(f"cannot save {path.name}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else _default_mode())
        os.replace(tmp, path)
    except BaseException as error:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise CheckpointError(f"cannot save {path.name}: {error.strerror or error}") from None
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _digest(tensors: dict[str, Tensor], metadata: dict[str, str]) -> str:
    """SHA-256 over every tensor (name, dtype, shape, bytes) and every metadata entry."""
    sha = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name]
        sha.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        sha.update(tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    for key in sorted(k for k in metadata if k != "sha256"):
        sha.update(f"{key}={metadata[key]}\n".encode())
    return sha.hexdigest()


def _open_checked(path: Path) -> tuple[dict[str, str], dict[str, Tensor]]:
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path.name}")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path.name} is not a file")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise CheckpointError(f"{path.name} is not a readable safetensors file ({error})") from None
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"{path.name} is a safetensors file but not an Attnscope checkpoint")
    if metadata.get("format_version") != str(FORMAT_VERSION):
        raise CheckpointError(
            f"{path.name} has format version {metadata.get('format_version')!r}; "
            f"this Attnscope reads version {FORMAT_VERSION}"
        )
    if metadata.get("sha256") != _digest(tensors, metadata):
        raise CheckpointError(f"{path.name} is corrupted: checksum mismatch")
    return metadata, tensors


def _parse_info(path: Path, metadata: dict[str, str], sha: str) -> CheckpointInfo:
    try:
        config = ModelConfig.from_json(metadata["config"])
        tokenizers = {role: Tokenizer.from_json(text) for role, text in json.loads(metadata["tokenizers"]).items()}
        task, metrics, extra = (json.loads(metadata[k]) for k in ("task", "metrics", "extra"))
    except KeyError as error:
        raise CheckpointError(f"{path.name} lacks the metadata entry {error}") from None
    except (ValueError, TypeError, AttributeError) as error:
        raise CheckpointError(f"{path.name} has invalid metadata: {error}") from None
    _check_tokenizers(path, config, tokenizers)
    labels = extra.get("labels") if isinstance(extra, dict) else None
    if config.architecture == "encoder" and labels and len(labels) != config.n_classes:
        raise CheckpointError(f"{path.name} names {len(labels)} labels for {config.n_classes} classes")
    if not isinstance(metrics, dict) or not isinstance(extra, dict) or not isinstance(task, (str, type(None))):
        raise CheckpointError(f"{path.name} has invalid metadata: task, metrics or extra has the wrong type")
    return CheckpointInfo(path, config, tokenizers, task, metrics, extra, sha)


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


def read_info(path: str | os.PathLike) -> CheckpointInfo:
    """Read and verify a checkpoint's header without building the model.

    Raises:
        CheckpointError: missing, unreadable, corrupted or invalid file.
    """
    path = Path(path)
    metadata, _ = _open_checked(path)
    return _parse_info(path, metadata, metadata["sha256"])


def load(path: str | os.PathLike, device: torch.device | str = "cpu") -> Checkpoint:
    """Load, verify and rebuild a checkpoint.

    Verifies the checksum, rebuilds the model from its config, checks every tensor's
    name and shape against that config before a strict ``load_state_dict``, and refuses
    non-finite weights.

    Raises:
        CheckpointError: for every fault, with a message naming the file.
    """
    path = Path(path)
    metadata, tensors = _open_checked(path)
    info = _parse_info(path, metadata, metadata["sha256"])
    extra = {k[len(EXTRA_PREFIX):]: v for k, v in tensors.items() if k.startswith(EXTRA_PREFIX)}
    weights = {k: v for k, v in tensors.items() if not k.startswith(EXTRA_PREFIX)}
    model = Transformer(info.config)
    if info.config.tie_embeddings and _TIED[1] in weights:
        weights[_TIED[0]] = weights[_TIED[1]]
    _check_against_config(path, model, weights)
    bad = [name for name, tensor in weights.items() if tensor.is_floating_point() and not torch.isfinite(tensor).all()]
    if bad:
        raise CheckpointError(f"{path.name} has non-finite weights (NaN or Inf) in {', '.join(sorted(bad)[:5])}")
    model.load_state_dict(weights, strict=True)
    return Checkpoint(model.to(device).eval(), info, extra)


def _check_against_config(path: Path, model: Transformer, weights: dict[str, Tensor]) -> None:
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:8])}")
        if unexpected:
            parts.append(f"unexpected {', '.join(unexpected[:8])}")
        raise CheckpointError(f"{path.name} does not match its config: {'; '.join(parts)}")
    wrong = [(k, tuple(weights[k].shape), shape) for k, shape in expected.items() if tuple(weights[k].shape) != shape]
    if wrong:
        name, found, want = wrong[0]
        raise CheckpointError(
            f"{path.name} does not match its config ({_suspect_field(name)}): tensor {name} has shape "
            f"{found}, the config implies {want}"
        )


def _suspect_field(tensor_name: str) -> str:
    """The config field most likely to be wrong when ``tensor_name`` has the wrong shape."""
    for fragment, field_name in (
        ("src_embed", "src_vocab_size or d_model"), ("tgt_embed", "tgt_vocab_size or d_model"),
        ("lm_head", "tgt_vocab_size or d_model"), ("positional", "max_len or d_model"),
        ("classifier", "n_classes or d_model"), ("linear1", "d_ff or d_model"), ("linear2", "d_ff or d_model"),
        ("score", "n_heads or d_model"),
    ):
        if fragment in tensor_name:
            return f"check {field_name}"
    return "check d_model"
