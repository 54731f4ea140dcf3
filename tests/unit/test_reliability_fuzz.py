"""Hypothesis mutates checkpoint bytes and header JSON: only CheckpointError may escape, and no
model over the load budget is ever built (issue 15). A bounded, derandomized run in CI; thousands
of examples with ``pytest -m slow tests/unit/test_reliability_fuzz.py``."""

from __future__ import annotations

import itertools
import json
import resource
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.io.checkpoint as checkpoint_module
from core.budget import LOAD_BUDGET, activation_bytes, parameter_count
from core.io.checkpoint import CheckpointError, load, read_info
from core.io.verify import digest
from tests.helpers.tiny import build_checkpoint
from tests.helpers.checkpoint_files import read_raw

CI = settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(CI, max_examples=2500)
FIELDS = ["d_model", "n_heads", "d_ff", "max_len", "src_vocab_size", "tgt_vocab_size", "n_encoder_layers",
          "n_decoder_layers", "n_classes", "pad_id", "dropout", "pe_base", "positional", "score", "norm",
          "architecture", "tie_embeddings"]
ENTRIES = ["config", "tokenizers", "task", "metrics", "extra", "probe", "format_version", "sha256"]
DTYPES = ["F32", "F16", "BF16", "F64", "I64", "I32", "U8", "BOOL", "F8_E4M3", "XX"]


class Sandbox:
    """The valid tiny checkpoint everything starts from, fresh file names, and the builds seen."""

    def __init__(self, folder: Path, original: Path) -> None:
        self.folder, self.original = folder, original.read_bytes()
        size = int.from_bytes(self.original[:8], "little")
        self.header = json.loads(self.original[8:8 + size])
        self.data = self.original[8 + size:]
        self.metadata, self.tensors = read_raw(original)
        self.names = itertools.count()
        self.built: list[int] = []

    def write(self, data: bytes) -> Path:
        path = self.folder / f"case-{next(self.names)}.safetensors"  # new name: never a cached version
        path.write_bytes(data)
        return path

    def with_header(self, header: dict) -> bytes:
        text = json.dumps(header, allow_nan=True).encode()
        return len(text).to_bytes(8, "little") + text + self.data


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, char_tokenizer) -> Sandbox:
    folder = tmp_path_factory.mktemp("fuzz")
    box = Sandbox(folder, build_checkpoint(folder / "valid.safetensors", "encoder-decoder", char_tokenizer,
                                           positional="learned"))
    original = checkpoint_module.Transformer
    with pytest.MonkeyPatch.context() as patch:  # every real build is recorded with its size
        patch.setattr(checkpoint_module, "Transformer",
                      lambda config: box.built.append(parameter_count(config)) or original(config))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        yield box
        grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
    assert grown_mib < 400, f"the fuzzed loads raised peak memory by {grown_mib:.0f} MiB"


def only_checkpoint_errors(box: Sandbox, data: bytes) -> None:
    path = box.write(data)
    for reader in (read_info, load):
        try:
            result = reader(path)
        except CheckpointError as error:
            assert path.name in str(error) or "not found" in str(error)
            continue
        config = result.config
        assert config.max_len <= LOAD_BUDGET.max_len
        assert parameter_count(config) <= LOAD_BUDGET.max_parameters
        assert activation_bytes(config) <= LOAD_BUDGET.max_activation_bytes
    assert all(size <= LOAD_BUDGET.max_parameters for size in box.built)
    path.unlink()


# ---------------------------------------------------------------- strategies
def byte_mutations(size: int) -> st.SearchStrategy:
    position = st.integers(0, size - 1)
    return st.one_of(
        st.tuples(st.just("truncate"), position),
        st.tuples(st.just("flip"), st.lists(st.tuples(position, st.integers(1, 255)), min_size=1, max_size=8)),
        st.tuples(st.just("insert"), position, st.binary(min_size=1, max_size=64)),
        st.tuples(st.just("length"), st.integers(0, 2**64 - 1)),
    )


def apply_bytes(original: bytes, mutation: tuple) -> bytes:
    kind, data = mutation[0], bytearray(original)
    if kind == "truncate":
        return bytes(data[:mutation[1]])
    if kind == "flip":
        for position, mask in mutation[1]:
            data[position] ^= mask
        return bytes(data)
    if kind == "insert":
        return bytes(data[:mutation[1]] + mutation[2] + data[mutation[1]:])
    return mutation[1].to_bytes(8, "little") + bytes(data[8:])


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


