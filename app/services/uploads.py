"""Uploaded models: saved to a private per-session folder, unpacked when core says they are an archive,
and opened as whatever core says they are (``core.identify``): the app never looks at a file's suffix
or a folder's layout, so every model core opens (an Attnscope checkpoint, an ``nn.Transformer`` state
dict to import, a GGUF file, a Hugging Face folder of any family core reads, single or sharded
safetensors) opens from an upload, a Hugging Face folder as a ``.zip``.

Each session gets an owner token (:func:`app.services.storage.new_owner`); its uploads live in
``runs/uploads/<owner>/<digest>/``: ``files/`` holds the upload as received (under its own name, made
safe) or unpacked, ``payload.txt`` says where the model is inside ``files/``, ``name.txt`` the name
shown. Only that session lists or deletes them (:mod:`app.services.catalog`).

Bounds (see :mod:`app.services.storage` for the disk quotas and the clean-up): one upload at most
:func:`max_upload_bytes` (Streamlit's ``server.maxUploadSize``, the one source of truth), a zip
unpacked under the same budget (:func:`app.services.unzip.unzip`), and core checks every format's budget from
its headers before any tensor is read (``core.check_header``, here); the model itself is loaded only in a worker
process (``core.ExplainWorker``), never in the server. A file core refuses is refused with core's one-line message.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from streamlit import config as streamlit_config

from app.services import storage
from app.services.storage import is_owner, is_upload_digest, owner_folder
from app.services.unzip import unzip
from core import check_header, CheckpointError, convert, ExplainWorker, find_models, identify, ModelFile

log = logging.getLogger(__name__)

MAX_ZIP_FILES = 64  # a Hugging Face folder: config, tokenizer files, shards and an index, a README…
MAX_NAME_CHARS = 120
CHECK_S = 55.0  # seconds an upload's worker process may take to load it: within the gate's run time (60 s)
FILES, PAYLOAD_FILE, NAME_FILE = "files", "payload.txt", "name.txt"


class NeedsImport(CheckpointError):
    """The upload is an ``nn.Transformer`` state dict: :attr:`layout` says what its shapes tell."""

    def __init__(self, layout: convert.NNTransformerLayout) -> None:
        super().__init__("the file holds a PyTorch nn.Transformer's weights, not an Attnscope checkpoint: "
                         "import it with the form")
        self.layout = layout


def max_upload_bytes() -> int:
    """The most bytes one upload may have, and a zip may unpack to: Streamlit's ``server.maxUploadSize``
    (MB, set in ``.streamlit/config.toml``), above which Streamlit itself refuses the upload."""
    return int(streamlit_config.get_option("server.maxUploadSize")) * 2**20


def display_name(filename: str) -> str:
    """The name shown for an upload: its file name as uploaded, one line, cut short."""
    name = "".join(ch if ch.isprintable() else "?" for ch in filename.strip())  # never used as a path
    return name[:MAX_NAME_CHARS] or "upload"


def disk_name(filename: str) -> str:
    """The upload's name made safe to store: letters, digits, ``._-`` and spaces, never hidden, cut short."""
    name = re.sub(r"[^\w.\- ]", "_", PurePosixPath(filename.replace("\\", "/")).name, flags=re.ASCII).strip(" .")
    return name[:MAX_NAME_CHARS] or "upload"


def _unpack(archive: Path, max_bytes: int) -> Path:
    """Unzip ``archive`` beside itself (then delete it); returns the one model core finds inside."""
    unpacking = archive.parent / ".unpacking"
    unzip(archive, unpacking, max_bytes=max_bytes, max_files=MAX_ZIP_FILES)
    archive.unlink()
    root = unpacking.rename(archive.parent / (PurePosixPath(archive.name).stem or "model"))
    try:
        identify(root)
        return root
    except CheckpointError as refusal:
        found = find_models(root)
        if len(found) > 1:
            names = ", ".join(str(m.path.relative_to(root)) for m in found[:4])
            raise CheckpointError(f"the .zip file holds {len(found)} models ({names}); zip one model") from None
        if not found:
            raise refusal from None
        return found[0].path


def _check(found: ModelFile) -> None:
    """Check the model from its header here (core's bounds and budget: milliseconds, nothing of its data read),
    then load it in a worker process of its own (:class:`core.ExplainWorker`: a lower CPU priority, a memory
    cap and ``CHECK_S`` seconds), never in the server; any failure is one CheckpointError line."""
    check_header(found.path)
    worker = ExplainWorker(found.path, startup_s=CHECK_S, check_weights=True)  # NaN weights refused here
    try:
        worker.start()
    except ValueError as error:  # the child's one line: the loader's refusal, its deadline or its memory cap
        raise CheckpointError(str(error)) from None
    finally:
        worker.close()


