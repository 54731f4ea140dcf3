"""Issue 28 for the GGUF reader paths issue 21 added — SentencePiece vocabularies, Qwen2, Llama 3.1
``rope_freqs``, K-quants: every crafted fault refused with one line naming the file, from the header or
before any buffer of a claimed size exists, within the time and memory caps of the other GGUF cases;
and Hypothesis fuzzing of these files' header bytes."""

from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.io.pretrained.gguf_llama import load_gguf
from tests.helpers.gguf_craft import FLOAT32, INT32, UINT32, UINT64, Crafted, taken_apart
from tests.unit.test_reliability_gguf import refused
from tests.unit.test_reliability_gguf_fuzz import BIG, check_one

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

STRING, ARRAY, BOOL = 8, 9, 7


@lru_cache(maxsize=2)
def _source(kind: str, folder: str) -> Path:
    """A valid rich GGUF: ``spm`` (Llama, SentencePiece, rope_freqs, Q4_K and Q5_0) or ``qwen2`` (BPE, biases)."""
    from tests.helpers.gguf_from_hf import write_gguf
    from tests.helpers.hf_decoder_reference import reference_model
    from tests.unit.test_gguf_families import LLAMA3, SIZES, bpe_vocab
    from tests.unit.test_gguf_sentencepiece import spm_vocab

    path = Path(folder) / f"{kind}.gguf"
    if kind == "qwen2":
        reference = reference_model(transformers.Qwen2Config(**SIZES, num_key_value_heads=2))
        return write_gguf(reference, path, bpe_vocab(pre="qwen2", add_bos=False)[0], arch="qwen2")
    import io

    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["the cat sat on the mat", "le café ❤"] * 20),
                                   model_writer=proto, vocab_size=300, model_type="bpe", byte_fallback=True,
                                   unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    config = transformers.LlamaConfig(**{**SIZES, "vocab_size": sp.get_piece_size()}, num_key_value_heads=2,
                                      rope_scaling=dict(LLAMA3, original_max_position_embeddings=64))
    return write_gguf(reference_model(config), path, spm_vocab(sp),
                      quant={"ffn_down.weight": "Q4_K", "ffn_up.weight": "Q5_0"})


@pytest.fixture(params=["spm", "qwen2"])
def rich(request, tmp_path_factory) -> tuple[str, Crafted]:
    return request.param, taken_apart(_source(request.param, str(tmp_path_factory.getbasetemp())))


def test_the_untouched_copies_load(rich, tmp_path: Path) -> None:
    kind, crafted = rich
    model = load_gguf(crafted.write(tmp_path / "ok.gguf"), use_cache=False)[0]
    assert model.config.qkv_bias == (kind == "qwen2")
    assert model.config.rope_type == ("llama3" if kind == "spm" else "default")


@pytest.mark.parametrize("key, change, match", [
    ("{arch}.attention.head_count", (UINT32, 0, None), "at least 1, got 0"),
    ("{arch}.attention.head_count", (STRING, "4", None), "must be an integer"),
    ("{arch}.attention.head_count", (UINT64, 2**31, None), "does not split"),
    ("{arch}.attention.head_count", None, "has no .*attention.head_count"),
    ("{arch}.block_count", (UINT64, 100_000, None), "block_count 100,000"),
    ("{arch}.embedding_length", None, "has no .*embedding_length"),
    ("tokenizer.ggml.model", (STRING, "bert", None), "tokenizer model 'bert' is not supported"),
    ("tokenizer.ggml.model", (UINT32, 1, None), "tokenizer.ggml.model must be a string"),
    ("tokenizer.ggml.model", None, "tokenizer model None is not supported"),
    ("tokenizer.ggml.add_bos_token", (STRING, "yes", None), "add_bos_token must be a boolean"),
    ("tokenizer.ggml.token_type", (ARRAY, [1, 1, 1], INT32), "token_type holds 3 items for"),
    ("{arch}.rope.scaling.type", (STRING, "yarn", None), "rotary scaling 'yarn' is not supported"),
    ("{arch}.rope.scaling.type", (UINT32, 3, None), "rotary scaling 3 is not supported"),
])
def test_metadata_faults_are_one_line(key: str, change, match: str, rich, tmp_path: Path) -> None:
    kind, crafted = rich
    key = key.format(arch="qwen2" if kind == "qwen2" else "llama")
    if change is None:
        del crafted.fields[key]
    else:
        crafted.fields[key] = change
    refused(crafted.write(tmp_path / "meta.gguf"), match)


@pytest.mark.parametrize("change, match", [
    (lambda n: (ARRAY, ["x"] * n, STRING), "scores must be an array of floats"),
    (lambda n: (ARRAY, [0.0] * (n - 1), FLOAT32), "scores holds .* items for"),
    (lambda n: (FLOAT32, 1.0, None), "scores must be an array of floats"),
])
def test_sentencepiece_score_faults_are_one_line(change, match: str, tmp_path_factory, tmp_path: Path) -> None:
    crafted = taken_apart(_source("spm", str(tmp_path_factory.getbasetemp())))
    n = len(crafted.fields["tokenizer.ggml.tokens"][1])
    crafted.fields["tokenizer.ggml.scores"] = change(n)
    refused(crafted.write(tmp_path / "scores.gguf"), match)


def test_a_token_that_is_not_utf8_is_one_line(rich, tmp_path: Path) -> None:
    _, crafted = rich
    kind, tokens, item = crafted.fields["tokenizer.ggml.tokens"]
    crafted.fields["tokenizer.ggml.tokens"] = (kind, [*tokens[:-1], b"\x80\xff"], item)
    refused(crafted.write(tmp_path / "utf8.gguf"), "tokenizer.ggml.tokens holds a string that is not UTF-8")