WILD = st.one_of(st.integers(-2**80, 2**80), st.sampled_from([2**22, 10**6, 4 * 10**7, 2**31, 2**63, -1, 0]),
                 st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([4e7, 1e308, float("inf")]),
                 st.booleans(), st.none(), st.text(max_size=20), st.lists(st.integers(), max_size=3))
ENTRY_TEXT = st.one_of(st.integers(1, 100_000).map(nested), st.text(max_size=40),
                       st.sampled_from(["9" * 5000, "1e999", "NaN", "{}", "[]", "null", '"x"']))


@st.composite
def header_mutations(draw) -> tuple[str, object]:
    kind = draw(st.sampled_from(["config", "entry", "shape", "dtype", "offsets", "drop", "add"]))
    if kind == "config":
        return kind, draw(st.dictionaries(st.sampled_from(FIELDS), WILD, min_size=1, max_size=3))
    if kind == "entry":
        return kind, (draw(st.sampled_from(ENTRIES)), draw(ENTRY_TEXT))
    if kind == "shape":
        return kind, draw(st.lists(st.integers(0, 2**40), max_size=4))
    if kind == "dtype":
        return kind, draw(st.sampled_from(DTYPES))
    if kind == "offsets":
        return kind, draw(st.lists(st.integers(-5, 2**40), min_size=0, max_size=3))
    return kind, draw(st.integers(0, 10**6))


def apply_header(box: Sandbox, mutation: tuple, tensor_index: int, resign: bool) -> bytes:
    kind, value = mutation
    header = json.loads(json.dumps(box.header))
    metadata = header["__metadata__"]
    name = sorted(k for k in header if k != "__metadata__")[tensor_index % (len(header) - 1)]
    if kind == "config":
        config = {**json.loads(metadata["config"]), **value}
        metadata["config"] = json.dumps(config, allow_nan=True)
    elif kind == "entry":
        metadata[value[0]] = value[1]
    elif kind in ("shape", "dtype", "offsets"):
        header[name][{"shape": "shape", "dtype": "dtype", "offsets": "data_offsets"}[kind]] = value
    elif kind == "drop":
        del header[name]
    else:
        header[f"extra/added{value}"] = {"dtype": "F32", "shape": [value], "data_offsets": [0, 4 * value]}
    if resign and kind in ("config", "entry"):  # data unchanged: a checksum that matches the new header
        metadata["sha256"] = digest(sorted(box.tensors.items()), metadata)
    return box.with_header(header)


# ---------------------------------------------------------------- the targets
@CI
@given(mutation=st.data())
def test_mutated_bytes_only_raise_checkpoint_errors(sandbox: Sandbox, mutation) -> None:
    change = mutation.draw(byte_mutations(len(sandbox.original)))
    only_checkpoint_errors(sandbox, apply_bytes(sandbox.original, change))


@CI
@given(mutation=header_mutations(), tensor_index=st.integers(0, 1000), resign=st.booleans())
def test_mutated_headers_only_raise_checkpoint_errors(sandbox: Sandbox, mutation, tensor_index, resign) -> None:
    only_checkpoint_errors(sandbox, apply_header(sandbox, mutation, tensor_index, resign))


@pytest.mark.slow
@SLOW
@given(mutation=st.data())
def test_thousands_of_mutated_bytes(sandbox: Sandbox, mutation) -> None:
    change = mutation.draw(byte_mutations(len(sandbox.original)))
    only_checkpoint_errors(sandbox, apply_bytes(sandbox.original, change))


@pytest.mark.slow
@SLOW
@given(mutation=header_mutations(), tensor_index=st.integers(0, 1000), resign=st.booleans())
def test_thousands_of_mutated_headers(sandbox: Sandbox, mutation, tensor_index, resign) -> None:
    only_checkpoint_errors(sandbox, apply_header(sandbox, mutation, tensor_index, resign))


def test_the_unmutated_sandbox_file_loads(sandbox: Sandbox) -> None:
    path = sandbox.write(sandbox.with_header(sandbox.header))
    assert load(path).config.positional == "learned"
