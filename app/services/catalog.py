"""Where checkpoints come from: the shipped ones, the user's own runs, the installed pretrained
models, the researcher's own models folder (``--models DIR``), and this session's uploads.

Checkpoints are referred to by a key (``shipped:reverse``, ``run:my-run``, ``pretrained:<name>``,
``models:<path inside DIR>``, ``upload:<digest>``), never by a path from the browser, so a URL cannot
point the app at an arbitrary file. Uploads are listed only to the session that made them (``owner``, see
:mod:`app.services.uploads`); no link is followed out of the runs folder.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from app.services import storage, uploads
from core import (cached_models, check_header, CheckpointError, CheckpointInfo, convert, find_models, get_task,
                  hub_cache, identify, is_hub_cache, is_pretrained, model_version, pretrained_models, read_info,
                  training)

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
SHIPPED_DIR = ROOT / "assets" / "checkpoints"
DEFAULT_KEY = "shipped:translation"
UPLOADS = "uploads"
UNTRUSTED = ("upload", "models")  # the sources whose models are loaded, read and run only in a worker process


def runs_dir() -> Path:
    """The user's runs folder: ``$ATTNSCOPE_RUNS`` or ``runs/`` in the repository."""
    return Path(os.environ.get("ATTNSCOPE_RUNS", ROOT / "runs"))


