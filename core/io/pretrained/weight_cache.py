"""A cache of converted pretrained weights: one safetensors file per version of a source file.

Dequantizing a GGUF takes seconds; reading the float32 result back takes a fraction
of that. The cache lives in ``$ATTNSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnscope``,
else ``~/.cache/attnscope``. Entries are safetensors (never pickles), written
atomically, and named by the key of the file they were converted from (its
:func:`~core.io.files.file_fingerprint`: header, size, modification time, inode and sampled blocks, never a
full read), so an edited source never meets a stale entry. Any fault reading or writing the cache is
logged and ignored: the caller converts the source again. :func:`write_soon` writes in a
background thread (a few hundred MB take a second or more) that the interpreter waits for at exit.

The cache is bounded: at most :func:`max_bytes` (``$ATTNSCOPE_CACHE_MAX_BYTES``, default 2 GiB)
in all, the least recently used entries removed first. Every entry records the SHA-256 of its
tensors, checked on read: a flipped bit removes the entry and the source is converted again.
Temp files of writes killed earlier are removed the first time a process uses the cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path

import torch

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from core.io.atomic import clean_stale_temp_files

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None

log = logging.getLogger(__name__)

FORMAT = "attnscope-weight-cache"
VERSION = "3"  # 2: tensors' SHA-256 recorded and checked; 3: keyed by the source's fingerprint
DEFAULT_MAX_BYTES = 2 << 30
_cleaned: set[Path] = set()


def max_bytes() -> int:
    """The most bytes all entries together may take (``$ATTNSCOPE_CACHE_MAX_BYTES``, default 2 GiB)."""
    try:
        return max(0, int(os.environ.get("ATTNSCOPE_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES)))
    except ValueError:
        return DEFAULT_MAX_BYTES


def tensors_sha256(tensors: dict[str, Tensor]) -> str:
    """SHA-256 of every tensor's name, dtype, shape and bytes, in name order."""
    sha = hashlib.sha256()
    for name in sorted(tensors):
        tensor = tensors[name].detach().cpu().contiguous()
        sha.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        sha.update(tensor.reshape(-1).view(torch.uint8).numpy().data)
    return sha.hexdigest()


def _clean_once(folder: Path) -> None:
    """Remove the temp files that killed writes left in ``folder`` (once per process)."""
    if folder not in _cleaned:
        _cleaned.add(folder)
        clean_stale_temp_files(folder)


def cache_dir() -> Path:
    """The folder holding converted weights (not created here)."""
    if os.environ.get("ATTNSCOPE_CACHE_DIR"):
        return Path(os.environ["ATTNSCOPE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnscope"


def entry_path(source_key: str, kind: str) -> Path:
    """Where the converted weights of the source file with this key are kept."""
    return cache_dir() / kind / f"{source_key}.safetensors"


def read(source_key: str, kind: str) -> tuple[dict[str, Tensor], dict[str, str]] | None:
    """The cached (tensors, metadata) for this source, or None when absent or unusable (an entry
    whose tensors fail their checksum is removed)."""
    path = entry_path(source_key, kind)
    _clean_once(path.parent)
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != FORMAT or metadata.get("version") != VERSION \
                    or metadata.get("source_key") != source_key:
                log.warning("ignoring the weight cache entry %s: it was written for another file or version", path)
                return None
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        log.warning("ignoring the unreadable weight cache entry %s (%s)", path, error)
        return None
    if tensors_sha256(tensors) != metadata.get("tensors_sha256"):
        log.warning("removing the weight cache entry %s: its tensors fail their checksum", path)
        path.unlink(missing_ok=True)
        return None
    os.utime(path)  # most recently used: evicted last
    log.debug("read converted weights from %s", path)
    return tensors, metadata


def _entries() -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of every entry of every kind."""
    found = []
    for path in cache_dir().glob("*/*.safetensors"):
        try:
            info = path.stat()
        except OSError:
            continue
        found.append((info.st_mtime, info.st_size, path))
    return sorted(found)


def evict(keep: Path | None = None, limit: int | None = None) -> list[Path]:
    """Remove the least recently used entries until all fit in ``limit`` (default :func:`max_bytes`);
    ``keep`` is removed last. Returns the paths removed."""
    limit = max_bytes() if limit is None else limit
    entries = sorted(_entries(), key=lambda e: (e[2] == keep, e[0]))
    total, removed = sum(size for _, size, _ in entries), []
    for _, size, path in entries:
        if total <= limit:
            break
        path.unlink(missing_ok=True)
        total -= size
        removed.append(path)
    if removed:
        log.info("weight cache over %d bytes: removed %d least recently used entries", limit, len(removed))
    return removed


def _write_to(path: Path, source_key: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> Path | None:
    """Store converted weights atomically within the byte budget; returns the entry's path, or None
    if it could not (or may not) be written."""
    size = sum(t.numel() * t.element_size() for t in tensors.values())
    if size > max_bytes():
        log.info("not caching %s: %d bytes is over the cache's %d", path.name, size, max_bytes())
        return None
    header = {**metadata, "format": FORMAT, "version": VERSION, "source_key": source_key,
              "tensors_sha256": tensors_sha256(tensors)}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _clean_once(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # a live write's temp file is never cleaned
            save_file({k: v.contiguous() for k, v in tensors.items()}, tmp, metadata=header)
            os.replace(tmp, path)
    except (OSError, SafetensorError, ValueError, RuntimeError) as error:
        log.warning("could not cache converted weights in %s (%s)", path.parent, error)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return None
    log.info("cached converted weights in %s", path)
    evict(keep=path)
    return path


_pending: list[threading.Thread] = []
_pending_lock = threading.Lock()


def write_soon(source_key: str, kind: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    """Store converted weights atomically, in a background (non-daemon) thread; the tensors must
    not change meanwhile. A fault is logged, never raised."""
    path = entry_path(source_key, kind)  # decided now, not when the thread runs
    thread = threading.Thread(target=_write_to, args=(path, source_key, tensors, metadata),
                              name=f"attnscope-cache-{source_key[:8]}")
    with _pending_lock:
        _pending[:] = [t for t in _pending if t.is_alive()]
        _pending.append(thread)
    thread.start()


def flush() -> None:
    """Wait until every background write has finished."""
    with _pending_lock:
        threads = list(_pending)
    for thread in threads:
        thread.join()
