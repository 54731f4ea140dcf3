"""Tests for core.text.tokenizer (char / word / BPE tokenizers over HF `tokenizers`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.text.tokenizer import BOS_ID, EOS_ID, KINDS, PAD_ID, SPECIAL_TOKENS, UNK_ID, Encoding, Tokenizer


# "<pad>" etc. appear many times so a naive BPE would learn them as merges.
CORPUS = [
    "the cat sat on the mat.",
    "hello world, hello again!\nthe dog ran  far away",
    "a quick brown fox jumps over the lazy dog?",
    "<pad> <bos> <eos> <unk> <pad><pad><pad>",
] * 3
PLAIN = "the cat sat on the mat"  # only corpus words, single spaces


@pytest.fixture(scope="module", params=KINDS)
def tok(request: pytest.FixtureRequest) -> Tokenizer:
    return Tokenizer.train(request.param, CORPUS, vocab_size=120)


@pytest.fixture(scope="module")
def toks() -> dict[str, Tokenizer]:
    return {k: Tokenizer.train(k, CORPUS, vocab_size=120) for k in KINDS}


# ---------------------------------------------------------------- specials
def test_special_constants() -> None:
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)


def test_specials_are_ids_0_to_3(tok: Tokenizer) -> None:
    assert tok.token_strings([0, 1, 2, 3]) == list(SPECIAL_TOKENS)
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    hf = json.loads(tok.to_json())["hf"]
    vocab = hf["model"]["vocab"]
    assert [vocab[s] for s in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert hf["added_tokens"] == []  # HF added tokens would match user text


def test_bos_eos_added_with_zero_offsets(tok: Tokenizer) -> None:
    plain = tok.encode(PLAIN)
    enc = tok.encode(PLAIN, add_bos=True, add_eos=True)
    assert enc.ids == [BOS_ID, *plain.ids, EOS_ID]
    assert enc.tokens == ["<bos>", *plain.tokens, "<eos>"]
    assert enc.offsets == [(0, 0), *plain.offsets, (0, 0)]
    assert BOS_ID not in plain.ids and EOS_ID not in plain.ids


@pytest.mark.parametrize("literal", ["<pad>", "<bos>", "<eos>", "<unk>", "<pad><unk> the<eos>"])
def test_literal_special_text_is_not_special(tok: Tokenizer, literal: str) -> None:
    enc = tok.encode(literal)
    # Every character here occurs in the corpus, so nothing may be special/unknown.
    assert not set(enc.ids) & {PAD_ID, BOS_ID, EOS_ID, UNK_ID}, enc
    assert all(t in literal for t in enc.tokens)
    assert tok.decode(enc.ids).replace(" ", "") == literal.replace(" ", "")


def test_crafted_json_with_added_special_tokens_rejected(toks: dict[str, Tokenizer]) -> None:
    data = json.loads(toks["bpe"].to_json())
    data["hf"]["added_tokens"] = [
        {"id": 0, "content": "<pad>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
    ]
    with pytest.raises(ValueError, match="added tokens"):
        Tokenizer.from_json(json.dumps(data))


# ---------------------------------------------------------------- round trips
def test_char_round_trip_exact(toks: dict[str, Tokenizer]) -> None:
    t = toks["char"]
    for text in [*CORPUS, " leading and trailing \n", "a  b\n\nc"]:
        enc = t.encode(text)
        assert len(enc.ids) == len(text)  # one token per character
        assert UNK_ID not in enc.ids
        assert t.decode(enc.ids) == text


def test_bpe_round_trip_exact(toks: dict[str, Tokenizer]) -> None:
    t = toks["bpe"]
    for text in [*CORPUS, " hello  world \n", "the dog"]:
        enc = t.encode(text)
        assert UNK_ID not in enc.ids
        assert t.decode(enc.ids) == text
    assert len(t.encode("the cat sat").ids) < len("the cat sat")  # merges were learned


def test_word_round_trip(toks: dict[str, Tokenizer]) -> None:
    t = toks["word"]
    enc = t.encode(PLAIN)
    assert enc.tokens == PLAIN.split()
    assert t.decode(enc.ids) == PLAIN
    enc = t.encode("hello,   world!\n")
    assert enc.tokens == ["hello", ",", "world", "!"]
    assert t.decode(enc.ids) == "hello , world !"  # documented: single-space join


def test_decode_skip_special(tok: Tokenizer) -> None:
    ids = tok.encode("the cat", add_bos=True, add_eos=True).ids + [PAD_ID, PAD_ID]
    assert tok.decode(ids) == tok.decode(tok.encode("the cat").ids)
    raw = tok.decode(ids, skip_special=False)
    assert raw.startswith("<bos>") and raw.count("<pad>") == 2 and "<eos>" in raw
    assert "<unk>" in tok.decode([UNK_ID])  # unknowns stay visible even when skipping


def test_decode_rejects_bad_ids(tok: Tokenizer) -> None:
    for bad in ([tok.vocab_size], [-1]):
        with pytest.raises(ValueError, match="out of range"):
            tok.decode(bad)
        with pytest.raises(ValueError):
            tok.token_strings(bad)


# ---------------------------------------------------------------- unknowns and offsets
def test_unknown_char_is_visible_unk(tok: Tokenizer) -> None:
    text = "the 😀 cat"  # emoji is astral: offsets must be code points, not UTF-16/bytes
    enc = tok.encode(text)
    i = enc.tokens.index("<unk>")
    assert enc.ids[i] == UNK_ID
    assert enc.offsets[i] == (4, 5)
    j = enc.tokens.index("cat") if "cat" in enc.tokens else len(enc.tokens) - 1
    s, e = enc.offsets[j]
    assert text[s:e] == enc.tokens[j] and e == len(text)


def test_unknown_word_offsets(toks: dict[str, Tokenizer]) -> None:
    text = "the zebra sat"
    enc = toks["word"].encode(text)
    assert enc.tokens == ["the", "<unk>", "sat"]
    assert enc.ids[1] == UNK_ID and enc.offsets[1] == (4, 9)


@pytest.mark.parametrize(
    "text",
    ["👩\u200d👩\u200d👧", "漢字テスト", "e\u0301\u0327", "a\x00b", "a\r\nb", "שלום עולם", "\U0010ffff"],
)
def test_exotic_text_fully_covered(tok: Tokenizer, text: str) -> None:
    enc = tok.encode(text)
    _check_encoding(tok, text, enc)
    assert enc.ids  # something non-whitespace is there


@pytest.mark.parametrize("text", ["", " ", "\n\t  \r\n", "\u3000\u2003"])
def test_whitespace_only_gives_empty_encoding(tok: Tokenizer, text: str) -> None:
    assert tok.encode(text, add_bos=True, add_eos=True) == Encoding([], [], [])


def test_lone_surrogate_rejected(tok: Tokenizer) -> None:
    with pytest.raises(ValueError, match="surrogate"):
        tok.encode("the \ud800 cat")
    with pytest.raises(ValueError, match="surrogate"):
        Tokenizer.train(tok.kind, ["ok", "bad \udfff"])


def _check_encoding(tok: Tokenizer, text: str, enc: Encoding) -> None:
    assert len(enc.ids) == len(enc.tokens) == len(enc.offsets)
    covered = [False] * len(text)
    prev_end = 0
    for i, tid, (s, e) in zip(range(len(enc.ids)), enc.ids, enc.offsets):
        assert prev_end <= s < e <= len(text), (text, enc)
        prev_end = e
        covered[s:e] = [True] * (e - s)
        if tid == UNK_ID:
            assert enc.tokens[i] == "<unk>"
        else:
            assert 3 < tid < tok.vocab_size
            assert text[s:e] == enc.tokens[i]
    # Independent check of HF's offsets against the vocabulary itself
    # (a literal "▁" typed into bpe text is displayed from the vocab as " ").
    if not (tok.kind == "bpe" and "\u2581" in text):
        assert tok.token_strings(enc.ids) == enc.tokens
    for k, ch in enumerate(text):
        if tok.kind == "char" or not ch.isspace():
            assert covered[k], f"{ch!r} at {k} dropped from {text!r}: {enc}"


# lone surrogates are refused with a ValueError (tests/unit/test_explain.py), so the text holds none
_TEXT = st.text(alphabet=st.one_of(st.sampled_from(list("the cat sat<pad>,.!?\n ")),
                                   st.characters(exclude_categories=("Cs",))), max_size=40)


@pytest.mark.parametrize("kind", KINDS)
@settings(deadline=None, derandomize=True, max_examples=200)
@given(text=_TEXT)
def test_offsets_slice_original_text(toks: dict[str, Tokenizer], kind: str, text: str) -> None:
    tok = toks[kind]
    enc = tok.encode(text)
    if not text.strip():
        assert enc.ids == []
        return
    _check_encoding(tok, text, enc)
    assert not set(enc.ids) & {PAD_ID, BOS_ID, EOS_ID}
    if kind == "char":
        assert len(enc.ids) == len(text)


# ---------------------------------------------------------------- serialisation
def test_json_and_file_round_trip(tok: Tokenizer, tmp_path: Path) -> None:
    s = tok.to_json()
    again = Tokenizer.from_json(s)
    assert again.to_json() == s and again == tok and again.kind == tok.kind
    path = tmp_path / "tok.json"
    tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded == tok and loaded.vocab_size == tok.vocab_size
    for text in [*CORPUS, "zebra 😀 <pad>", "hello\r\n"]:
        assert loaded.encode(text, add_bos=True) == tok.encode(text, add_bos=True)
        assert loaded.decode(tok.encode(text).ids) == tok.decode(tok.encode(text).ids)


def test_equality_distinguishes(toks: dict[str, Tokenizer]) -> None:
    assert toks["char"] != toks["word"]
    assert Tokenizer.train("word", ["one two"]) != Tokenizer.train("word", ["one three"])
    assert toks["word"] != "word"


def _mutations(good: str) -> list[str]:
    d = json.loads(good)
    out = [good[: len(good) // 2], good[:-1], "", "not json", "[]", "null", "{}"]
    for key, val in [("format", "other"), ("version", 99), ("kind", "sentencepiece"),
                     ("hf", None), ("hf", "{}"), ("hf", {"model": 1})]:
        out.append(json.dumps({**d, key: val}))
    swapped = json.loads(good)
    vocab = swapped["hf"]["model"]["vocab"]
    vocab["<pad>"], vocab["<unk>"] = vocab["<unk>"], vocab["<pad>"]
    out.append(json.dumps(swapped))
    wrong_kind = json.loads(good)
    wrong_kind["kind"] = "bpe"  # a WordLevel model labelled bpe
    out.append(json.dumps(wrong_kind))
    return out


def test_malformed_json_raises_value_error(toks: dict[str, Tokenizer]) -> None:
    good = toks["char"].to_json()
    Tokenizer.from_json(good)  # the unmutated input is fine
    for bad in _mutations(good):
        with pytest.raises(ValueError):
            Tokenizer.from_json(bad)


def test_load_truncated_file_raises_value_error(toks: dict[str, Tokenizer], tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(toks["bpe"].to_json()[:100], encoding="utf-8")
    with pytest.raises(ValueError, match="malformed or truncated"):
        Tokenizer.load(path)


# ---------------------------------------------------------------- training
def test_training_is_deterministic(tok: Tokenizer) -> None:
    assert Tokenizer.train(tok.kind, list(CORPUS), vocab_size=120).to_json() == tok.to_json()
    other = Tokenizer.train(tok.kind, [*CORPUS, "ß über alles"], vocab_size=120)
    assert other.to_json() != tok.to_json()


def test_train_validation() -> None:
    with pytest.raises(ValueError, match="unknown tokenizer kind"):
        Tokenizer.train("bytes", CORPUS)
    for empty in ([], ["", "  \n"]):
        with pytest.raises(ValueError, match="empty corpus"):
            Tokenizer.train("word", empty)
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer.train("bpe", CORPUS, vocab_size=3)


def test_bpe_vocab_size_respected() -> None:
    small, big = Tokenizer.train("bpe", CORPUS, vocab_size=60), Tokenizer.train("bpe", CORPUS, vocab_size=150)
    assert small.vocab_size == 60 and 60 < big.vocab_size <= 150
    assert len(big.encode(CORPUS[1]).ids) < len(small.encode(CORPUS[1]).ids)


def test_min_frequency_drops_rare_words() -> None:
    t = Tokenizer.train("word", ["common rare", "common"], min_frequency=2)
    assert t.encode("common rare").ids[1] == UNK_ID and t.encode("common rare").ids[0] > UNK_ID
    assert t.vocab_size == len(SPECIAL_TOKENS) + 1


def test_char_vocab_sorted_and_no_normalisation() -> None:
    t = Tokenizer.train("char", ["baA \n"])
    assert t.token_strings(range(4, t.vocab_size)) == ["\n", " ", "A", "a", "b"]
    assert t.encode("Ab").tokens == ["A", "b"]  # case preserved
