"""A cache of converted pretrained weights: one safetensors file per source file SHA-256.

Dequantizing a GGUF takes seconds; reading the float32 result back takes a fraction
of that. The cache lives in ``$ATTNSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnscope``,
else ``~/.cache/attnscope``. Entries are safetensors (never pickles), written
atomically, and named by the SHA-256 of the file they were converted from, so an
edited source never meets a stale entry. Any fault reading or writing the cache is
logged and ignored: the caller converts the source again. :func:`write_soon` writes in a
background thread (a few hundred MB take a second or more) that the interpreter waits for at exit.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path

from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

log = logging.getLogger(__name__)

FORMAT = "attnscope-weight-cache"
VERSION = "1"


def cache_dir() -> Path:
    """The folder holding converted weights (not created here)."""
    if os.environ.get("ATTNSCOPE_CACHE_DIR"):
        return Path(os.environ["ATTNSCOPE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attnscope"


def entry_path(source_sha256: str, kind: str) -> Path:
    """Where the converted weights of the source file with this SHA-256 are kept."""
    return cache_dir() / kind / f"{source_sha256}.safetensors"


def read(source_sha256: str, kind: str) -> tuple[dict[str, Tensor], dict[str, str]] | None:
    """The cached (tensors, metadata) for this source, or None when absent or unusable."""
    path = entry_path(source_sha256, kind)
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            metadata = handle.metadata() or {}
            if metadata.get("format") != FORMAT or metadata.get("version") != VERSION \
                    or metadata.get("source_sha256") != source_sha256:
                log.warning("ignoring the weight cache entry %s: it was written for another file or version", path)
                return None
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        log.warning("ignoring the unreadable weight cache entry %s (%s)", path, error)
        return None
    log.debug("read converted weights from %s", path)
    return tensors, metadata


def _write_to(path: Path, source_sha256: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> Path | None:
    """Store converted weights atomically; returns the entry's path, or None if it could not be written."""
    header = {**metadata, "format": FORMAT, "version": VERSION, "source_sha256": source_sha256}
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        save_file({k: v.contiguous() for k, v in tensors.items()}, tmp, metadata=header)
        os.replace(tmp, path)
    except (OSError, SafetensorError, ValueError, RuntimeError) as error:
        log.warning("could not cache converted weights in %s (%s)", path.parent, error)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        return None
    log.info("cached converted weights in %s", path)
    return path


_pending: list[threading.Thread] = []
_pending_lock = threading.Lock()


def write_soon(source_sha256: str, kind: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> None:
    """Store converted weights atomically, in a background (non-daemon) thread; the tensors must
    not change meanwhile. A fault is logged, never raised."""
    path = entry_path(source_sha256, kind)  # decided now, not when the thread runs
    thread = threading.Thread(target=_write_to, args=(path, source_sha256, tensors, metadata),
                              name=f"attnscope-cache-{source_sha256[:8]}")
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