def models_dir() -> Path | None:
    """The researcher's models folder, read in place: ``streamlit run app/streamlit_app.py -- --models DIR``
    or ``$ATTNSCOPE_MODELS`` (the option wins); when neither is given, the Hugging Face hub cache
    (``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``) if this machine has one; else None."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--models")
    given = parser.parse_known_args(sys.argv[1:])[0].models or os.environ.get("ATTNSCOPE_MODELS")
    if given:
        return Path(given).expanduser()
    cache = hub_cache()
    return cache if is_hub_cache(cache) else None


def checkpoint_path(folder: Path, name: str) -> Path:
    """Where the checkpoint called ``name`` lives in ``folder`` (core knows the file layout)."""
    return training.run_checkpoint_path(folder, name)


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
    deletable: bool = False  # by the session it was listed to: its own uploads, runs on a private server
    pretrained: bool = False  # a Hugging Face folder or a GGUF file, opened by core.load_pretrained

    @property
    def untrusted(self) -> bool:
        """Whether the model comes from an upload or the models folder (its runs go to a worker process)."""
        return self.source in UNTRUSTED

    @property
    def label(self) -> str:
        """What the picker shows."""
        prefix = {"shipped": "", "run": "my run · ", "upload": "uploaded · ", "pretrained": "pretrained · ",
                  "models": "my models · "}
        return f"{prefix[self.source]}{self.name}" + (f" — {self.metric}" if self.metric else "")


@functools.lru_cache(maxsize=256)
def _info_at(path: str, mtime_ns: int, size: int, verify: bool) -> CheckpointInfo:
    return read_info(path, verify=verify)


def info(path: Path, verify: bool = True) -> CheckpointInfo:
    """A checkpoint's header, read once per version of the file (keyed by its mtime and size), its checksum
    verified unless ``verify`` is off (a file from an upload or the models folder: its worker verifies it).

    Raises:
        CheckpointError: missing, unreadable or corrupted file.
    """
    try:
        stat = path.stat()
    except OSError:
        raise CheckpointError(f"checkpoint not found: {path.name}") from None
    return _info_at(str(path), stat.st_mtime_ns, stat.st_size, verify)


@functools.lru_cache(maxsize=256)
def _header_checked(path: str, version: str) -> None:
    check_header(path)


def header_checked(path: Path) -> None:
    """Check a pretrained model from the models folder or an upload from its header (core's bounds and budget),
    once per version of its files: nothing of its data is read, hashed or mapped in the server.

    Raises:
        CheckpointError: missing files, or a count, size, type or link out of bounds (one line).
    """
    _header_checked(str(path), pretrained_version(path))


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


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a plain entry of ``folder`` and resolves inside the runs folder (no link out)."""
    if path.is_symlink():
        return False
    try:
        path.resolve().relative_to(runs_dir().resolve() if folder != SHIPPED_DIR else SHIPPED_DIR.resolve())
    except (OSError, ValueError, RuntimeError):
        return False
    return True


def _checkpoint_entry(key: str, source: str, name: str, path: Path, deletable: bool) -> Entry:
    header = info(path, verify=source not in UNTRUSTED)
    return Entry(key, source, name, path, header.task, _describe(header), _metric_text(header), deletable)


def _skipped(name: str, error: BaseException) -> str:
    if not isinstance(error, CheckpointError):  # the loader's boundary should make this unreachable
        log.warning("skipping %s: %r", name, error)
        return f"{name}: cannot be read ({type(error).__name__})"
    return str(error)


def _entries_in(folder: Path, source: str, deletable: bool = False) -> tuple[list[Entry], list[str]]:
    entries, problems = [], []
    if not folder.is_dir() or folder.is_symlink():
        return entries, problems
    for path in training.run_checkpoints(folder):
        if not _inside(path, folder):
            continue
        try:
            entries.append(_checkpoint_entry(f"{source}:{path.stem}", source, path.stem, path, deletable))
        except Exception as error:  # one bad file is skipped with a warning, never breaks a page
            problems.append(_skipped(path.name, error))
    return entries, problems


def _pretrained_entries() -> list[Entry]:
    return [Entry(f"pretrained:{p.name}", "pretrained", p.name, Path(p.path), None, p.description, "",
                  pretrained=True) for p in pretrained_models()]


def installed_speech_entries() -> list[Entry]:
    """The installed speech models (Whisper) as entries ``pretrained:<name>``: the sidebar offers them on the
    Lesson, the one page beside Whisper's own that follows a speech model (every other page reads text)."""
    return [Entry(f"pretrained:{p.name}", "pretrained", p.name, Path(p.path), None, p.description, "",
                  pretrained=True) for p in pretrained_models("audio")]


def _models_entries() -> tuple[list[Entry], list[str]]:
    """Every model under the models folder (``--models DIR``), read in place."""
    folder = models_dir()
    if folder is None:
        return [], []
    if not folder.is_dir():
        return [], [f"The models folder {folder} does not exist."]
    for cache in (folder, folder / "hub"):  # the hub cache, or the HF_HOME folder holding it
        if is_hub_cache(cache):
            return _cache_entries(cache)
    entries, problems = [], []
    for found in find_models(folder):
        name = str(found.path.relative_to(folder))
        if found.modality != "text":
            continue  # a speech model: the Whisper page lists it (speech_entries)
        if found.kind == "nn-transformer":
            problems.append(f"{name}: an nn.Transformer state dict; import it first (python -m core import)")
            continue
        try:
            if found.kind == "pretrained":
                header_checked(found.path)
                entries.append(Entry(f"models:{name}", "models", name, found.path, None,
                                     f"A model from your models folder ({folder}).", "", pretrained=True))
            else:
                entries.append(_checkpoint_entry(f"models:{name}", "models", name, found.path, False))
        except Exception as error:  # one bad file is skipped with a warning, never breaks a page
            problems.append(_skipped(name, error))
    return entries, problems


def _cache_entries(cache: Path) -> tuple[list[Entry], list[str]]:
    """Each model of a Hugging Face hub cache as ``org/name`` at its newest snapshot, its revision shown (its
    header checked, as any model of the models folder)."""
    found, problems = cached_models(cache)
    entries = []
    for model in found:
        if _speech(model.path):
            continue  # a speech model: the Whisper page lists it (speech_entries)
        try:
            header_checked(model.path)
            entries.append(Entry(f"models:{model.name}", "models", model.name, model.path, None,
                                 f"{model.name} from your Hugging Face cache ({cache}), revision {model.revision}.",
                                 f"revision {model.revision[:10]}", pretrained=True))
        except Exception as error:  # one bad model is skipped with a warning, never breaks a page
            problems.append(_skipped(model.name, error))
    return entries, problems


def speech_entries(owner: str | None = None) -> list[Entry]:
    """The speech models (Whisper, Hugging Face or CTranslate2 folders) of the models folder (or the Hugging Face
    cache), read in place, then ``owner``'s uploaded ones; their runs go to a worker process, as every such
    model's."""
    folder = models_dir()
    found = _speech_models(folder) if folder is not None and folder.is_dir() else []
    return found + [e for e in _upload_entries(owner)[0] if e.pretrained and _speech(e.path)]


def _speech_models(folder: Path) -> list[Entry]:
    """The models folder's Whisper models that pass their header check: a hub cache's as ``org/name``."""
    cache = next((c for c in (folder, folder / "hub") if is_hub_cache(c)), None)
    if cache is not None:
        return [Entry(f"models:{m.name}", "models", m.name, m.path, None,
                      f"{m.name} from your Hugging Face cache ({cache}), revision {m.revision}.",
                      f"revision {m.revision[:10]}", pretrained=True)
                for m in cached_models(cache)[0] if _speech(m.path) and _checked(m.path)]
    return [Entry(f"models:{m.path.relative_to(folder)}", "models", str(m.path.relative_to(folder)), m.path,
                  None, f"A Whisper model from your models folder ({folder}).", "", pretrained=True)
            for m in find_models(folder) if m.modality == "audio" and _checked(m.path)]


def _checked(path: Path) -> bool:
    """Whether a models-folder model passes :func:`header_checked` (one that does not is left out)."""
    try:
        header_checked(path)
        return True
    except CheckpointError:
        return False


def _speech(path: Path) -> bool:
    try:
        return identify(path).modality == "audio"
    except CheckpointError:
        return False


def _upload_entries(owner: str | None) -> tuple[list[Entry], list[str]]:
    """``owner``'s uploads, newest first (none without an owner)."""
    if not storage.is_owner(owner):
        return [], []
    base = runs_dir() / UPLOADS
    folder = storage.owner_folder(base, owner)
    if base.is_symlink() or folder.is_symlink() or not folder.is_dir():
        return [], (["Skipped the uploads folder: it is a link."] if base.is_symlink() else [])
    entries, problems = [], []
    found = [p for p in folder.iterdir() if storage.is_upload_digest(p.name) and _inside(p, folder)]
    for item in sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True):
        payload, name = uploads.payload_of(item), uploads.name_of(item)
        try:
            if payload is None or not _inside(payload, item):
                raise CheckpointError(f"{name}: the upload is incomplete")
            key = f"upload:{item.name}"
            if is_pretrained(payload):
                entries.append(Entry(key, "upload", name, payload, None, "An uploaded pretrained model.", "",
                                     True, pretrained=True))
            else:
                entries.append(_checkpoint_entry(key, "upload", name, payload, True))
        except Exception as error:
            problems.append(_skipped(name, error))
    return entries, problems


