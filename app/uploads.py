"""Uploaded models: checked in full, kept per browser session, unzipped safely.

Each session gets an owner token (:func:`new_owner`); its uploads live in
``runs/uploads/<owner>/<digest>/`` and only that session lists or deletes them. An
upload is one of:

* an Attnscope checkpoint (``.safetensors``), opened with ``core.load_checkpoint``;
* a PyTorch ``nn.Transformer`` state dict (``.safetensors``): refused with :class:`NeedsImport`,
  which carries what its shapes tell, until :func:`import_upload` is given the rest and turns it
  into a checkpoint with ``core.import_nn_transformer``;
* a Llama-family ``.gguf`` file, opened with ``core.load_pretrained``;
* a ``.zip`` of a BERT-family folder (``config.json``, ``model.safetensors``,
  ``tokenizer.json``), unzipped with no absolute path, no ``..``, no link, and size and
  file-count limits, then opened with ``core.load_pretrained``.

Anything else is refused with a message naming what is accepted; a file the core loader
refuses is refused with the loader's :class:`core.CheckpointError` message. No Streamlit here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from core import (CheckpointError, NNImportOptions, NNTransformerLayout, import_nn_transformer, load_checkpoint,
                  load_pretrained, nn_transformer_layout)
from app.unzip import unzip

log = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # as .streamlit/config.toml's server.maxUploadSize
MAX_UNZIPPED_BYTES = 160 * 1024 * 1024
MAX_ZIP_FILES = 16
MAX_NAME_CHARS = 120
TYPES = ("safetensors", "gguf", "zip")  # what the uploader accepts
TYPES_TEXT = ("an Attnscope checkpoint or a PyTorch nn.Transformer state dict (.safetensors; save a .pt "
              "state dict with safetensors first), a Llama-family GGUF file (.gguf) or a zipped BERT-family "
              "folder (.zip with config.json, model.safetensors and tokenizer.json)")
PAYLOADS = {"safetensors": "checkpoint.safetensors", "gguf": "model.gguf", "zip": "model"}
NAME_FILE = "name.txt"
BERT_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_OWNER = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"[0-9a-f]{16}")


class NeedsImport(CheckpointError):
    """The upload is an ``nn.Transformer`` state dict: :attr:`layout` says what its shapes tell."""

    def __init__(self, layout: NNTransformerLayout) -> None:
        super().__init__("the file holds a PyTorch nn.Transformer's weights, not an Attnscope checkpoint: "
                         "import it with the form")
        self.layout = layout


def new_owner() -> str:
    """A fresh, unguessable owner token for one browser session."""
    return secrets.token_hex(16)


def is_owner(token: object) -> bool:
    """Whether ``token`` looks like an owner token (never a path)."""
    return isinstance(token, str) and _OWNER.fullmatch(token) is not None


def kind_of(filename: str) -> str:
    """The upload's kind (``safetensors``, ``gguf`` or ``zip``) from its file name.

    Raises:
        CheckpointError: any other type; the message says which types are accepted.
    """
    suffix = PurePosixPath(filename).suffix.lower().lstrip(".")
    if suffix not in TYPES:
        shown = f".{suffix} files" if suffix else "files without a type"
        raise CheckpointError(f"{shown} are not accepted; upload {TYPES_TEXT}")
    return suffix


def display_name(filename: str) -> str:
    """The name shown for an upload: its file name as uploaded, one line, cut short."""
    name = "".join(ch if ch.isprintable() else "?" for ch in filename.strip())  # never used as a path
    return name[:MAX_NAME_CHARS] or "upload"


def owner_folder(uploads: Path, owner: str) -> Path:
    """The folder holding ``owner``'s uploads.

    Raises:
        CheckpointError: ``owner`` is not an owner token.
    """
    if not is_owner(owner):
        raise CheckpointError("this session has no upload folder")
    return uploads / owner


def is_upload_digest(name: str) -> bool:
    return _DIGEST.fullmatch(name) is not None


def safe_unzip(data: bytes, target: Path) -> Path:
    """Unzip a BERT-family folder into ``target``; returns the folder holding ``config.json``.

    Only regular files are written (see :func:`app.unzip.unzip`): names relative without ``..``,
    at most ``MAX_ZIP_FILES`` files and ``MAX_UNZIPPED_BYTES`` bytes counted while inflating
    (deflate, bzip2 and LZMA alike); a ``modules.json`` must list folders inside the upload.

    Raises:
        CheckpointError: not a zip, or any rule above broken (the message says which).
    """
    unzip(data, target, max_bytes=MAX_UNZIPPED_BYTES, max_files=MAX_ZIP_FILES)
    root = _bert_root(target)
    _check_modules(root)
    return root


def _check_modules(root: Path) -> None:
    """A sentence-transformers ``modules.json``: a list of objects whose paths stay inside ``root``."""
    modules = root / "modules.json"
    if not modules.exists():
        return
    try:
        entries = json.loads(modules.read_bytes()[:1 << 20])
    except (ValueError, RecursionError):
        raise CheckpointError("the .zip file's modules.json is not valid JSON") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CheckpointError("the .zip file's modules.json must be a list of objects")
    for entry in entries:
        path = entry.get("path", "")
        if not isinstance(path, str) or not isinstance(entry.get("type", ""), str):
            raise CheckpointError("the .zip file's modules.json has a path or type that is not text")
        resolved = (root / path).resolve()
        if resolved != root.resolve() and root.resolve() not in resolved.parents:
            raise CheckpointError(f"the .zip file's modules.json points outside the upload: {path[:80]!r}")


def _bert_root(target: Path) -> Path:
    """The unzipped folder itself, or its only top-level folder."""
    if not (target / "config.json").is_file():
        children = [p for p in target.iterdir()]
        if len(children) == 1 and children[0].is_dir():
            target = children[0]
    missing = [name for name in BERT_FILES if not (target / name).is_file()]
    if missing:
        raise CheckpointError(f"the .zip file has no {', '.join(missing)}; a BERT-family folder needs "
                              f"{', '.join(BERT_FILES)}")
    return target


def _check(kind: str, path: Path) -> None:
    """Open the stored payload with core's loader; any failure is a CheckpointError."""
    try:
        if kind == "safetensors":
            load_checkpoint(path)
        else:
            load_pretrained(path, use_cache=False)
    except CheckpointError:
        raise
    except (MemoryError, RecursionError, OverflowError, ValueError, OSError) as error:
        log.info("upload refused: %s", error)
        raise CheckpointError(f"the file cannot be read ({type(error).__name__})") from None