def _receive(staging: Path, filename: str, data: bytes, max_bytes: int) -> Path:
    """Keep ``data`` in ``staging``, unpacked if core says it is an archive, and check the model it holds;
    returns the model's path."""
    received = staging / FILES / disk_name(filename)
    received.parent.mkdir()
    received.write_bytes(data)
    found = identify(received)
    if found.kind == "archive":
        found = identify(_unpack(received, max_bytes))  # a folder or a model file: never another archive
        if found.kind == "nn-transformer":
            raise CheckpointError(f"{found.path.name} holds a PyTorch nn.Transformer's weights: upload the "
                                  ".safetensors file itself (not zipped) to import it with the form")
    if found.kind == "nn-transformer":
        try:
            layout = convert.nn_transformer_layout(found.path)
        except (ValueError, MemoryError, RecursionError, OverflowError, OSError):
            raise CheckpointError(f"{found.path.name} is not an Attnscope checkpoint") from None
        raise NeedsImport(layout)
    _check(found)
    return found.path


def save_upload(uploads: Path, owner: str, filename: str, data: bytes) -> str:
    """Check an upload fully and keep it as ``owner``'s; returns its digest (the catalog key's tail).

    Raises:
        NeedsImport: a ``.safetensors`` holding an ``nn.Transformer`` state dict (see :func:`import_upload`).
        CheckpointError: too large, over the disk quota, unsafe archive, or refused by core (the message
            says what core opens, or how to convert a pickle).
    """
    max_bytes = max_upload_bytes()
    return _store(uploads, owner, filename, data, hashlib.sha256(data).hexdigest()[:16],
                  lambda staging: _receive(staging, filename, data, max_bytes))


def import_upload(uploads: Path, owner: str, filename: str, data: bytes, options: convert.NNImportOptions) -> str:
    """Import an uploaded ``nn.Transformer`` state dict with ``options``, check the checkpoint made and
    keep it as ``owner``'s; returns its digest (one per file and options).

    Raises:
        CheckpointError: too large, options that do not fit, or refused by the core loader.
    """

    def fill(staging: Path) -> Path:
        source, payload = staging / "source.safetensors", staging / FILES / disk_name(filename)
        payload.parent.mkdir()
        source.write_bytes(data)
        try:
            convert.import_nn_transformer(source, payload, options)
        except ValueError as error:
            raise CheckpointError(str(error)) from None  # a one-line message saying what to change
        except (MemoryError, RecursionError, OverflowError, OSError) as error:
            log.info("import refused: %s", error)
            raise CheckpointError(f"the file cannot be imported ({type(error).__name__})") from None
        finally:
            source.unlink(missing_ok=True)
        _check(identify(payload))
        return payload

    digest = hashlib.sha256(data + repr(options).encode("utf-8")).hexdigest()[:16]
    return _store(uploads, owner, filename, data, digest, fill)


def _store(uploads: Path, owner: str, filename: str, data: bytes, digest: str,
           fill: Callable[[Path], Path]) -> str:
    """``fill`` a fresh staging folder in ``owner``'s uploads (it returns the model's path), then keep it
    as ``digest``, within the session's and the server's disk quotas."""
    max_bytes = max_upload_bytes()
    if len(data) > max_bytes:
        raise CheckpointError(f"the file is larger than {max_bytes // 2**20} MB")
    folder = owner_folder(uploads, owner)
    if uploads.is_symlink() or folder.is_symlink():
        raise CheckpointError("the uploads folder is a link; uploads are turned off")
    storage.check_server_room(uploads, len(data), max_bytes)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=folder))
    try:
        payload = fill(staging)
        (staging / PAYLOAD_FILE).write_text(payload.relative_to(staging / FILES).as_posix(), encoding="utf-8")
        (staging / NAME_FILE).write_text(display_name(filename), encoding="utf-8")
        target = folder / digest
        shutil.rmtree(target, ignore_errors=True)
        storage.make_room(folder, storage.bytes_under(staging), storage.SESSION_UPLOADS * max_bytes)
        staging.rename(target)
    except NeedsImport:
        raise
    except CheckpointError as error:
        raise CheckpointError(str(error).replace(str(staging), "the upload")) from None
    except OSError as error:  # the disk: full, or a file the system refuses to write
        log.warning("upload not stored: %s", error)
        raise CheckpointError(f"the upload cannot be stored ({error.strerror or type(error).__name__})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return digest


def payload_of(folder: Path) -> Path | None:
    """The model inside one upload's folder (a file or a folder, where ``payload.txt`` says), or None."""
    try:
        relative = (folder / PAYLOAD_FILE).read_text(encoding="utf-8")[:4096]
    except (OSError, UnicodeDecodeError):
        return None
    files = folder / FILES
    path = files / relative
    try:
        inside = path.resolve().is_relative_to(files.resolve())
    except (OSError, RuntimeError):
        return None
    return path if inside and path.exists() and not path.is_symlink() else None


def upload_folder(payload: Path) -> Path | None:
    """The upload's own folder (``<owner>/<digest>``) holding ``payload``, or None."""
    for folder in reversed(payload.parents):  # the outermost: a name inside the upload cannot pose as it
        if is_upload_digest(folder.name) and is_owner(folder.parent.name):
            return folder
    return None


def name_of(folder: Path) -> str:
    """The name the upload had in the browser."""
    try:
        return display_name((folder / NAME_FILE).read_text(encoding="utf-8")[:MAX_NAME_CHARS * 4])
    except (OSError, UnicodeDecodeError):
        return folder.name
