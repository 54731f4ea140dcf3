"""The files of a Hugging Face model folder, read safely: ``config.json``, safetensors weights and tokenizers.

Every family reader (``core/io/pretrained/hf_*.py``) uses these and returns a :class:`FolderRead`.
Weights are read only from safetensors, single (``model.safetensors``) or sharded
(``model.safetensors.index.json`` naming shards inside the folder); a folder that has only
``pytorch_model.bin`` (a pickle) is refused with the one-line way to convert it. Every header is
read and checked (dtypes, total size against the machine's memory budget, :mod:`~core.io.pretrained.memory`)
before any tensor data is. The tensors are views of the files' memory maps (``safetensors``; pages are read
when first used, and no second copy of the file is made) when kept in their stored precision — float32, or
bf16 / fp16 for a family that runs in it (the Llama family) — else converted to float32 one by one; the bytes
read are reported to :mod:`~core.io.pretrained.progress`.
The tokenizer is ``tokenizer.json``, or for an older BERT-style folder a WordPiece ``vocab.txt``.
Every file opened resolves inside the folder (or a hub cache snapshot's ``blobs/``:
:func:`core.io.files.model_file`): a link to a file elsewhere is refused with its name.
"""

from __future__ import annotations

import io
import json
import keyword
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

import torch
from safetensors import SafetensorError, safe_open
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from torch import Tensor, nn

from core.io.checkpoint import CheckpointError
from core.io.verify import check_header_size
from core.io.files import model_file, model_roots, resolve_inside
from core.io.pretrained import progress
from core.io.pretrained.memory import check_fits
from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.text.tokenizer_check import read_capped

#: Floating-point dtypes a pretrained weight may be stored in, and their torch dtypes.
TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
FLOAT_DTYPES = tuple(TORCH_DTYPES)
#: The most bytes read of a folder's description file (``config.json``, an index, ``modules.json``, a
#: tokenizer's settings) and of an older tokenizer's vocabulary (``vocab.txt``, Marian's ``vocab.json`` and
#: SentencePiece models), whose lines or pieces are counted against :data:`VOCAB_ENTRIES` too.
DESCRIPTION_BYTES, VOCAB_BYTES, VOCAB_ENTRIES = 4 * 2**20, 8 * 2**20, 2**19
_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


class TensorHeader(NamedTuple):
    """One stored tensor as its safetensors header describes it: its file, dtype and shape."""

    path: Path
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class FolderRead:
    """What a family reader returns for a folder.

    Attributes:
        model: the network on the model contract (:mod:`core.model.contract`), in ``eval()`` mode.
        tokenizer: the input (source) tokenizer.
        family: the family's short name (``bert``, ``gpt2``, …).
        head: what the model's logits are: ``hidden`` (states pooled into a sentence embedding),
            ``masked_lm``, ``classes`` (one label per text), ``token_classes``, ``next_token``
            (a decoder), ``text`` (an encoder-decoder) or ``speech`` (Whisper: audio in, text out).
        labels: class names of a classification head, in id order.
        pooling: how ``hidden`` becomes a sentence vector (``mode``, ``normalize``).
        target_tokenizer: an encoder-decoder's output tokenizer when it differs from ``tokenizer``.
        decoder_start_id: the id an encoder-decoder's decoder starts from.
    """

    model: nn.Module
    tokenizer: PretrainedTokenizer
    family: str
    head: str
    labels: tuple[str, ...] = ()
    pooling: dict[str, Any] = field(default_factory=dict)
    target_tokenizer: PretrainedTokenizer | None = None
    decoder_start_id: int | None = None


def read_capped_file(path: Path, folder: Path, cap: int = DESCRIPTION_BYTES) -> bytes:
    """The bytes of ``path`` (resolved inside ``folder``), read no further than ``cap``; every fault one
    :class:`CheckpointError` naming the folder."""
    path = model_file(path, folder)
    try:
        return read_capped(path, cap)
    except ValueError as error:  # over the cap: the message names the file
        raise CheckpointError(f"{folder.name}/{error}") from None
    except OSError as error:
        raise CheckpointError(f"{folder.name}: cannot read {path.name} ({error})") from None


