"""GGUF readers: every size the metadata claims checked against the tensors before any module exists (issue 28),
a Qwen2 GGUF reported as Qwen2 (not Llama), and Mistral-style sliding windows read as Hugging Face's
``MistralForCausalLM`` uses them (issue 21)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from core import CheckpointError, load_pretrained
from core.io.pretrained import gguf_llama, weight_cache
from core.io.pretrained.gguf_llama import load_gguf
from tests.helpers.gguf_craft import UINT32, UINT64, tiny
from tests.helpers.gguf_from_hf import write_gguf
from tests.helpers.hf_decoder_reference import reference_model
from tests.unit.test_gguf_families import SIZES, assert_equal_to_reference, bpe_vocab, compare_gguf
from tests.unit.test_reliability_gguf import refused

transformers = pytest.importorskip("transformers")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("key, value, match", [
    ("llama.embedding_length", (UINT32, 64), r"wrong shapes \[\('token_embd.weight'"),
    ("llama.feed_forward_length", (UINT64, 2**40), r"wrong shapes \[\('blk.0.ffn_gate.weight'"),
    ("llama.attention.head_count", (UINT64, 2**31), "does not split"),
    ("llama.attention.head_count_kv", (UINT32, 3), "does not split"),
    ("llama.block_count", (UINT64, 100_000), "block_count 100,000"),
    ("llama.attention.sliding_window", (UINT32, 0), "sliding_window must be an integer of at least 1, got 0"),
])
def test_a_claimed_size_the_tensors_do_not_have_is_refused_before_any_module(key, value, match, tmp_path,
                                                                             monkeypatch):
    crafted = tiny(tmp_path)
    crafted.fields[key] = (*value, None)
    path = crafted.write(tmp_path / "claims.gguf")

    def no_module(*args, **kwargs):
        raise AssertionError("a module was constructed before the metadata was checked")

    monkeypatch.setattr(torch.nn.Module, "__init__", no_module)
    refused(path, match)  # one line naming the file, within the time and memory caps


def _qwen2_gguf(path: Path, **options) -> tuple[Path, object]:
    reference = reference_model(transformers.Qwen2Config(**SIZES, num_key_value_heads=2))
    return write_gguf(reference, path, bpe_vocab(pre="qwen2", add_bos=False)[0], arch="qwen2", **options), reference


def _not_parsed(_path):
    raise AssertionError("the GGUF was parsed again although the weight cache holds it")


def test_a_qwen2_gguf_is_reported_as_qwen2(tmp_path, cache, monkeypatch):
    llama = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    llama_path = write_gguf(llama, tmp_path / "llama.gguf", bpe_vocab()[0])
    assert load_pretrained(llama_path, use_cache=False).family == "llama"
    path, _ = _qwen2_gguf(tmp_path / "qwen2.gguf")
    first = load_pretrained(path)
    weight_cache.flush()  # the dequantized weights are cached in the background
    monkeypatch.setattr(gguf_llama, "read_gguf", _not_parsed)
    second = load_pretrained(path)  # from the weight cache
    for loaded in (first, second):
        assert (loaded.family, loaded.metadata["architecture"]) == ("qwen2", "qwen2")
        assert loaded.model.config.qkv_bias


def test_a_cache_entry_that_does_not_say_the_architecture_is_rebuilt(tmp_path, cache, monkeypatch):
    """Entries written before the architecture was kept would otherwise report every GGUF as Llama."""
    path, _ = _qwen2_gguf(tmp_path / "qwen2.gguf")
    real_read, real_parse = weight_cache.read, gguf_llama.read_gguf

    def old_entry(sha, kind):
        found = real_read(sha, kind)
        if found is not None:
            tensors, meta = found
            meta = dict(meta, general=meta["general"].replace('"architecture": "qwen2", ', ""))
            found = tensors, meta
        return found

    load_pretrained(path)
    weight_cache.flush()
    monkeypatch.setattr(weight_cache, "read", old_entry)
    parsed = []
    monkeypatch.setattr(gguf_llama, "read_gguf", lambda p, *scanned: parsed.append(p) or real_parse(p, *scanned))
    assert load_pretrained(path).family == "qwen2" and parsed == [path]


def test_a_mistral_sliding_window_gguf_matches_transformers(tmp_path):
    reference = reference_model(transformers.MistralConfig(**SIZES, num_key_value_heads=2, sliding_window=4))
    vocab, tokenizer = bpe_vocab()
    path = write_gguf(reference, tmp_path / "mistral.gguf", vocab)
    result = compare_gguf(path, reference, tokenizer)
    assert_equal_to_reference(result)
    assert result["model"].config.sliding_window == 4
    unwindowed = copy.deepcopy(reference)
    unwindowed.config.sliding_window = None  # the test has teeth: a window ignored would change the maps
    ids = torch.tensor([tokenizer.encode("the animal didn't cross the street because it was tired").ids])
    with torch.no_grad():
        ours = result["model"](None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T)
        full = unwindowed(ids, output_attentions=True).attentions
    assert ids.shape[1] > 4 and max(float((ours[i] - a).abs().max()) for i, a in enumerate(full)) > 1e-2


def test_a_qwen2_window_shorter_than_its_context_is_refused_in_one_line(tmp_path):
    path, _ = _qwen2_gguf(tmp_path / "qwen2-window.gguf", sliding_window=8)
    with pytest.raises(CheckpointError, match=r"^qwen2-window.gguf: a Qwen2 sliding window \(8 of 64 positions\) "
                                              r"is not supported; supported: Mistral-style windows in llama GGUFs$"):
        load_gguf(path, use_cache=False)
