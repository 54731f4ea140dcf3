"""A GGUF metadata key or tensor type the reader does not understand is refused by name, never left out:
an unknown rotary key, an expert count, a split file's part, an end token after every text, an i-quant or an
unknown type. The harmless keys real files carry (``general.*``, ``quantize.imatrix.*``, chat templates,
token ids the explainer never inserts, ``vocab_size``, ``key_length``, a zero expert count) still open."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from core import load_pretrained
from tests.helpers.gguf_craft import FLOAT32, taken_apart
from tests.helpers.gguf_from_hf import write_gguf
from tests.helpers.hf_decoder_reference import reference_model
from tests.unit.test_gguf_families import SIZES, assert_equal_to_reference, bpe_vocab, compare_gguf
from tests.unit.test_reliability_gguf import refused

transformers = pytest.importorskip("transformers")
V = gguf.GGUFValueType
#: Keys llama.cpp's converter and quantizer write into the files people download (Llama 3.2 1B Instruct Q4_K_M).
REAL_KEYS = {
    "general.type": ("model", V.STRING), "general.quantization_version": (2, V.UINT32),
    "general.file_type": (15, V.UINT32), "general.tags": (["facebook", "meta", "llama-3"], V.ARRAY),
    "general.base_model.count": (1, V.UINT32), "general.base_model.0.name": ("Llama 3.2 1B", V.STRING),
    "quantize.imatrix.file": ("imatrix.dat", V.STRING), "quantize.imatrix.chunks_count": (125, V.INT32),
    "tokenizer.chat_template": ("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}", V.STRING),
    "tokenizer.chat_template.tool_use": ("{{ tools }}", V.STRING),
    "tokenizer.ggml.eot_token_id": (2, V.UINT32), "tokenizer.ggml.add_eos_token": (False, V.BOOL),
    "llama.vocab_size": (320, V.UINT32), "llama.attention.key_length": (16, V.UINT32),
    "llama.attention.value_length": (16, V.UINT32), "llama.expert_count": (0, V.UINT32),
    "llama.rope.scaling.finetuned": (True, V.BOOL),
}


def _llama(tmp_path: Path, **options) -> tuple[Path, object, object]:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    vocab, tokenizer = bpe_vocab()
    return write_gguf(reference, tmp_path / "llama.gguf", vocab, **options), reference, tokenizer


def test_the_harmless_keys_of_real_files_open_and_equal_the_reference(tmp_path: Path) -> None:
    path, reference, tokenizer = _llama(tmp_path, extra=REAL_KEYS)
    assert_equal_to_reference(compare_gguf(path, reference, tokenizer))


@pytest.mark.parametrize("key, value", [
    ("llama.rope.scaling.attn_factor", (1.2, V.FLOAT32)),  # YaRN's, in a file the reader would rotate plainly
    ("llama.rope.scaling.yarn_log_multiplier", (0.1, V.FLOAT32)),
    ("llama.attn_logit_softcapping", (50.0, V.FLOAT32)),
    ("llama.expert_count", (8, V.UINT32)),
    ("llama.attention.layer_norm_epsilon", (1e-5, V.FLOAT32)),
    ("mistral.rope.freq_base", (1e6, V.FLOAT32)),  # another architecture's key
])
def test_a_key_the_reader_does_not_understand_is_refused_by_name(key, value, tmp_path: Path) -> None:
    path, _, _ = _llama(tmp_path, extra={key: value})
    message = refused(path, f"GGUF metadata key '{key}' is not understood by the llama reader")
    assert message.startswith("llama.gguf: ")


def test_an_unknown_rotary_key_is_refused_in_a_file_that_opens_without_it(tmp_path: Path) -> None:
    plain, _, _ = _llama(tmp_path)
    assert load_pretrained(plain, use_cache=False).model.config.rope_type == "default"
    crafted = taken_apart(plain)
    crafted.fields["llama.rope.scaling.beta_fast"] = (FLOAT32, 32.0, None)
    refused(crafted.write(tmp_path / "beta.gguf"), "'llama.rope.scaling.beta_fast' is not understood")


@pytest.mark.parametrize("key, value, match", [
    ("split.count", (2, V.UINT16), r"one part of a split GGUF \(split.count\); join the parts first"),
    ("tokenizer.ggml.add_eos_token", (True, V.BOOL), "add_eos_token is true"),
    ("tokenizer.ggml.mystery", ("x", V.STRING), "'tokenizer.ggml.mystery' is not understood"),
    ("llama.attention.key_length", (32, V.UINT32), r"wrong shapes \[\('blk.0.attn_q.weight', \(64, 64\), \(128, 64\)"),
    ("llama.attention.value_length", (8, V.UINT32), "key_length 16, value_length 8"),
    ("llama.vocab_size", (999, V.UINT32), "vocab_size differs from its 320 tokens"),
])
def test_a_key_that_changes_what_the_file_means_is_refused(key, value, match, tmp_path: Path) -> None:
    path, _, _ = _llama(tmp_path, extra={key: value})
    refused(path, match)


@pytest.mark.parametrize("kind, match", [
    (16, r"is IQ2_XXS \(an i-quant, not supported\); supported: F32, F16, BF16, Q4_0"),
    (23, r"is IQ4_XS \(an i-quant, not supported\)"),
    (99, r"is an unknown GGML type 99; supported: F32"),
    (28, r"is F64 \(not supported\).*refused, not cast"),
])
def test_an_iquant_or_unknown_tensor_type_is_refused_with_its_name(kind: int, match: str, tmp_path: Path) -> None:
    plain, _, _ = _llama(tmp_path)
    crafted = taken_apart(plain)
    dims, _, blob = crafted.tensors["blk.0.ffn_down.weight"]
    crafted.tensors["blk.0.ffn_down.weight"] = (dims, kind, blob)
    message = refused(crafted.write(tmp_path / "iq.gguf"), f"tensor blk.0.ffn_down.weight {match}")
    assert message.startswith("iq.gguf is not a valid GGUF file: ")
