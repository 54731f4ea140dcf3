"""Issue 28, uploaded tokenizers as untrusted (../shared/reliability.md §6.5 K1): normalizer and
pre-tokenizer types on an allow-list, backtracking or over-long regexes refused before the native
library compiles them, and native panics turned into one line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_files import read_tokenizer
from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.text.tokenizer_check import MAX_PATTERN_CHARS, check_regex, check_tokenizer_spec, native
from tests.helpers.pretrained_files import write_tiny_bert

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def word_tokenizer() -> Tokenizer:
    return Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))


def upload(tmp_path: Path, tokenizer: Tokenizer) -> Path:
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    (folder / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    return folder


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w*\s?)*x", r"((ab)*c)*", r"(?:\p{L}+ )+$", r"(a|b+){2,}"])
def test_k1_a_backtracking_split_regex_is_refused_before_any_input_is_tokenized(pattern: str, tmp_path: Path) -> None:
    tokenizer = word_tokenizer()
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), "isolated")
    folder = upload(tmp_path, tokenizer)
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match="nests one repeated part inside another") as caught:
        read_tokenizer(folder, 32)
    assert time.perf_counter() - started < 1.0 and "\n" not in str(caught.value)


@pytest.mark.parametrize("pattern", [r"(a|aa)+$", r"(?:x|y|xy)*z", r"(?:ab|a)+", r"(?:[a-z]b|c)+"])
def test_k1_a_repeat_of_alternatives_that_can_match_the_same_text_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="repeats alternatives that can match the same text"):
        check_regex(pattern)


@pytest.mark.parametrize("pattern", [r"(?:ab|cd)+", r"(ab|ac)+", r"(\w|\d)+", r"a*a*$"])
def test_repeats_of_alternatives_that_cannot_overlap_are_accepted(pattern: str) -> None:
    check_regex(pattern)  # the deadline worker, not this check, bounds polynomial cases such as a*a*$


def test_k1_a_backtracking_replace_normalizer_inside_a_sequence_is_refused(tmp_path: Path) -> None:
    tokenizer = word_tokenizer()
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace(Regex(r"(x+x+)+y"), "")])
    with pytest.raises(CheckpointError, match="normalizer Replace regex"):
        read_tokenizer(upload(tmp_path, tokenizer), 32)


def test_a_regex_over_the_length_limit_is_refused() -> None:
    with pytest.raises(ValueError, match=f"at most {MAX_PATTERN_CHARS:,}"):
        check_regex("a" * (MAX_PATTERN_CHARS + 1))


@pytest.mark.parametrize("spec, match", [
    ({"pre_tokenizer": {"type": "Evil"}}, "pre-tokenizer type 'Evil' is not accepted"),
    ({"normalizer": {"type": "Exec"}}, "normalizer type 'Exec' is not accepted"),
    ({"normalizer": "NFC"}, "normalizer type 'None'"),
    ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": 3}}, "Sequence is malformed"),
    ({"pre_tokenizer": {"type": "Split", "pattern": {"Regex": 3}}}, "malformed pattern"),
    ([1, 2], "JSON object"),
])
def test_types_off_the_allow_list_and_malformed_components_are_one_line(spec, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_tokenizer_spec(spec)


def test_deeply_nested_sequences_are_refused() -> None:
    part: dict = {"type": "NFC"}
    for _ in range(20):
        part = {"type": "Sequence", "normalizers": [part]}
    with pytest.raises(ValueError, match="nested more than"):
        check_tokenizer_spec({"normalizer": part})


@pytest.mark.parametrize("pattern", [GPT2, LLAMA3, r"\s+", r"\p{N}{1,3}", r"(?:a|b)+"])
def test_the_regexes_real_tokenizers_use_are_accepted(pattern: str) -> None:
    check_regex(pattern)


def test_the_shipped_kinds_of_tokenizer_still_load(tmp_path: Path) -> None:
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    tokenizer = read_tokenizer(folder, 32)
    assert tokenizer.encode("the animal").tokens[0] == "[CLS]"
    again = PretrainedTokenizer.from_json(tokenizer.to_json())
    assert again.encode("the animal").ids == tokenizer.encode("the animal").ids


def test_a_cached_tokenizer_with_a_backtracking_regex_is_refused() -> None:
    tokenizer = word_tokenizer()
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"(a+)+$"), "isolated")
    text = json.dumps({"kind": "bpe", "max_len": 8, "bos_id": None, "hf": json.loads(tokenizer.to_str())})
    with pytest.raises(ValueError, match="nests"):
        PretrainedTokenizer.from_json(text)


class PanicException(BaseException):
    """What pyo3 raises when Rust code panics: a BaseException, not an Exception."""


def test_a_native_panic_becomes_one_value_error_line() -> None:
    def panics() -> None:
        raise PanicException("regex too big\nstack backtrace: ...")

    with pytest.raises(ValueError, match="^tokenizing failed in the tokenizers library: regex too big$"):
        native(panics, "tokenizing")
    with pytest.raises(KeyboardInterrupt):
        native(lambda: (_ for _ in ()).throw(KeyboardInterrupt()), "tokenizing")


def test_a_regex_that_cannot_be_parsed_is_one_line(tmp_path: Path) -> None:
    folder = upload(tmp_path, word_tokenizer())
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(ab"}, "behavior": "Isolated",
                             "invert": False}
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    with pytest.raises(CheckpointError, match="cannot be checked") as caught:
        read_tokenizer(folder, 32)
    assert "\n" not in str(caught.value)
