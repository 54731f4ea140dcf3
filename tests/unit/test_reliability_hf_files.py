"""Issue 28, Hugging Face folders' small files: every description and tokenizer file is read under a byte cap
and its entries counted before any table is built, so a crafted file (a 200 MB ``config.json`` took 45 s and
1 GB; a 55 MB ``tokenizer.json`` of 3 M entries 23 s and 840 MB) is refused in one line naming the folder and
the file, in well under 10 s and 1 GB; honest files just under the caps still open. Weights stored as integers,
booleans or F64 are refused naming the tensor, never cast."""

from __future__ import annotations

import json
import time
import tracemalloc
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from core import CheckpointError, load_pretrained
from core.io.pretrained.hf_files import DESCRIPTION_BYTES, VOCAB_BYTES, VOCAB_ENTRIES
from core.io.pretrained.hf_marian import SPM_PIECES, read_spm
from core.text.pretrained_tokenizer import TOKENIZER_FILE_BYTES
from core.text.tokenizer_check import MAX_ENTRIES
from tests.helpers.pretrained_files import write_tiny_bert

MAX_SECONDS, MAX_BYTES = 10.0, 256 * 2**20  # as the GGUF cases: far under the 10 s and 1 GB


def refused(read, match: str, *names: str) -> str:
    """``read()`` raises one CheckpointError line matching ``match`` and naming ``names``, within the caps."""
    tracemalloc.start()
    began = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=match) as caught:
            read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - began < MAX_SECONDS and peak < MAX_BYTES, peak
    message = str(caught.value)
    assert "\n" not in message and all(name in message for name in names), message
    return message


@pytest.fixture
def bert(tmp_path: Path) -> Path:
    write_tiny_bert(tmp_path / "bert")
    return tmp_path / "bert"


def padded(path: Path, size: int) -> None:
    """Pad the JSON object at ``path`` with spaces (valid JSON whitespace) to ``size`` bytes."""
    text = path.read_text()
    path.write_text(text + " " * (size - len(text.encode())))


@pytest.mark.parametrize("name, cap", [("config.json", DESCRIPTION_BYTES), ("tokenizer.json", TOKENIZER_FILE_BYTES)])
def test_a_file_over_its_cap_is_refused_from_its_size(bert: Path, name: str, cap: int) -> None:
    padded(bert / name, cap + 1)
    refused(lambda: load_pretrained(bert), f"larger than {cap / 2**20:g} MiB", "bert", name)


def test_files_just_under_the_caps_open(bert: Path) -> None:
    padded(bert / "config.json", DESCRIPTION_BYTES - 16)
    padded(bert / "tokenizer.json", 2 * 2**20)
    assert load_pretrained(bert).tokenizer.vocab_size > 0


@pytest.mark.parametrize("key", ["vocab", "merges", "added_tokens"])
def test_a_tokenizer_with_more_entries_than_the_cap_is_refused_before_the_library_builds_it(
        bert: Path, key: str) -> None:
    spec = json.loads((bert / "tokenizer.json").read_text())
    many = MAX_ENTRIES[key] + 1
    if key == "vocab":
        spec["model"]["vocab"] = {f"t{i}": i for i in range(many)}
    elif key == "merges":
        spec["model"] = {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"] * many}
    else:
        spec["added_tokens"] = [{"id": 0, "content": "[PAD]", "special": True}] * many
    (bert / "tokenizer.json").write_text(json.dumps(spec))
    refused(lambda: load_pretrained(bert), f"has {many:,} entries \\(at most", "bert", "tokenizer.json")


def test_a_vocab_txt_with_too_many_lines_is_refused(bert: Path) -> None:
    (bert / "tokenizer.json").unlink()
    (bert / "vocab.txt").write_text("[UNK]\n[CLS]\n[SEP]\n" + "\n".join(f"w{i}" for i in range(VOCAB_ENTRIES)))
    refused(lambda: load_pretrained(bert), f"vocab.txt has more than {VOCAB_ENTRIES:,} lines", "bert")
    (bert / "vocab.txt").write_bytes(b"[UNK]\n" * (VOCAB_BYTES // 6 + 1))
    refused(lambda: load_pretrained(bert), "larger than 8 MiB", "bert", "vocab.txt")


def test_a_modules_json_over_its_cap_is_refused(bert: Path) -> None:
    (bert / "modules.json").write_text("[]" + " " * DESCRIPTION_BYTES)
    refused(lambda: load_pretrained(bert), "larger than 4 MiB", "bert", "modules.json")


def test_a_sentencepiece_model_with_too_many_pieces_is_refused(tmp_path: Path) -> None:
    piece = bytes([0x0a, 3, 0x0a, 1, ord("a")])  # field 1 (a piece) holding field 1 (its text) "a"
    (tmp_path / "source.spm").write_bytes(piece * (VOCAB_BYTES // len(piece)))  # the same piece, over and over
    refused(lambda: read_spm(tmp_path / "source.spm"), f"more than {SPM_PIECES:,} pieces", "source.spm")
    (tmp_path / "source.spm").write_bytes(piece * (VOCAB_BYTES // len(piece) + 1))
    refused(lambda: read_spm(tmp_path / "source.spm"), "larger than 8 MiB", "source.spm")


@pytest.mark.parametrize("dtype, stored", [(torch.int8, "I8"), (torch.bool, "BOOL"), (torch.float64, "F64"),
                                           (torch.int64, "I64")])
def test_integer_boolean_and_f64_weights_are_refused_not_cast(bert: Path, dtype: torch.dtype, stored: str) -> None:
    tensors = load_file(bert / "model.safetensors")
    name = "encoder.layer.0.attention.self.query.weight"
    tensors[name] = tensors[name].to(dtype)
    save_file(tensors, bert / "model.safetensors")
    refused(lambda: load_pretrained(bert), f"tensor '{name}' is {stored}; weights must be one of F32, F16, BF16",
            "bert")