def _nn_transformer(path: Path) -> NNTransformerLayout | None:
    """What the shapes tell when the file holds an ``nn.Transformer`` state dict (its header only), else None."""
    try:
        return nn_transformer_layout(path)
    except (ValueError, MemoryError, RecursionError, OverflowError, OSError):
        return None


def save_upload(uploads: Path, owner: str, filename: str, data: bytes) -> str:
    """Check an upload fully and keep it as ``owner``'s; returns its digest (the catalog key's tail).

    Raises:
        NeedsImport: a ``.safetensors`` holding an ``nn.Transformer`` state dict (see :func:`import_upload`).
        CheckpointError: wrong type, too large, unsafe archive, or refused by the core loader.
    """
    kind = kind_of(filename)

    def fill(staging: Path) -> None:
        payload = staging / PAYLOADS[kind]
        if kind == "zip":
            safe_unzip(data, staging / "unzipped").rename(payload)
            shutil.rmtree(staging / "unzipped", ignore_errors=True)
        else:
            payload.write_bytes(data)
        if kind == "safetensors" and (layout := _nn_transformer(payload)) is not None:
            raise NeedsImport(layout)
        _check(kind, payload)

    return _store(uploads, owner, filename, data, hashlib.sha256(data).hexdigest()[:16], fill)


def import_upload(uploads: Path, owner: str, filename: str, data: bytes, options: NNImportOptions) -> str:
    """Import an uploaded ``nn.Transformer`` state dict with ``options``, check the checkpoint made and
    keep it as ``owner``'s; returns its digest (one per file and options).

    Raises:
        CheckpointError: wrong type, too large, options that do not fit, or refused by the core loader.
    """
    if kind_of(filename) != "safetensors":
        raise CheckpointError("only a .safetensors state dict can be imported")

    def fill(staging: Path) -> None:
        source, payload = staging / "source.safetensors", staging / PAYLOADS["safetensors"]
        source.write_bytes(data)
        try:
            import_nn_transformer(source, payload, options)
        except ValueError as error:
            raise CheckpointError(str(error)) from None  # a one-line message saying what to change
        except (MemoryError, RecursionError, OverflowError, OSError) as error:
            log.info("import refused: %s", error)
            raise CheckpointError(f"the file cannot be imported ({type(error).__name__})") from None
        finally:
            source.unlink(missing_ok=True)
        _check("safetensors", payload)

    digest = hashlib.sha256(data + repr(options).encode("utf-8")).hexdigest()[:16]
    return _store(uploads, owner, filename, data, digest, fill)


def _store(uploads: Path, owner: str, filename: str, data: bytes, digest: str,
           fill: Callable[[Path], None]) -> str:
    """``fill`` a fresh staging folder in ``owner``'s uploads, then keep it as ``digest``."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise CheckpointError(f"the file is larger than {MAX_UPLOAD_BYTES // 2**20} MB")
    folder = owner_folder(uploads, owner)
    if uploads.is_symlink() or folder.is_symlink():
        raise CheckpointError("the uploads folder is a link; uploads are turned off")
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=folder))
    try:
        fill(staging)
        (staging / NAME_FILE).write_text(display_name(filename), encoding="utf-8")
        target = folder / digest
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except NeedsImport:
        raise
    except CheckpointError as error:
        message = str(error).replace(str(staging), "the upload")
        for stored in ("source.safetensors", *PAYLOADS.values()):  # the loader names the stored file
            if stored != PAYLOADS["zip"]:
                message = message.replace(stored, display_name(filename))
        raise CheckpointError(message) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return digest


def payload_of(folder: Path) -> Path | None:
    """The model inside one upload's folder (a file or a BERT folder), or None."""
    for name in PAYLOADS.values():
        path = folder / name
        if path.exists() and not path.is_symlink():
            return path
    return None


def name_of(folder: Path) -> str:
    """The name the upload had in the browser."""
    try:
        return display_name((folder / NAME_FILE).read_text(encoding="utf-8")[:MAX_NAME_CHARS * 4])
    except (OSError, UnicodeDecodeError):
        return folder.name
