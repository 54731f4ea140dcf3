"""A cache of converted pretrained weights: one safetensors file per source file SHA-256.

Dequantizing a GGUF takes seconds; reading the float32 result back takes a fraction
of that. The cache lives in ``$ATTNSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnscope``,
else ``~/.cache/attnscope``. Entries are safetensors (never pickles), written
atomically, and named by the SHA-256 of the file they were converted from, so an
edited source never meets a stale entry. Any fault reading or writing the cache is
logged and ignored: the caller converts the source again.
"""

from __future__ import annotations

import logging
import os
import tempfile
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


def write(source_sha256: str, kind: str, tensors: dict[str, Tensor], metadata: dict[str, str]) -> Path | None:
    """Store converted weights atomically; returns the entry's path, or None if it could not be written."""
    path = entry_path(source_sha256, kind)
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
