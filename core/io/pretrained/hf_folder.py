"""Which family reads a Hugging Face model folder: ``config.json``'s ``model_type`` picks the reader.

Adding a family is one model file (``core/model/families/``) plus one reader
(``core/io/pretrained/hf_<family>.py``) registered in :data:`READERS`. A folder of any other
``model_type`` is refused with one line naming what is supported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from core.io.checkpoint import CheckpointError
from core.io.pretrained import (hf_albert, hf_bart, hf_bert, hf_deberta, hf_distilbert, hf_gemma, hf_gpt, hf_llama,
                                hf_marian, hf_modernbert, hf_mpnet, hf_phi3, hf_t5, hf_whisper)
from core.io.pretrained.hf_files import FolderRead, folder_config

#: model_type → reader (folder → :class:`FolderRead`).
READERS: dict[str, Callable[[Path], FolderRead]] = {
    "bert": hf_bert.read_bert,
    "roberta": hf_bert.read_roberta,
    "xlm-roberta": hf_bert.read_xlm_roberta,
    "electra": hf_bert.read_electra,
    "distilbert": hf_distilbert.read_distilbert,
    "albert": hf_albert.read_albert,
    "mpnet": hf_mpnet.read_mpnet,
    "deberta-v2": hf_deberta.read_deberta,
    "modernbert": hf_modernbert.read_modernbert,
    **{kind: hf_llama.read_llama for kind in hf_llama.SUPPORTED_MODEL_TYPES},
    **{kind: hf_gemma.read_gemma for kind in hf_gemma.SUPPORTED_MODEL_TYPES},
    "phi3": hf_phi3.read_phi3,
    **{kind: hf_gpt.read_gpt for kind in hf_gpt.SUPPORTED_MODEL_TYPES},
    "bart": hf_bart.read_bart,
    "mbart": hf_bart.read_bart,
    "marian": hf_marian.read_marian,
    "t5": hf_t5.read_t5,
    "whisper": hf_whisper.read_hf_whisper,
}


def is_model_folder(path: Path) -> bool:
    """Whether ``path`` looks like a Hugging Face model folder (has ``config.json``)."""
    return path.is_dir() and (path / "config.json").is_file()


def supported_model_types() -> str:
    """The folder families that open, for refusal messages."""
    return ", ".join(sorted(READERS))


def read_folder(folder: Path) -> FolderRead:
    """Open a Hugging Face folder with its family's reader.

    Raises:
        CheckpointError: an unsupported ``model_type`` (naming the supported ones and the GGUF
            route), or whatever the family's reader refuses.
    """
    model_type = folder_config(folder).get("model_type")
    reader = READERS.get(model_type) if isinstance(model_type, str) else None
    if reader is None:
        raise CheckpointError(f"{folder.name}: model_type {model_type!r} is not supported as a folder; "
                              f"supported: {supported_model_types()} (Llama-family models also open as .gguf files)")
    return reader(folder)
