"""What is this file or folder, and can Attnscope open it? Asked of core, so the app never looks at
suffixes or folder layouts.

* an Attnscope checkpoint: a ``.safetensors`` file whose header says ``format: attnscope``;
* a PyTorch ``nn.Transformer`` state dict in a ``.safetensors`` file (opened after ``import``);
* a pretrained model: a Hugging Face model folder (``config.json`` + safetensors + tokenizer) or a
  ``.gguf`` file (magic bytes ``GGUF``);
* an archive: a zip file, to be unpacked (with the caller's caps) and its content identified in turn.

A PyTorch pickle (``torch.save``'s zip or a bare pickle, such as ``pytorch_model.bin``) is refused with
the one-line way to convert it: pickles are never loaded.

:func:`find_models` lists every model under a folder (the app's ``--models DIR``), read in place.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, replace
from pathlib import Path

from core.io.checkpoint import FORMAT, CheckpointError
from core.io.verify import MAX_HEADER_BYTES, check_header_size
from core.io.convert.nn_import import nn_transformer_layout
from core.io.hf_cache import cached_models, is_hub_cache
from core.io.pretrained.gguf_header import is_gguf
from core.io.pretrained.ct2_whisper import is_ctranslate2_folder
from core.io.pretrained.hf_files import convert_command, convert_hint, folder_config, weight_files
from core.io.pretrained.hf_folder import is_model_folder
from core.io.pretrained.load import supported

KINDS = ("checkpoint", "nn-transformer", "pretrained", "archive")
MAX_FOUND = 200  # models listed from one folder at most
MAX_DEPTH = 4  # folder levels searched below it
_ZIP = b"PK\x03\x04"


@dataclass(frozen=True)
class ModelFile:
    """A file or folder Attnscope can open.

    Attributes:
        path: where it is. kind: ``checkpoint``, ``nn-transformer``, ``pretrained`` or ``archive`` (a zip
            whose content is a model once unpacked).
        name: a display name (the folder or file name without its suffix).
        modality: what the model reads: ``audio`` for a Whisper folder (Hugging Face or CTranslate2), else ``text``.
    """

    path: Path
    kind: str
    name: str
    modality: str = "text"


def _folder_model(path: Path) -> ModelFile:
    """A model folder as a pretrained :class:`ModelFile`, its modality told by ``config.json`` (or CTranslate2's
    ``model.bin``) without reading any weights."""
    try:
        speech = is_ctranslate2_folder(path) or folder_config(path).get("model_type") == "whisper"
    except CheckpointError:
        speech = False  # the loader says what is wrong with it
    return ModelFile(path, "pretrained", path.name, "audio" if speech else "text")


def _safetensors_metadata(path: Path) -> dict | None:
    """The ``__metadata__`` of a safetensors header, {} without one, None when it is not safetensors."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(8)
            if len(raw) < 8:
                return None
            (size,) = struct.unpack("<Q", raw)
            if size > MAX_HEADER_BYTES or size > os.path.getsize(path) - 8:
                return None
            header = json.loads(handle.read(size))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    meta = header.get("__metadata__") or {}
    return meta if isinstance(meta, dict) else {}


def _opening(path: Path) -> bytes:
    """The file's first bytes: a zip's first local header with its member name, or a pickle's opcodes."""
    try:
        with open(path, "rb") as handle:
            return handle.read(30 + 256)
    except OSError:
        return b""


def _is_pickle(head: bytes) -> bool:
    """A bare pickle (protocol 2 or later), or ``torch.save``'s zip (its first member ``<name>/data.pkl``)."""
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return True
    if head[:4] != _ZIP or len(head) < 30:
        return False
    (length,) = struct.unpack("<H", head[26:28])
    return head[30:30 + length].rsplit(b"/", 1)[-1] == b"data.pkl"


def _folder_refusal(path: Path) -> CheckpointError:
    """Why a folder without ``config.json`` is not a model: a pickle-only folder gets the way to convert it."""
    if any(path.glob("pytorch_model*.bin")):
        return CheckpointError(f"{path.name} has no config.json nor safetensors weights: {convert_hint(path)}")
    return CheckpointError(f"{path.name} is a folder without config.json, not a model Attnscope opens; "
                           f"supported: {supported()}")