def read_json(path: Path, folder: Path, cap: int = DESCRIPTION_BYTES) -> dict[str, Any]:
    """A JSON object from ``path`` of at most ``cap`` bytes; every fault one :class:`CheckpointError` naming
    the folder."""
    try:
        data = json.loads(read_capped_file(path, folder, cap).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise CheckpointError(f"{folder.name}: cannot read {path.name} ({error})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{folder.name}: {path.name} is not a JSON object")
    return data


def folder_config(folder: Path) -> dict[str, Any]:
    """``folder/config.json`` as a dict (its ``model_type`` tells the family)."""
    return read_json(folder / "config.json", folder)


def inside(folder: Path, relative: str) -> Path:
    """``folder / relative`` resolved, refused when it names or links to a place outside the folder (a hostile
    index or module path; a hub cache snapshot's links into its ``blobs/`` are followed)."""
    try:
        return resolve_inside(folder / relative, model_roots(folder))
    except CheckpointError:
        raise CheckpointError(f"{folder.name}: {relative[:200]!r} points outside the folder") from None


def weight_files(folder: Path) -> list[Path]:
    """The safetensors files holding the weights, in a fixed order.

    Raises:
        CheckpointError: none (with the conversion hint for a pickle-only folder), or a bad index.
    """
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.exists() or single.is_symlink():  # a link or a FIFO is refused by name, not taken for absent
        return [model_file(single, folder)]
    if index.is_file():
        mapping = read_json(index, folder).get("weight_map")
        if not isinstance(mapping, dict) or not mapping or not all(isinstance(v, str) for v in mapping.values()):
            raise CheckpointError(f"{folder.name}: {index.name} has no valid weight_map")
        shards = [model_file(inside(folder, name), folder) for name in sorted(set(mapping.values()))]
        missing = [p.name for p in shards if not p.is_file()]
        if missing:
            raise CheckpointError(f"{folder.name}: shard(s) {', '.join(missing[:3])} named by {index.name} are missing")
        return shards
    if any(folder.glob("pytorch_model*.bin")):
        raise CheckpointError(f"{folder.name} has no safetensors weights: {convert_hint(folder)}")
    raise CheckpointError(f"{folder.name} has no model.safetensors (nor a sharded model.safetensors.index.json)")


def convert_command(folder: Path) -> str:
    """The one command that turns ``folder``'s pickle weights into safetensors, keeping its task head.

    The class is ``config.json``'s ``architectures`` when that names exactly one Python identifier
    (``BertForSequenceClassification``: ``AutoModel`` would drop the classifier), else ``AutoModel``.
    The folder's path is quoted for Python (a JSON string) and the code for the shell (``shlex``).
    """
    name = _architecture(folder) or "AutoModel"
    where = json.dumps(str(Path(folder).absolute()))
    code = (f"from transformers import {name}; {name}.from_pretrained({where})"
            f".save_pretrained({where}, safe_serialization=True)")
    return f"`python -c {shlex.quote(code)}`"


def convert_hint(folder: Path) -> str:
    """Why ``folder``'s ``pytorch_model.bin`` is not loaded, and :func:`convert_command`."""
    return f"pytorch_model.bin is a pickle and is never loaded; convert it once with {convert_command(folder)}"


def _architecture(folder: Path) -> str | None:
    """``config.json``'s one ``architectures`` entry when it is a plain identifier (it is shown to the user)."""
    if not (Path(folder) / "config.json").is_file():
        return None
    try:
        entries = read_json(Path(folder) / "config.json", Path(folder)).get("architectures")
    except CheckpointError:
        return None
    if not (isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], str)):
        return None
    name = entries[0]
    plain = name.isascii() and name.isidentifier() and not keyword.iskeyword(name) and len(name) <= 100
    return name if plain else None


def read_headers(folder: Path) -> dict[str, TensorHeader]:
    """Every stored tensor's header, stored name → :class:`TensorHeader` (no tensor data is read).

    Raises:
        CheckpointError: no weights (see :func:`weight_files`) or a file that is not safetensors.
    """
    found: dict[str, TensorHeader] = {}
    for path in weight_files(folder):
        try:
            check_header_size(path)  # a header's JSON is parsed only within its bound
        except CheckpointError as error:
            raise CheckpointError(f"{folder.name}/{error}") from None
        except OSError as error:
            raise CheckpointError(f"{folder.name}/{path.name} cannot be read ({error.strerror})") from None
        try:
            with safe_open(str(path), framework="pt") as handle:
                for name in handle.keys():
                    meta = handle.get_slice(name)
                    found[name] = TensorHeader(path, meta.get_dtype(), tuple(meta.get_shape()))
        except (SafetensorError, OSError, ValueError, RuntimeError) as error:
            raise CheckpointError(f"{folder.name}/{path.name} is not readable safetensors ({error})") from None
    return found


def tensor_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Every stored tensor's shape, from the headers only (for checking a config before building)."""
    return {name: header.shape for name, header in read_headers(folder).items()}


def renamed(folder: Path, names: Iterable[str], rename: Callable[[str], str | None]) -> dict[str, str]:
    """Stored name → our parameter name for every stored tensor the model uses (``rename`` gives None for
    the rest).

    Raises:
        CheckpointError: a tensor the family does not know, named with the folder.
    """
    try:
        return {name: ours for name in names if (ours := rename(name)) is not None}
    except CheckpointError as error:  # the family's renamer knows the tensor, not the folder
        raise CheckpointError(f"{folder.name}: {error}") from None


