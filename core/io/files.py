"""Model files read in place: where a file really is, and what identifies one version of it cheaply.

* :func:`resolve_inside`: a file's real location (links followed), refused unless it lies inside one of the
  given folders: a ``model.safetensors`` linked to ``/etc/shadow`` or to another user's upload is never read.
* :func:`model_roots`: the folders a model folder's files may resolve into: the folder itself, and for a
  snapshot of the Hugging Face hub cache (``models--org--name/snapshots/<revision>/``) that model's own
  ``blobs/``, where the hub keeps the files its snapshot links point to.
* :func:`model_file`: both, and the file must be a regular file (never a FIFO or a device).
* :func:`file_fingerprint`: a cache key built from the header, size, modification time, inode and a few
  sampled blocks: constant work whatever the file's size, so a 1 TB file costs what a 1 MB one does.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from core.io.verify import CheckpointError

#: The most header bytes a fingerprint hashes (a GGUF's vocabulary arrays take a few MB).
FINGERPRINT_HEAD_BYTES = 32 * 2**20
#: Blocks sampled from the rest of the file, and the size of each.
FINGERPRINT_SAMPLES, FINGERPRINT_BLOCK = 16, 4096
_HUB_PREFIX, _SNAPSHOTS, _BLOBS = "models--", "snapshots", "blobs"


def resolve_inside(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> Path:
    """``path`` with every link followed, when it lies inside one of ``roots`` (each resolved too).

    Raises:
        CheckpointError: it resolves outside every root, or its links loop: one line naming the file.
    """
    path = Path(path)
    try:
        real = path.resolve()
        inside = any(real.is_relative_to(Path(root).resolve()) for root in roots)
    except (OSError, RuntimeError):  # a link loop
        raise CheckpointError(f"{path.name}: its links cannot be followed") from None
    if not inside:
        raise CheckpointError(f"{path.name} points outside the folder (a link to a file elsewhere is not read)")
    return real


def model_roots(folder: str | os.PathLike) -> list[Path]:
    """Where the files of the model folder ``folder`` may resolve: the folder, and a hub snapshot's ``blobs/``."""
    folder = Path(folder)
    roots = [folder]
    snapshots = folder.parent
    if snapshots.name == _SNAPSHOTS and snapshots.parent.name.startswith(_HUB_PREFIX):
        roots.append(snapshots.parent / _BLOBS)
    return roots


def model_file(path: str | os.PathLike, folder: str | os.PathLike) -> Path:
    """``path`` (a file of the model folder ``folder``) resolved inside :func:`model_roots`; a missing file is
    returned as it is (its reader says it is missing), anything but a regular file is refused.

    Raises:
        CheckpointError: outside the folder, a link loop, or a FIFO, device or folder where a file belongs: one
            line starting with the folder's name and naming the file.
    """
    path, folder = Path(path), Path(folder)
    try:
        real = resolve_inside(path, model_roots(folder))
        mode = real.stat().st_mode
    except CheckpointError as error:
        raise CheckpointError(f"{folder.name}: {error}") from None
    except FileNotFoundError:
        return path
    except OSError as error:
        raise CheckpointError(f"{folder.name}: {path.name} cannot be read ({error.strerror})") from None
    if not stat.S_ISREG(mode):
        raise CheckpointError(f"{folder.name}: {path.name} is not a regular file; it is not read")
    return real


def file_fingerprint(path: str | os.PathLike, header_bytes: int = 64 * 2**10) -> str:
    """A key for this version of the file at ``path``: SHA-256 of its size, modification time, device and
    inode, its first ``header_bytes`` (at most :data:`FINGERPRINT_HEAD_BYTES`) and
    :data:`FINGERPRINT_SAMPLES` blocks spread over the rest. Reads at most ~32 MB whatever the file's size.

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        sha = hashlib.sha256(f"{info.st_size}|{info.st_mtime_ns}|{info.st_dev}|{info.st_ino}|".encode())
        head = max(0, min(header_bytes, FINGERPRINT_HEAD_BYTES, info.st_size))
        sha.update(handle.read(head))
        rest = info.st_size - head
        for i in range(FINGERPRINT_SAMPLES if rest > 0 else 0):
            handle.seek(head + rest * i // FINGERPRINT_SAMPLES)
            sha.update(handle.read(FINGERPRINT_BLOCK))
    return sha.hexdigest()

