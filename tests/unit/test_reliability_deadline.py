"""Issue 28, K1 with a real deadline: a tokenizer that backtracks for minutes (built past the
spec check) is killed in its worker process when its deadline passes; the next call works."""

from __future__ import annotations

import time

import pytest
from tokenizers import Regex, Tokenizer, models, pre_tokenizers

from core.text.deadline import TokenizerWorker


def backtracking_spec() -> str:
    tokenizer = Tokenizer(models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"(a+)+$"), "isolated")
    return tokenizer.to_str()


def test_a_backtracking_tokenizer_is_killed_at_its_deadline_and_the_worker_restarts() -> None:
    worker = TokenizerWorker(backtracking_spec(), deadline_s=1.0)
    try:
        ids, offsets = worker.encode("ba")  # starts the worker; a short text is fine
        assert ids == [1, 0] and offsets == [(0, 1), (1, 2)]
        started = time.perf_counter()
        with pytest.raises(ValueError, match="longer than 1 s and was stopped"):
            worker.encode(("a" * 20 + "b") * 300)  # tens of seconds of backtracking in native code
        assert time.perf_counter() - started < 20.0  # the regex alone runs for minutes
        assert worker.encode("ba")[0] == [1, 0]  # a fresh worker
    finally:
        worker.close()


def test_a_tokenizer_that_cannot_be_built_is_one_line() -> None:
    worker = TokenizerWorker('{"not": "a tokenizer"}', deadline_s=1.0)
    try:
        with pytest.raises(ValueError, match="^tokenizing failed: ") as caught:
            worker.encode("hello")
        assert "\n" not in str(caught.value)
    finally:
        worker.close()


def test_the_first_call_gets_the_deadline_not_the_start_up_allowance_too() -> None:
    worker = TokenizerWorker(backtracking_spec(), deadline_s=1.0, startup_s=60.0)
    try:
        started = time.perf_counter()
        with pytest.raises(ValueError, match="longer than 1 s and was stopped"):
            worker.encode(("a" * 20 + "b") * 300)  # the very first text: the child starts, then gets 1 s
        assert time.perf_counter() - started < 30.0  # the start-up (seconds) and 1 s, never 60 s more
    finally:
        worker.close()
