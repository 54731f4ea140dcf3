"""Where uploads are kept on disk, and how much of it they may take.

``runs/uploads/<owner>/<digest>/``: one folder per browser session (its owner token, made by
:func:`new_owner`, never taken from a URL) and one per upload (a digest of its bytes).

* A session keeps at most :data:`SESSION_UPLOADS` uploads' worth of bytes (the upload cap each): a new
  upload that would pass it replaces the session's oldest ones (:func:`make_room`).
* All sessions together keep at most :data:`SERVER_UPLOADS` uploads' worth: an upload whose bytes
  would pass it is refused until sessions end (:func:`check_server_room`; a zip is counted by its
  size, so what it unpacks to may pass the quota by at most one upload cap).
* A session's uploads are removed when the session ends and Streamlit drops its state (the
  :class:`Janitor` kept in it); uploads whose session is gone without one (a server killed or
  restarted) are removed by the next upload once :data:`ORPHAN_S` seconds old.

No Streamlit here.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import stat
import time
import weakref
from pathlib import Path

from core import CheckpointError

log = logging.getLogger(__name__)

SESSION_UPLOADS = 2  # a session may keep two uploads as large as the cap (to compare two models)
SERVER_UPLOADS = 8  # all sessions together
ORPHAN_S = 600.0  # an owner folder no live session holds is removed once this old
_OWNER = re.compile(r"[0-9a-f]{32}")
_DIGEST = re.compile(r"[0-9a-f]{16}")
_LIVE: set[str] = set()  # owners whose session holds a Janitor in this process


def new_owner() -> str:
    """A fresh, unguessable owner token for one browser session."""
    return secrets.token_hex(16)


def is_owner(token: object) -> bool:
    """Whether ``token`` looks like an owner token (never a path)."""
    return isinstance(token, str) and _OWNER.fullmatch(token) is not None


def is_upload_digest(name: str) -> bool:
    """Whether ``name`` is an upload's folder name."""
    return _DIGEST.fullmatch(name) is not None


def owner_folder(uploads: Path, owner: str) -> Path:
    """The folder holding ``owner``'s uploads.

    Raises:
        CheckpointError: ``owner`` is not an owner token.
    """
    if not is_owner(owner):
        raise CheckpointError("this session has no upload folder")
    return uploads / owner


def bytes_under(folder: Path) -> int:
    """The bytes of the regular files under ``folder`` (links not followed)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def _uploads_in(folder: Path) -> list[Path]:
    """The session's uploads, oldest first."""
    try:
        found = [p for p in folder.iterdir() if is_upload_digest(p.name) and not p.is_symlink()]
        return sorted(found, key=lambda p: p.stat().st_mtime_ns)
    except OSError:
        return []


def make_room(folder: Path, needed: int, quota: int) -> None:
    """Remove the session's oldest uploads until ``needed`` more bytes fit in its ``quota``.

    Raises:
        CheckpointError: ``needed`` alone is over the quota.
    """
    if needed > quota:
        raise CheckpointError(f"the upload takes {needed / 2**20:.0f} MB on disk, over this session's "
                              f"{quota / 2**20:.0f} MB")
    kept = _uploads_in(folder)
    used = sum(bytes_under(p) for p in kept)
    while kept and used + needed > quota:
        oldest = kept.pop(0)
        used -= bytes_under(oldest)
        log.info("upload %s removed to make room in its session's quota", oldest.name)
        shutil.rmtree(oldest, ignore_errors=True)


def check_server_room(uploads: Path, incoming: int, max_bytes: int) -> None:
    """Remove orphaned uploads, then refuse ``incoming`` bytes that would pass the server's quota.

    Raises:
        CheckpointError: the uploads of every session already fill the server's quota.
    """
    remove_orphans(uploads)
    quota = SERVER_UPLOADS * max_bytes
    if uploads.is_dir() and bytes_under(uploads) + incoming > quota:
        raise CheckpointError(f"the server's space for uploads ({quota / 2**30:.1f} GB) is full; try again when "
                              "other sessions have ended")


def remove_orphans(uploads: Path, now: float | None = None) -> None:
    """Remove the owner folders no live session of this process holds, once :data:`ORPHAN_S` old."""
    now = time.time() if now is None else now
    try:
        folders = [p for p in uploads.iterdir() if is_owner(p.name) and not p.is_symlink()]
    except OSError:
        return
    for folder in folders:
        try:
            idle = now - folder.stat().st_mtime
        except OSError:
            continue
        if folder.name not in _LIVE and idle > ORPHAN_S:
            log.info("orphaned uploads %s removed", folder.name)
            shutil.rmtree(folder, ignore_errors=True)


def _release(uploads: Path, owner: str) -> None:
    _LIVE.discard(owner)
    shutil.rmtree(owner_folder(uploads, owner), ignore_errors=True)


class Janitor:
    """Kept in a session's state: while it lives the session's uploads are kept; when the session ends and
    Streamlit drops its state (or the server stops), they are removed."""

    def __init__(self, uploads: Path, owner: str) -> None:
        _LIVE.add(owner)
        self.owner = owner
        self._finalizer = weakref.finalize(self, _release, uploads, owner)

    def release(self) -> None:
        """Remove the session's uploads now."""
        self._finalizer()