def shared_entries(runs_deletable: bool = True) -> tuple[list[Entry], list[str]]:
    """The checkpoints every session sees (shipped, runs, pretrained, the models folder's) and a message for each
    unreadable one. ``runs_deletable``: whether sessions may delete the runs folder's runs."""
    order = {name: i for i, name in enumerate(["translation", "reverse", "copy", "sort", "dates", "addition",
                                               "sentiment", "lm"])}
    shipped, problems = _entries_in(SHIPPED_DIR, "shipped")
    shipped.sort(key=lambda e: order.get(e.name, len(order)))
    runs, run_problems = _entries_in(runs_dir(), "run", runs_deletable)
    models, model_problems = _models_entries()
    return shipped + runs + _pretrained_entries() + models, problems + run_problems + model_problems


def upload_entries(owner: str | None) -> tuple[list[Entry], list[str]]:
    """``owner``'s uploads, newest first, and a message for each unreadable one (none without an owner)."""
    return _upload_entries(owner)


def list_entries(owner: str | None = None, runs_deletable: bool = True) -> tuple[list[Entry], list[str]]:
    """Every readable checkpoint (:func:`shared_entries`, then ``owner``'s uploads) and a message for each
    unreadable one."""
    shared, problems = shared_entries(runs_deletable)
    mine, upload_problems = _upload_entries(owner)
    return shared + mine, problems + upload_problems


def save_upload(owner: str, filename: str, data: bytes) -> str:
    """Check an upload fully and keep it as ``owner``'s; returns its key.

    Raises:
        CheckpointError: wrong type (the message lists the accepted ones), too large, or refused.
    """
    return "upload:" + uploads.save_upload(runs_dir() / UPLOADS, owner, filename, data)


def upload_janitor(owner: str) -> storage.Janitor:
    """What a session keeps in its state so that ``owner``'s uploads are removed when the session ends."""
    return storage.Janitor(runs_dir() / UPLOADS, owner)


def import_upload(owner: str, filename: str, data: bytes, options: convert.NNImportOptions) -> str:
    """Import an uploaded ``nn.Transformer`` state dict (see :func:`app.services.uploads.import_upload`); returns its key.

    Raises:
        CheckpointError: options that do not fit the file, or a checkpoint the loader refuses.
    """
    return "upload:" + uploads.import_upload(runs_dir() / UPLOADS, owner, filename, data, options)


def entry_at(listed: list[Entry], path: Path, pretrained: bool) -> Entry:
    """The entry of ``listed`` whose model is at ``path``; one this session does not list is taken for an upload
    (its runs go to a worker process)."""
    found = next((e for e in listed if e.path == path), None)
    return found or Entry(f"unlisted:{path}", "upload", path.name, path, None, "", "", pretrained=pretrained)


def version(entry: Entry) -> str:
    """What identifies this version of the entry's model for the caches: a checkpoint's verified SHA-256 (an
    upload's or a models folder's: the SHA-256 its header claims, with its size and modification time); for a
    pretrained model the path's size and modification time."""
    if entry.pretrained:
        return pretrained_version(entry.path)
    if entry.untrusted:
        return f"{info(entry.path, verify=False).sha256};{pretrained_version(entry.path)}"
    return info(entry.path).sha256


def pretrained_version(path: Path) -> str:
    """A pretrained model's version for the caches: its files' sizes and modification times (core knows
    which files make the model)."""
    return model_version(path)


def delete(entry: Entry) -> None:
    """Delete an entry the session may delete (its own upload, or a run on a private server) and its
    resume state. Shipped checkpoints and pretrained models are never deleted.

    Raises:
        ValueError: the entry may not be deleted, or is a link / outside the runs folder.
    """
    if not entry.deletable or entry.source not in ("run", "upload"):
        raise ValueError("only your own runs and uploads can be deleted")
    if entry.source == "upload":
        folder = uploads.upload_folder(entry.path)
        if folder is None or not _inside(folder, folder.parent):
            raise ValueError("this upload is not in your uploads folder")
        shutil.rmtree(folder)
        return
    if not _inside(entry.path, entry.path.parent):
        raise ValueError("this run is not in the runs folder")
    entry.path.unlink(missing_ok=True)
    training.resume_state_path(entry.path).unlink(missing_ok=True)
