"""Where checkpoints come from: the shipped ones, the user's own runs, and uploads.

Checkpoints are referred to by a key (``shipped:reverse``, ``run:my-run``,
``upload:<sha256>``), never by a path from the browser, so a URL cannot point the
app at an arbitrary file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core import (CheckpointError, CheckpointInfo, get_task, is_resume_state, load_checkpoint, read_info,
                  resume_state_path)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_DIR = ROOT / "assets" / "checkpoints"
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
DEFAULT_KEY = "shipped:translation"
SUFFIX = ".safetensors"  # a checkpoint file's suffix (core's format; core exposes no constant for it)


def runs_dir() -> Path:
    """The user's runs folder: ``$ATTNSCOPE_RUNS`` or ``runs/`` in the repository."""
    return Path(os.environ.get("ATTNSCOPE_RUNS", ROOT / "runs"))


def checkpoint_path(folder: Path, name: str) -> Path:
    """Where the checkpoint called ``name`` lives in ``folder``."""
    return folder / f"{name}{SUFFIX}"


@dataclass(frozen=True)
class Entry:
    """One checkpoint the app can open."""

    key: str
    source: str  # "shipped" | "run" | "upload"
    name: str
    path: Path
    task: str | None
    description: str
    metric: str

    @property
    def label(self) -> str:
        """What the picker shows."""
        prefix = {"shipped": "", "run": "my run · ", "upload": "uploaded · "}[self.source]
        return f"{prefix}{self.name}" + (f" — {self.metric}" if self.metric else "")

    @property
    def deletable(self) -> bool:
        return self.source != "shipped"


@functools.lru_cache(maxsize=256)
def _info_at(path: str, mtime_ns: int, size: int) -> CheckpointInfo:
    return read_info(path)


def info(path: Path) -> CheckpointInfo:
    """A checkpoint's verified header, read once per version of the file (keyed by its mtime and size).

    Raises:
        CheckpointError: missing, unreadable or corrupted file.
    """
    try:
        stat = path.stat()
    except OSError:
        raise CheckpointError(f"checkpoint not found: {path.name}") from None
    return _info_at(str(path), stat.st_mtime_ns, stat.st_size)


def _metric_text(header: CheckpointInfo) -> str:
    test = header.metrics.get("test", {})
    for name in ("exact_match", "accuracy"):
        if name in test:
            return f"test {name.replace('_', ' ')} {test[name]:.1%}"
    if "perplexity" in test:
        return f"test perplexity {test['perplexity']:.2f}"
    return ""


def _describe(header: CheckpointInfo) -> str:
    try:
        return get_task(header.task).description if header.task else "A custom checkpoint."
    except ValueError:
        return f"Trained on an unknown task {header.task!r}."


def _entries_in(folder: Path, source: str) -> tuple[list[Entry], list[str]]:
    entries, problems = [], []
    if not folder.is_dir():
        return entries, problems
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        if is_resume_state(path) or path.is_symlink():
            continue
        try:
            header = info(path)
        except CheckpointError as error:
            problems.append(str(error))
            continue
        key = f"{source}:{path.stem}"
        entries.append(Entry(key, source, path.stem, path, header.task, _describe(header), _metric_text(header)))
    return entries, problems


def list_entries() -> tuple[list[Entry], list[str]]:
    """Every readable checkpoint, shipped first, and a message for each unreadable one."""
    order = {name: i for i, name in enumerate(["translation", "reverse", "copy", "sort", "dates", "addition",
                                                "sentiment", "lm"])}
    shipped, problems = _entries_in(SHIPPED_DIR, "shipped")
    shipped.sort(key=lambda e: order.get(e.name, len(order)))
    runs, run_problems = _entries_in(runs_dir(), "run")
    uploads, upload_problems = _entries_in(runs_dir() / "uploads", "upload")
    return shipped + runs + uploads, problems + run_problems + upload_problems


def save_upload(data: bytes) -> str:
    """Validate an uploaded checkpoint fully and store it under its SHA-256; returns its key.

    Raises:
        CheckpointError: too large, or not a valid Attnscope checkpoint.
    """
    if len(data) > MAX_UPLOAD_BYTES:
        raise CheckpointError(f"the file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB")
    digest = hashlib.sha256(data).hexdigest()[:16]
    folder = runs_dir() / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    target = checkpoint_path(folder, digest)
    fd, tmp = tempfile.mkstemp(suffix=SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        load_checkpoint(tmp)  # checksum, config, shapes, finite weights: refuse anything broken
        os.replace(tmp, target)
    except CheckpointError as error:
        raise CheckpointError(str(error).replace(Path(tmp).name, "the uploaded file")) from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return f"upload:{digest}"


def delete(entry: Entry) -> None:
    """Delete a run or an upload (never a shipped checkpoint) and its resume state."""
    if not entry.deletable:
        raise ValueError("shipped checkpoints cannot be deleted")
    entry.path.unlink(missing_ok=True)
    resume_state_path(entry.path).unlink(missing_ok=True)
