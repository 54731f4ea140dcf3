"""The pretrained-model loaders and models on tiny random files (no optional packages needed):
GGUF Q/K un-permutation, the weight cache, refusals, tokenizers, controls and the head finder."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core import analysis, CheckpointError, explain, load_pretrained, rotary_relative_scores
from core.io.pretrained import gguf_llama, weight_cache
from core.model.rotary import unpermute_gguf_rows
from core.model.contract import AttentionControls
from tests.helpers.pretrained_files import llama_cpp_permute, write_tiny_bert, write_tiny_gguf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def tiny_gguf(tmp_path):
    path = tmp_path / "tiny.gguf"
    return path, write_tiny_gguf(path)


@pytest.fixture
def tiny_bert(tmp_path):
    folder = tmp_path / "tiny-bert"
    return folder, write_tiny_bert(folder)


def test_unpermute_undoes_llama_cpp_permutation():
    weight = torch.randn(24, 5)
    for heads in (1, 3, 6):
        permuted = torch.from_numpy(llama_cpp_permute(weight.numpy(), heads))
        assert not torch.equal(permuted, weight)
        assert torch.equal(unpermute_gguf_rows(permuted, heads), weight)


def test_gguf_loads_the_model_it_holds(tiny_gguf, cache):
    path, reference = tiny_gguf
    loaded = load_pretrained(path)
    assert loaded.family == "llama" and loaded.architecture == "decoder"
    ids = torch.tensor([[5, 70, 80, 90, 100, 7]])
    with torch.inference_mode():
        expected = reference(tgt=ids).logits
        assert torch.allclose(loaded.model(tgt=ids).logits, expected, atol=1e-5)


def test_gguf_without_unpermuting_would_differ(tiny_gguf, cache, monkeypatch):
    """The fidelity check has teeth: skipping the Q/K un-permutation changes the logits."""
    path, reference = tiny_gguf
    monkeypatch.setattr(gguf_llama, "unpermute_gguf_rows", lambda weight, heads: weight)
    wrong = gguf_llama.load_gguf(path, use_cache=False)[0]
    ids = torch.tensor([[5, 70, 80, 90, 100, 7]])
    with torch.inference_mode():
        assert not torch.allclose(wrong(tgt=ids).logits, reference(tgt=ids).logits, atol=1e-3)


def test_gguf_weight_cache_is_written_then_used(tiny_gguf, cache, monkeypatch):
    path, reference = tiny_gguf
    first = load_pretrained(path)
    weight_cache.flush()  # written in the background
    entry = weight_cache.entry_path(first.fingerprint, "gguf")
    assert entry.is_file() and entry.parent.parent == cache

    def no_parse(_path):
        raise AssertionError("the GGUF was parsed again although the cache holds it")

    monkeypatch.setattr(gguf_llama, "read_gguf", no_parse)
    second = load_pretrained(path)
    assert second.model.lm_head.weight is second.model.embed.weight  # tied again after assignment
    ids = torch.tensor([[5, 70, 80]])
    with torch.inference_mode():
        assert torch.allclose(second.model(tgt=ids).logits, reference(tgt=ids).logits, atol=1e-5)
    assert second.tokenizer.encode("hello the").ids == first.tokenizer.encode("hello the").ids


def test_a_damaged_cache_entry_is_ignored(tiny_gguf, cache):
    path, reference = tiny_gguf
    sha = load_pretrained(path).fingerprint
    weight_cache.flush()
    weight_cache.entry_path(sha, "gguf").write_bytes(b"not a safetensors file")
    again = load_pretrained(path)
    ids = torch.tensor([[5, 70, 80]])
    with torch.inference_mode():
        assert torch.allclose(again.model(tgt=ids).logits, reference(tgt=ids).logits, atol=1e-5)


def test_other_gguf_architectures_are_refused(tmp_path, cache):
    path = tmp_path / "phi.gguf"
    write_tiny_gguf(path, architecture="phi3")
    with pytest.raises(CheckpointError, match=r"'phi3' is not supported; supported: llama, qwen2"):
        load_pretrained(path)
    with pytest.raises(CheckpointError, match="not supported"):
        explain(str(path), "hello")


def test_unknown_gguf_pre_tokenizer_is_refused(tmp_path, cache):
    path = tmp_path / "odd.gguf"
    write_tiny_gguf(path, pre="something-new")
    with pytest.raises(CheckpointError, match="pre-tokenizer 'something-new' is not supported"):
        load_pretrained(path)


def test_not_a_gguf_file(tmp_path):
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF but not really")
    with pytest.raises(CheckpointError, match="fake.gguf"):
        load_pretrained(path)


def test_other_model_types_are_refused(tmp_path):
    folder = tmp_path / "mamba"
    write_tiny_bert(folder, model_type="mamba")
    with pytest.raises(CheckpointError, match=r"model_type 'mamba' is not supported as a folder; supported: .*bert.*gguf"):
        load_pretrained(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match="supported: a Hugging Face model folder .* of model_type .*bert"):
        explain(str(empty), "hello")


def test_a_pickle_is_never_loaded(tiny_bert, marker_payload):
    folder, _ = tiny_bert
    (folder / "model.safetensors").unlink()
    payload, marker = marker_payload
    (folder / "pytorch_model.bin").write_bytes(payload)
    with pytest.raises(CheckpointError, match="pickle"):
        load_pretrained(folder)
    assert not marker.exists()


def test_bert_folder_explained(tiny_bert):
    folder, reference = tiny_bert
    result = explain(str(folder), "The animal didn't cross the street quickly")
    assert result.source_tokens == ("[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "[UNK]",
                                    "[SEP]")
    assert result.source_offsets[1] == (0, 3) and result.source_offsets[0] == (0, 0)
    assert result.architecture == "encoder" and any("[UNK]" in note for note in result.notes)
    maps = result.attention["encoder"]
    assert maps.shape == (2, 4, len(result.source_tokens), len(result.source_tokens))
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    vector = result.prediction.vector
    assert result.prediction.kind == "embedding" and vector.shape == (32,)
    assert abs(np.linalg.norm(vector) - 1) < 1e-5


def test_fused_and_explicit_paths_agree(tiny_gguf, tiny_bert, cache):
    llama = load_pretrained(tiny_gguf[0]).model
    bert = load_pretrained(tiny_bert[0]).model
    ids = torch.tensor([[5, 70, 80, 90, 100, 7]])
    with torch.inference_mode():
        for controls in (AttentionControls(), AttentionControls(causal=False, temperature=0.5)):
            fused = llama(tgt=ids, controls=controls)
            explicit = llama(tgt=ids, controls=controls, return_attention=True)
            assert fused.attention is None
            assert torch.allclose(fused.logits, explicit.logits, atol=1e-5)
        src = torch.tensor([[2, 5, 6, 7, 3, 0, 0]])
        assert torch.allclose(bert(src).logits, bert(src, return_attention=True).logits, atol=1e-5)


def test_llama_controls(tiny_gguf, cache):
    model = load_pretrained(tiny_gguf[0]).model
    ids = torch.tensor([[5, 70, 80, 90, 100, 7]])
    with torch.inference_mode():
        base = model(tgt=ids, return_attention=True, return_scores=True)
        maps = base.attention["decoder"]  # (L, B, H, T, T)
        assert maps.shape == (2, 1, 4, 6, 6)
        assert torch.equal(maps.triu(1), torch.zeros_like(maps))  # masked cells exactly 0
        assert torch.allclose(base.scores["decoder"].masked_fill(~torch.ones(6, 6).tril().bool(), -1e30)
                              .softmax(-1), maps, atol=1e-6)
        open_ = model(tgt=ids, controls=AttentionControls(causal=False), return_attention=True).attention["decoder"]
        assert open_.triu(1).sum() > 0
        hard = model(tgt=ids, controls=AttentionControls(hard=True), return_attention=True).attention["decoder"]
        assert set(hard.unique().tolist()) == {0.0, 1.0} and torch.equal(hard.sum(-1), torch.ones(2, 1, 4, 6))
        flat = model(tgt=ids, controls=AttentionControls(temperature=0.0), return_attention=True).attention["decoder"]
        assert torch.allclose(flat[0, 0, 0, -1], torch.full((6,), 1 / 6))  # β = 0: uniform over the visible keys
        knocked = torch.ones(2, 4)
        knocked[1, 2] = 0
        out = model(tgt=ids, controls=AttentionControls(head_mask={"decoder": knocked})).logits
        assert not torch.allclose(out, base.logits)
        with pytest.raises(ValueError, match="head_mask"):
            model(tgt=ids, controls=AttentionControls(head_mask={"encoder": knocked}))


def test_gguf_tokenizer_matches_whole_control_tokens(tiny_gguf, cache):
    tokenizer = load_pretrained(tiny_gguf[0]).tokenizer
    encoding = tokenizer.encode("<|im_start|>hello the 42<|im_end|>")
    assert encoding.tokens[0] == "<|im_start|>" and encoding.tokens[-1] == "<|im_end|>"
    assert encoding.ids[0] == 1 and encoding.ids[-1] == 2
    # BPE merges by rank ("h e" before "e ll"); llama.cpp's "smollm" splitting puts every digit alone,
    # so the vocabulary's "42" never forms.
    assert encoding.tokens == ["<|im_start|>", "he", "ll", "o", " the", " ", "4", "2", "<|im_end|>"]
    assert tokenizer.decode(encoding.ids) == "hello the 42"
    emoji = tokenizer.encode("hi 🤗")  # a character split across byte tokens shows its bytes
    assert emoji.tokens == ["h", "i", " ", "<0xF0>", "<0x9F>", "<0xA4>", "<0x97>"]


def test_rotary_scores_depend_only_on_the_offset():
    scores = rotary_relative_scores(head_dim=16, base=10000.0, length=12)
    for offset in range(-11, 12):
        diagonal = torch.diagonal(scores, offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-4)


def test_head_finder_ranks_heads():
    maps = np.zeros((2, 2, 4, 4), np.float32)
    maps[..., :, 0] = 1.0  # every head parks everything on token 0 …
    maps[1, 0, 2] = [0.1, 0.8, 0.05, 0.05]  # … but layer 1 head 0 sends token 2 to token 1
    maps[0, 1, 2] = [0.5, 0.0, 0.2, 0.3]
    ranked = analysis.head_finder(maps, 2, ignore=[0])
    assert (ranked[0]["layer"], ranked[0]["head"], ranked[0]["key"]) == (1, 0, 1)
    assert ranked[0]["weight"] == pytest.approx(0.8) and ranked[0]["share"] == pytest.approx(0.8 / 0.85)
    assert (ranked[1]["layer"], ranked[1]["head"], ranked[1]["key"]) == (0, 1, 3)
    assert [r["weight"] for r in ranked[2:]] == [0.0, 0.0]
    with pytest.raises(ValueError, match="outside"):
        analysis.head_finder(maps, 4)
    json.dumps(ranked)  # plain data


@pytest.mark.parametrize("decoding", ["greedy", "sample", "beam"])
def test_gguf_continuation_through_core_decode(tiny_gguf, cache, decoding):
    model = load_pretrained(tiny_gguf[0])
    first = explain(model, "hello the", continuation=4, decoding=decoding, seed=3)
    again = explain(model, "hello the", continuation=4, decoding=decoding, seed=3)
    assert first.prediction.text == again.prediction.text  # seeded
    prompt = len(model.tokenizer.encode("hello the").ids)
    rows = len(first.target_tokens)
    assert prompt <= rows <= prompt + 3 and first.attention["decoder"].shape[2:] == (rows, rows)
    assert len(first.generated_tokens) == rows and first.target_tokens[:prompt] == ("he", "ll", "o", " the")


@pytest.mark.parametrize("head_dim, factor, low, high", [(128, 8.0, 1.0, 4.0), (64, 32.0, 1.0, 4.0),
                                                         (128, 8.0, 2.0, 6.0)])
def test_llama31_scaling_is_recovered_from_real_sized_rope_freqs(head_dim, factor, low, high):
    """Llama 3.1 8B (dk 128), Llama 3.2 1B (dk 64, factor 32) and an unusual band: the factors llama.cpp's
    converter writes (θ base 500,000, original context 8,192) give back the scaling that made them."""
    import math

    import numpy as np

    from core.io.pretrained.gguf_rope import llama3_fields

    theta = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    factors = []
    for freq in theta.tolist():  # convert_hf_to_gguf.py's loop
        wavelength = 2 * math.pi / freq
        smooth = (8192 / wavelength - low) / (high - low)
        factors.append(1.0 if wavelength < 8192 / high else factor if wavelength > 8192 / low
                       else 1 / ((1 - smooth) / factor + smooth))
    fields = llama3_fields(np.array(factors, np.float32).astype(np.float64), head_dim, 500000.0, 8192, "x")
    assert fields["rope_type"] == "llama3" and fields["rope_factor"] == factor
    assert fields["rope_low_freq_factor"] == pytest.approx(low, rel=1e-6)
    assert fields["rope_high_freq_factor"] == pytest.approx(high, rel=1e-6)
