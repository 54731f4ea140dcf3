"""The Hugging Face hub cache, read in place: where ``huggingface_hub`` keeps the models a researcher has
downloaded (``models--org--name/snapshots/<revision>/``, each file a link to ``../../blobs/<hash>``).

* :func:`hub_cache` is the cache's folder: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
  ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (``huggingface_hub``'s own order).
* :func:`cached_models` lists each cached model once, as ``org/name``, at its newest snapshot: the revision
  ``refs/main`` names when that snapshot is there, else the most recently written one. A snapshot that is a
  Hugging Face folder is one model; a snapshot of GGUF files (``…-GGUF`` repositories) gives one model per file.
* Links are followed only inside the model's own cache folder (``snapshots/<rev>/config.json`` →
  ``../../blobs/…``, :func:`core.io.files.model_roots`): a snapshot holding a link that leads anywhere else is
  skipped with a problem naming it, as is one whose files cannot be read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.io.checkpoint import CheckpointError
from core.io.files import model_roots, resolve_inside
from core.io.pretrained.gguf_header import is_gguf

REPO_PREFIX = "models--"
MAX_FILES = 10_000  # files looked at in one snapshot at most
MAX_MODELS = 200


@dataclass(frozen=True)
class CachedModel:
    """One model of the hub cache: ``name`` (``org/name``, a GGUF's file name after it), ``path`` (the
    snapshot folder or the ``.gguf`` inside it) and ``revision`` (the snapshot's commit hash)."""

    name: str
    path: Path
    revision: str


def hub_cache() -> Path:
    """Where ``huggingface_hub`` keeps downloaded models on this machine (it may not exist)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = Path(os.environ["XDG_CACHE_HOME"]) if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def is_hub_cache(folder: Path) -> bool:
    """Whether ``folder`` is a hub cache: it holds at least one ``models--…`` folder with snapshots."""
    try:
        return folder.is_dir() and any(p.name.startswith(REPO_PREFIX) and (p / "snapshots").is_dir()
                                       for p in folder.iterdir())
    except OSError:
        return False


def repo_name(folder_name: str) -> str:
    """``models--org--name`` → ``org/name`` (``models--gpt2`` → ``gpt2``)."""
    return "/".join(folder_name.removeprefix(REPO_PREFIX).split("--"))


def _newest_snapshot(repo: Path) -> Path | None:
    """The snapshot ``refs/main`` names when present, else the most recently modified one."""
    snapshots, ref = repo / "snapshots", repo / "refs" / "main"
    try:
        main = ref.read_text(encoding="ascii").strip() if ref.is_file() and not ref.is_symlink() else ""
    except (OSError, UnicodeDecodeError):
        main = ""
    if main and main.isalnum() and (snapshots / main).is_dir() and not (snapshots / main).is_symlink():
        return snapshots / main
    found = [p for p in snapshots.iterdir() if p.is_dir() and not p.is_symlink()]
    return max(found, key=lambda p: p.stat().st_mtime_ns, default=None)


def links_stay_inside(snapshot: Path) -> str | None:
    """None when every file under ``snapshot`` is a plain file or a link to a file inside the model's cache
    folder (:func:`~core.io.files.model_roots`); else the first that is not, relative to the snapshot."""
    roots, seen = model_roots(snapshot), 0
    for folder, dirs, files in os.walk(snapshot):  # os.walk does not descend into linked folders
        for entry in [*files, *dirs]:
            seen += 1
            path = Path(folder) / entry
            if seen > MAX_FILES:
                return f"{path.relative_to(snapshot)} (more than {MAX_FILES:,} files)"
            if not path.is_symlink():
                continue
            try:
                if resolve_inside(path, roots).is_dir():  # a linked folder is not followed
                    return str(path.relative_to(snapshot))
            except CheckpointError:
                return str(path.relative_to(snapshot))
    return None


def cached_models(cache: Path) -> tuple[list[CachedModel], list[str]]:
    """Every model of the hub cache at ``cache`` (at its newest snapshot, sorted by name), and a line for
    each cached repository skipped (a link out of its cache folder, nothing Attnscope opens)."""
    models, problems = [], []
    try:
        repos = sorted(p for p in cache.iterdir() if p.name.startswith(REPO_PREFIX) and not p.is_symlink())
    except OSError:
        return [], [f"The Hugging Face cache {cache} cannot be read."]
    for repo in repos:
        name = repo_name(repo.name)
        try:
            snapshot = _newest_snapshot(repo) if (repo / "snapshots").is_dir() else None
            if snapshot is None:
                continue  # a download that never finished
            escaping = links_stay_inside(snapshot)
            if escaping is not None:
                problems.append(f"{name}: skipped, {escaping} links outside its cache folder")
                continue
            models.extend(_models_in(name, snapshot))
        except OSError as error:
            problems.append(f"{name}: cannot be read ({error.strerror or error})")
    return models[:MAX_MODELS], problems


def _models_in(name: str, snapshot: Path) -> list[CachedModel]:
    """The snapshot as one folder model, or each GGUF file in it (none: nothing to open)."""
    revision = snapshot.name
    if (snapshot / "config.json").is_file():
        return [CachedModel(name, snapshot, revision)]
    ggufs = sorted(p for p in snapshot.iterdir() if p.suffix.lower() == ".gguf" and is_gguf(p))
    return [CachedModel(f"{name}/{p.name}", p, revision) for p in ggufs]
