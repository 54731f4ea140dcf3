"""Atomic file writes, and the clean-up of temp files that killed writes leave behind."""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

from core.io.verify import CheckpointError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux
    fcntl = None

log = logging.getLogger(__name__)
T = TypeVar("T")

_TEMP = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.tmp")  # tempfile.mkstemp(prefix=".<name>.", suffix=".tmp")
_TEMP_GRACE_S = 2.0  # a temp file this fresh may be a save that has not locked it yet


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``: temp file in the same folder (locked while written) → fsync →
    ``os.replace`` (keeping the replaced file's permissions) → fsync the folder.

    Raises:
        CheckpointError: naming the file; the previous file is untouched and no temp file is left.
    """
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        clean_stale_temp_files(folder)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise CheckpointError(f"cannot save {path.name}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # released when closed, or when we die
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
    _fsync_folder(folder)


def replace_when_done(path: Path, write: Callable[[Path], T]) -> T:
    """``write`` a temp file beside ``path`` and check it (``write`` raises if a check fails), then
    put it in place of ``path`` atomically, keeping the replaced file's permissions.

    On any failure the temp file is removed and ``path`` is untouched; a ``CheckpointError`` or
    ``ValueError`` from ``write`` is raised again with the temp file's name replaced by ``path``'s.
    """
    folder = path.parent if str(path.parent) else Path(".")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
    except OSError as error:
        raise CheckpointError(f"cannot write {path.name}: {error.strerror or error}") from None
    tmp = Path(name)
    try:
        result = write(tmp)
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else _default_mode())
        os.replace(tmp, path)
    except BaseException as error:
        tmp.unlink(missing_ok=True)
        if isinstance(error, (CheckpointError, ValueError, OSError)):
            message = str(error).replace(str(tmp), str(path)).replace(tmp.name, path.name)
            raise (CheckpointError if isinstance(error, OSError) else type(error))(message) from None
        raise
    _fsync_folder(folder)
    return result


def _fsync_folder(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def clean_stale_temp_files(folder: str | os.PathLike) -> list[str]:
    """Remove temp files left in ``folder`` by saves that were killed (``.<name>.XXXXXXXX.tmp``).

    Only our own temp-name pattern, only plain files, never one that a live save holds locked
    or that is younger than two seconds. Returns the names removed; errors are logged, not raised.
    """
    removed = []
    try:
        candidates = [p for p in Path(folder).iterdir() if _TEMP.fullmatch(p.name)]
    except OSError:
        return removed
    for tmp in candidates:
        try:
            if tmp.is_symlink() or not tmp.is_file() or time.time() - tmp.stat().st_mtime < _TEMP_GRACE_S:
                continue
            with open(tmp, "rb") as handle:
                if fcntl is not None:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a save holds it
                tmp.unlink()
            removed.append(tmp.name)
        except OSError:
            continue
    if removed:
        log.warning("removed %d stale temp file(s) in %s: %s", len(removed), folder, ", ".join(removed))
    return removed


def process_folder(prefix: str) -> str:
    """A new private (0700) folder in the system temp folder, named ``<prefix><pid>-XXXXXXXX``, after removing
    the folders of that prefix whose process no longer runs (a server killed with SIGKILL leaves its own)."""
    root = Path(tempfile.gettempdir())
    owned = re.compile(re.escape(prefix) + r"(\d+)-[A-Za-z0-9_]{8}")
    try:
        stale = [(p, int(m.group(1))) for p in root.iterdir() if (m := owned.fullmatch(p.name))]
    except OSError:
        stale = []
    for folder, pid in stale:
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.getuid() or _process_runs(pid):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        log.warning("removed %s, left by process %d, which no longer runs", folder, pid)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")


def _process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        pass
    return True


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
