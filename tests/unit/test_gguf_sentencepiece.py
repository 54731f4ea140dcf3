"""Issue 21, GGUF: SentencePiece vocabularies (``tokenizer.ggml.model == "llama"``: Llama 2, TinyLlama, Mistral).

A tiny BPE SentencePiece model with byte fallback is trained with the ``sentencepiece`` library, written
into a GGUF as llama.cpp's converter does (pieces, scores, token types) with a random ``transformers``
Llama; token ids must equal SentencePiece's own (``<s>`` first, as llama.cpp's SPM tokenizer) and
``transformers``' ``LlamaTokenizer`` built from the same model file (except on text that starts with spaces,
where transformers 5 keeps one space fewer than SentencePiece) — on sentences with accents, emoji, CJK and
runs of spaces — and the
model's maps, logits and greedy continuation must equal the reference's."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from core import load_pretrained
from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_vocab import MAX_SPLIT_WORK, spm_merges
from tests.helpers.gguf_from_hf import Vocab, write_gguf
from tests.helpers.hf_decoder_reference import CORPUS, reference_model
from tests.unit.test_gguf_families import SIZES, assert_equal_to_reference, compare_gguf

spm = pytest.importorskip("sentencepiece")
transformers = pytest.importorskip("transformers")

SPM_VOCAB = 420
SENTENCES = ["the animal didn't cross the street because it was too tired", "Hello wörld!",
             "le café était naïve, résumé à l'école", "I ❤️ 🦙 llamas 🤗", "日本語のテキスト",
             "  two  spaces and a tab\there", "numbers 2017 and 3.14", "tired?!", "ÀÉÎÕÜ ñ ç ß"]


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    """The weight cache in a folder of this module's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNSCOPE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory) -> tuple[Path, object]:
    """(the SentencePiece model file, its processor): BPE, byte fallback, no normalisation, as Llama 2's."""
    corpus = CORPUS + ["le café était naïve, résumé à l'école", "I ❤ llamas", "numbers 2017"] * 4
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=proto, vocab_size=SPM_VOCAB, model_type="bpe",
        byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, character_coverage=1.0, split_digits=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    path = tmp_path_factory.mktemp("spm") / "tokenizer.model"
    path.write_bytes(proto.getvalue())
    return path, spm.SentencePieceProcessor(model_file=str(path))


def spm_vocab(sp) -> Vocab:
    """The GGUF metadata llama.cpp's converter writes for ``sp``'s pieces."""
    tokens = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 5 if sp.is_unused(i) else 1
             for i in range(len(tokens))]
    return Vocab("llama", tokens, types, scores=[sp.get_score(i) for i in range(len(tokens))], bos=1, eos=2)


@pytest.fixture(scope="module")
def spm_gguf(spm_model, tmp_path_factory):
    """(the GGUF path, its reference model)."""
    _, sp = spm_model
    reference = reference_model(transformers.LlamaConfig(**{**SIZES, "vocab_size": sp.get_piece_size()},
                                                         num_key_value_heads=2))
    path = write_gguf(reference, tmp_path_factory.mktemp("gguf") / "llama2-spm.gguf", spm_vocab(sp))
    return path, reference


@pytest.mark.parametrize("text", SENTENCES)
def test_token_ids_equal_sentencepiece_and_transformers(text: str, spm_model, spm_gguf) -> None:
    model_file, sp = spm_model
    ours = load_pretrained(spm_gguf[0]).tokenizer.encode(text)
    assert ours.ids == [1, *sp.encode(text)]
    theirs = transformers.LlamaTokenizer.from_pretrained(str(model_file.parent), legacy=True, add_bos_token=True)
    if not text.startswith(" "):  # transformers 5's Metaspace drops one of the leading spaces SentencePiece keeps
        assert ours.ids == theirs(text)["input_ids"]


def test_byte_fallback_and_word_boundaries_are_visible(spm_gguf) -> None:
    tokenizer = load_pretrained(spm_gguf[0]).tokenizer
    encoding = tokenizer.encode("I 🦙")
    assert encoding.tokens[:2] == ["<s>", "▁I"]
    assert encoding.tokens[-4:] == ["<0xF0>", "<0x9F>", "<0xA6>", "<0x99>"]  # the llama's UTF-8 bytes
    assert tokenizer.decode(encoding.ids) == "I 🦙"


@pytest.mark.parametrize("text", SENTENCES[:4])
def test_decode_gives_back_the_text(text: str, spm_gguf) -> None:
    tokenizer = load_pretrained(spm_gguf[0]).tokenizer
    assert tokenizer.decode(tokenizer.encode(text).ids) == text


def test_sentencepiece_gguf_model_matches_transformers(spm_model, spm_gguf) -> None:
    _, sp = spm_model

    class Reference:  # the reference ids: SentencePiece's own, <s> first
        @staticmethod
        def encode(text: str):
            return type("Encoding", (), {"ids": [1, *sp.encode(text)]})

    assert_equal_to_reference(compare_gguf(spm_gguf[0], spm_gguf[1], Reference, text=SENTENCES[2]))


def test_the_cached_tokenizer_encodes_the_same(spm_gguf, monkeypatch) -> None:
    from core.io.pretrained import gguf_llama, weight_cache

    first = load_pretrained(spm_gguf[0])
    weight_cache.flush()
    monkeypatch.setattr(gguf_llama, "read_gguf", lambda path: pytest.fail("parsed again despite the cache"))
    again = load_pretrained(spm_gguf[0])
    for text in SENTENCES:
        assert again.tokenizer.encode(text).ids == first.tokenizer.encode(text).ids


def test_add_bos_false_and_no_space_prefix_are_honoured(spm_model, tmp_path: Path) -> None:
    import gguf

    _, sp = spm_model
    reference = reference_model(transformers.LlamaConfig(**{**SIZES, "vocab_size": sp.get_piece_size()},
                                                         num_key_value_heads=2))
    vocab = spm_vocab(sp)
    vocab.add_bos = False
    path = write_gguf(reference, tmp_path / "nobos.gguf", vocab)
    assert load_pretrained(path, use_cache=False).tokenizer.encode("the street").ids == sp.encode("the street")
    assert gguf.GGUFReader(str(path)).fields["tokenizer.ggml.add_bos_token"].contents() is False


def test_merges_rank_the_highest_scored_piece_first() -> None:
    tokens, scores = ["a", "b", "c", "ab", "bc", "abc"], [0.0, 0.0, 0.0, -2.0, -1.0, -3.0]
    assert spm_merges(tokens, scores, [1] * 6, "x") == [("b", "c"), ("a", "b"), ("a", "bc"), ("ab", "c")]
    assert spm_merges(tokens, scores, [1, 1, 1, 1, 3, 1], "x") == [("a", "b"), ("ab", "c")]  # control: never merged


def test_pieces_too_long_to_list_their_merges_are_refused_in_one_line() -> None:
    tokens = ["a" * 9000] * (MAX_SPLIT_WORK // 9000**2 + 1)
    with pytest.raises(CheckpointError, match=r"^big.gguf: its SentencePiece pieces are too long"):
        spm_merges(tokens, [0.0] * len(tokens), [1] * len(tokens), "big.gguf")


def test_explain_shows_the_sentencepiece_tokens(spm_gguf) -> None:
    import core

    explanation = core.explain(spm_gguf[0], "le café", max_new_tokens=2)
    tokens = explanation.target_tokens if explanation.target_tokens else explanation.source_tokens
    assert tokens[0] == "<s>" and any(t.startswith("▁") for t in tokens)
    assert abs(explanation.attention["decoder"].sum(-1) - 1).max() < 1e-5  # every row sums to 1