def identify(path: str | os.PathLike) -> ModelFile:
    """What ``path`` holds.

    Raises:
        CheckpointError: it does not exist, or holds nothing Attnscope opens (the message says what does,
            for a bare Hugging Face weights file to open its folder, for a pickle how to convert it).
    """
    path = Path(path)
    if is_model_folder(path):
        return _folder_model(path)
    if path.is_dir():
        raise _folder_refusal(path)
    if not path.is_file():
        raise CheckpointError(f"not found: {path.name}")
    if is_gguf(path):
        return ModelFile(path, "pretrained", path.stem)
    head = _opening(path)
    if _is_pickle(head):
        raise CheckpointError(f"{path.name} is a PyTorch pickle and is never loaded; convert its Hugging Face "
                              f"folder once with {convert_command(path.parent)} and open the folder")
    if head[:4] in (_ZIP, b"PK\x05\x06"):  # a zip (one with no member starts with its end record)
        return ModelFile(path, "archive", path.stem)
    check_header_size(path)
    metadata = _safetensors_metadata(path)
    if metadata is None:
        raise CheckpointError(f"{path.name} is not a model Attnscope opens: an Attnscope checkpoint or an "
                              "nn.Transformer state dict (.safetensors), a Hugging Face model folder or a .gguf file")
    if metadata.get("format") == FORMAT:
        return ModelFile(path, "checkpoint", path.stem)
    try:
        nn_transformer_layout(path)
        return ModelFile(path, "nn-transformer", path.stem)
    except (ValueError, MemoryError, RecursionError, OverflowError, OSError):
        pass
    raise CheckpointError(f"{path.name} is a bare weights file without its description: open the Hugging Face "
                          "folder that holds it (config.json, tokenizer), or import it with `python -m core import`")


def model_version(path: str | os.PathLike) -> str:
    """What identifies this version of a model's files for caches: their sizes and modification times.

    Raises:
        CheckpointError: the files are missing.
    """
    path = Path(path)
    try:
        if is_ctranslate2_folder(path):
            files = [path / "config.json", path / "model.bin", path / "tokenizer.json"]
        else:
            files = [path / "config.json", *weight_files(path)] if is_model_folder(path) else [path]
        stats = [f.stat() for f in files]
    except OSError:
        raise CheckpointError(f"not found: {path.name}") from None
    return ";".join(f"{s.st_size}-{s.st_mtime_ns}" for s in stats)


def find_models(folder: str | os.PathLike) -> list[ModelFile]:
    """Every model under ``folder`` (at most :data:`MAX_FOUND`, :data:`MAX_DEPTH` levels down), sorted by
    path; links are not followed and a model folder is not searched inside. A Hugging Face hub cache lists
    its models instead, each named ``org/name`` at its newest snapshot (:func:`core.io.hf_cache.cached_models`)."""
    root, found = Path(folder), []
    if not root.is_dir():
        return []
    if is_hub_cache(root):
        return [replace(_folder_model(model.path), name=model.name) for model in cached_models(root)[0]]
    stack = [(root, 0)]
    while stack and len(found) < MAX_FOUND:
        current, depth = stack.pop()
        try:
            children = sorted(current.iterdir())
        except OSError:
            continue
        for child in children:
            if child.is_symlink() or child.name.startswith("."):
                continue
            if child.is_dir():
                if is_model_folder(child):
                    found.append(_folder_model(child))
                elif depth + 1 < MAX_DEPTH:
                    stack.append((child, depth + 1))
            elif child.suffix.lower() in (".gguf", ".safetensors"):
                try:
                    model = identify(child)
                except CheckpointError:
                    continue  # a shard or a bare weights file: not a model on its own
                if model.kind != "archive":  # a zip under a model's name is not opened in place
                    found.append(model)
    return sorted(found, key=lambda m: str(m.path))[:MAX_FOUND]