def test_add_space_prefix_of_the_wrong_type_is_one_line(tmp_path_factory, tmp_path: Path) -> None:
    crafted = taken_apart(_source("spm", str(tmp_path_factory.getbasetemp())))
    crafted.fields["tokenizer.ggml.add_space_prefix"] = (UINT32, 7, None)
    refused(crafted.write(tmp_path / "space.gguf"), "add_space_prefix must be a boolean")


@pytest.mark.parametrize("dims, ggml_type, blob, match", [
    ((9,), 0, b"\0" * 36, "do not match"),  # a rope_freqs of the wrong length
    ((8,), 8, b"\0" * 34, "do not match|dimensions"),  # Q8_0 rows must be 32 wide
    ((8,), 0, struct.pack("<8f", *[1.0] * 4, *[-2.0] * 4), "not finite and above 0"),
    ((8,), 0, struct.pack("<8f", 1.0, 5.0, 1.0, 2.0, 8.0, 8.0, 8.0, 8.0), "not Llama 3.1's rotary scaling"),
])
def test_rope_freqs_faults_are_one_line(dims, ggml_type: int, blob: bytes, match: str, tmp_path_factory,
                                        tmp_path: Path) -> None:
    crafted = taken_apart(_source("spm", str(tmp_path_factory.getbasetemp())))
    crafted.tensors["rope_freqs.weight"] = (dims, ggml_type, blob)
    refused(crafted.write(tmp_path / "freqs.gguf"), match)


def test_a_file_claiming_more_than_the_float32_budget_is_refused_from_its_header(rich, tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """On a machine that can give a model 4 GiB, 1.1 G parameters (4.4 GB as float32) do not fit."""
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(6 * 2**30))  # 4 GiB once the reserve is kept
    _, crafted = rich
    dims, kind, blob = crafted.tensors["token_embd.weight"]
    crafted.tensors["token_embd.weight"] = ((dims[0], 1_100_000_000 // dims[0]), kind, blob)
    message = refused(crafted.write(tmp_path / "huge.gguf"), "more than 1,073,741,824 parameters")
    assert "4,096 MiB dequantized to float32 (the load budget for GGUF files; this machine can give a model " \
           "4.0 GiB now (6.0 GiB available less 2.0 GiB kept free))" in message


def test_a_qwen2_without_its_biases_is_one_line(tmp_path_factory, tmp_path: Path) -> None:
    crafted = taken_apart(_source("qwen2", str(tmp_path_factory.getbasetemp())))
    del crafted.tensors["blk.1.attn_k.bias"]
    refused(crafted.write(tmp_path / "nobias.gguf"), r"missing \['blk.1.attn_k.bias'\]")


@pytest.mark.parametrize("ggml_type", [12, 14])  # Q4_K, Q6_K: 256-wide blocks
def test_a_k_quant_tensor_whose_rows_are_not_whole_blocks_is_one_line(ggml_type: int, tmp_path_factory,
                                                                       tmp_path: Path) -> None:
    crafted = taken_apart(_source("spm", str(tmp_path_factory.getbasetemp())))
    dims, _, blob = crafted.tensors["blk.0.attn_q.weight"]  # 64 wide: a quarter of a K-quant block
    crafted.tensors["blk.0.attn_q.weight"] = (dims, ggml_type, blob)
    refused(crafted.write(tmp_path / "kq.gguf"), "has dimensions")


def test_a_k_quant_tensor_cut_short_is_one_line(tmp_path_factory, tmp_path: Path) -> None:
    crafted = taken_apart(_source("spm", str(tmp_path_factory.getbasetemp())))
    name = "blk.1.ffn_down.weight"
    dims, kind, blob = crafted.tensors[name]
    crafted.tensors[name] = ((dims[0], dims[1] * 64), kind, blob)
    refused(crafted.write(tmp_path / "short.gguf"), "past the end of the file|do not match")


@lru_cache(maxsize=2)
def _base(kind: str) -> tuple[bytes, int]:
    import tempfile

    folder = tempfile.mkdtemp(prefix="gguf-rich-fuzz-")
    data = _source(kind, folder).read_bytes()
    return data, data.index(b"blk.1.ffn_up.weight") + 64


@st.composite
def mutated(draw) -> bytes:
    """A rich file with a few header bytes replaced or 8-byte counts forged (SentencePiece scores, token
    types, rope_freqs and K-quant descriptions included), or cut short."""
    data, end = _base(draw(st.sampled_from(["spm", "qwen2"])))
    out = bytearray(data)
    for at, value in draw(st.lists(st.tuples(st.integers(0, end - 1), st.integers(0, 255)), max_size=8)):
        out[at] = value
    for at, value in draw(st.lists(st.tuples(st.integers(0, end - 8), st.sampled_from(BIG)), max_size=3)):
        out[at:at + 8] = struct.pack("<Q", value)
    if draw(st.integers(0, 4)) == 0:
        out = out[:draw(st.integers(0, len(out)))]
    return bytes(out)


@pytest.mark.parametrize("examples", [30, pytest.param(2000, marks=pytest.mark.slow, id="thousands")])
def test_mutated_rich_gguf_headers_load_or_are_one_checkpoint_error(examples: int) -> None:
    """30 fixed cases in CI; the ``slow`` run draws 2,000 new ones."""
    run = given(mutated())(check_one)
    settings(max_examples=examples, deadline=None, derandomize=examples < 100,
             suppress_health_check=[HealthCheck.too_slow])(run)()
