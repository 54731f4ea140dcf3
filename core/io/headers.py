"""A model's file checked from its header alone: what the server may ask of a file it never loads.

:func:`check_header` reads only what each format keeps before its data: a GGUF's scanned header and the
config it implies, an Attnscope checkpoint's metadata and tensor index, a CTranslate2 ``model.bin``'s variable
table, a Hugging Face folder's ``config.json`` and safetensors indexes. Every count, size and link is checked
against its format's bounds and load budget, so a 1 TB sparse file with a valid GGUF opening is refused in
milliseconds, and nothing of the data is read, hashed or mapped. What passes is loaded where it runs (the
model worker), whose loader checks the rest.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from core.io.checkpoint import CheckpointError, read_info
from core.io.files import model_file
from core.io.identify import ModelFile, identify
from core.io.pretrained.ct2_whisper import is_ctranslate2_folder
from core.io.pretrained.ctranslate2 import read_header
from core.io.pretrained.gguf_config import gguf_config
from core.io.pretrained.gguf_header import scan_gguf
from core.io.pretrained.hf_files import FLOAT_DTYPES, TORCH_DTYPES, folder_config, weight_files
from core.io.pretrained.hf_folder import READERS, supported_model_types
from core.io.pretrained.memory import budget_bytes, check_fits
from core.io.verify import check_header_size


def check_header(path: str | os.PathLike) -> ModelFile:
    """What ``path`` holds (:func:`~core.io.identify.identify`), its header checked within bounds and budget.

    Raises:
        CheckpointError: what :func:`identify` refuses, or the first count, size, type or link out of bounds:
            one line naming the file.
    """
    found = identify(path)
    if found.kind == "checkpoint":
        read_info(found.path, verify=False)
    elif found.kind == "pretrained" and found.path.is_file():
        gguf_config(scan_gguf(found.path), found.path)
    elif found.kind == "pretrained" and is_ctranslate2_folder(found.path):
        bin_file = model_file(found.path / "model.bin", found.path)
        read_header([bin_file], label=f"{found.path.name}/model.bin")
    elif found.kind == "pretrained":
        _check_folder(found.path)
    return found


def _check_folder(folder: Path) -> None:
    """A Hugging Face folder: a family Attnscope reads, weights files inside the folder whose headers (of a bounded
    size, read without mapping the files) list float tensors that fit what this machine can give a model, at their
    stored size (the least they take; the family's reader checks the precision it keeps them in)."""
    model_type = folder_config(folder).get("model_type")
    if not isinstance(model_type, str) or model_type not in READERS:
        raise CheckpointError(f"{folder.name}: model_type {str(model_type)[:40]!r} is not supported as a folder; "
                              f"supported: {supported_model_types()}")
    total, budget = 0, budget_bytes()
    for path in weight_files(folder):  # each resolved inside the folder
        for dtype, shape in _tensor_index(path, folder):
            if dtype not in FLOAT_DTYPES:
                continue  # the family's reader refuses the ones it uses (some folders keep integer buffers)
            total += TORCH_DTYPES[dtype].itemsize * math.prod(shape)
            if total > budget:
                check_fits(folder.name, total, "as stored")


def _tensor_index(path: Path, folder: Path) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype, shape) of every tensor a safetensors file's header lists, read with plain reads (its 8-byte length,
    then at most :data:`~core.io.verify.MAX_HEADER_BYTES` of JSON): nothing is mapped.

    Raises:
        CheckpointError: a header that is too large, runs past the file, or is not a tensor index.
    """
    name = f"{folder.name}/{path.name}"
    try:
        check_header_size(path)
        with open(path, "rb") as handle:
            raw = handle.read(8)
            size = int.from_bytes(raw, "little") if len(raw) == 8 else -1
            if not 0 < size <= os.fstat(handle.fileno()).st_size - 8:
                raise CheckpointError(f"{name} is not readable safetensors (its header runs past the file)")
            header = json.loads(handle.read(size))
        entries = [v for k, v in header.items() if k != "__metadata__"]
        return [(str(v["dtype"]), tuple(int(n) for n in v["shape"])) for v in entries]
    except CheckpointError as error:
        raise CheckpointError(str(error) if str(error).startswith(name) else f"{folder.name}/{error}") from None
    except OSError as error:
        raise CheckpointError(f"{name} cannot be read ({error.strerror})") from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):  # JSON, or not an index of tensors
        raise CheckpointError(f"{name} is not readable safetensors (its header is not a tensor index)") from None