def read_weights(folder: Path, rename: Callable[[str], str | None],
                 budget_bytes: int | None = None, *, keep_dtype: bool = False) -> dict[str, Tensor]:
    """The weights under our names: float32, or with ``keep_dtype`` in the one half precision (bf16 or fp16)
    every kept tensor is stored in (a folder of mixed precisions is read as float32).

    Args:
        rename: a stored name → our parameter name, or None to skip a tensor the model does not use
            (it raises :class:`CheckpointError` for a name it does not know).
        budget_bytes: the most bytes the kept tensors may take (default: the machine's budget,
            :func:`~core.io.pretrained.memory.budget_bytes`).

    Raises:
        CheckpointError: unreadable files, a non-float dtype, or weights over the budget (both figures named).
    """
    headers = read_headers(folder)
    kept = renamed(folder, headers, rename)
    for name in kept:
        if headers[name].dtype not in FLOAT_DTYPES:
            raise CheckpointError(f"{folder.name}: tensor {name!r} is {headers[name].dtype}; weights must be one of "
                                  f"{', '.join(FLOAT_DTYPES)}")
    stored = {headers[name].dtype for name in kept}
    target = TORCH_DTYPES[stored.pop()] if keep_dtype and len(stored) == 1 else torch.float32
    size = target.itemsize
    total = sum(size * math.prod(headers[name].shape) for name in kept)
    what = "as float32" if target == torch.float32 else f"in their stored {str(target).removeprefix('torch.')}"
    check_fits(folder.name, total, what, budget_bytes)
    weights: dict[str, Tensor] = {}
    done = 0
    for path in dict.fromkeys(headers[name].path for name in kept):  # each file opened once, in order
        with safe_open(str(path), framework="pt") as handle:
            for name in (n for n in kept if headers[n].path == path):
                tensor = handle.get_tensor(name)  # a view of the file's memory map: nothing copied yet
                weights[kept[name]] = tensor if tensor.dtype == target else tensor.to(target)
                done += size * tensor.numel()
                progress.report(done, total)
    return weights


def read_tokenizer(folder: Path, max_len: int, kind: str = "wordpiece") -> PretrainedTokenizer:
    """The folder's tokenizer truncating at ``max_len``: ``tokenizer.json``, else a WordPiece ``vocab.txt``
    with ``tokenizer_config.json``'s settings (as BERT's original tokenizer reads them)."""
    path = model_file(folder / "tokenizer.json", folder)
    if not path.is_file():
        if (folder / "vocab.txt").is_file():
            return PretrainedTokenizer(_wordpiece_from_vocab(folder), kind="wordpiece", max_len=max_len)
        raise CheckpointError(f"{folder.name} has no tokenizer.json (nor a WordPiece vocab.txt)")
    try:
        return PretrainedTokenizer.from_file(path, max_len, kind=kind)
    except Exception as error:  # HF raises a bare Exception for a malformed file
        raise CheckpointError(f"{folder.name}/tokenizer.json is not a valid tokenizer ({error})") from None


def _wordpiece_from_vocab(folder: Path) -> Tokenizer:
    """BERT's tokenizer from ``vocab.txt`` (one token a line, the id its line number): the BERT
    normaliser (lower-casing and accent stripping as ``tokenizer_config.json`` says), BERT's
    pre-tokenizer and the ``[CLS] $A [SEP]`` template."""
    config = folder / "tokenizer_config.json"
    settings = read_json(config, folder) if config.is_file() else {}
    try:
        text = read_capped_file(folder / "vocab.txt", folder, VOCAB_BYTES).decode("utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointError(f"{folder.name}: cannot read vocab.txt ({error})") from None
    if text.count("\n") + text.count("\r") > VOCAB_ENTRIES:
        raise CheckpointError(f"{folder.name}: vocab.txt has more than {VOCAB_ENTRIES:,} lines")
    lines = io.StringIO(text, newline=None)  # universal newlines, as BERT's reader
    vocab = {line.rstrip("\n"): i for i, line in enumerate(lines)}
    special = {role: str(settings.get(f"{role}_token") or default) for role, default in
               (("unk", "[UNK]"), ("cls", "[CLS]"), ("sep", "[SEP]"), ("pad", "[PAD]"), ("mask", "[MASK]"))}
    missing = [token for token in (special["unk"], special["cls"], special["sep"]) if token not in vocab]
    if missing:
        raise CheckpointError(f"{folder.name}: vocab.txt lacks the special token(s) {', '.join(missing)}")
    lowercase = bool(settings.get("do_lower_case", True))
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=special["unk"]))
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=bool(settings.get("tokenize_chinese_chars", True)),
        strip_accents=settings.get("strip_accents"), lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = special["cls"], special["sep"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    tokenizer.add_special_tokens([t for t in special.values() if t in vocab])
    return tokenizer
