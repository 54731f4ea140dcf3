"""Issue 28: an uploaded model's runs in a worker process (``core.inspect.worker.ExplainWorker``).

The worker's Explanation is the in-process one bit for bit (every map, prediction, token and field) for a
shipped checkpoint, a tiny Hugging Face BERT folder, a tiny GGUF file and a tiny GPT-2 folder; a run past its deadline, a
memory cap far too small, a child killed mid-run and a ``BaseException`` in the child are each one
``ValueError`` line within seconds, and the next call works. The wire format is checked on its own too.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from core import explain, explain_batch, load_checkpoint, load_pretrained
from core.inspect.wire import from_wire, to_wire
from core.inspect.worker import ExplainWorker, ModelFacts
from core.text.child import LOAD_CHILD, Child
from tests.helpers.paths import SHIPPED
from tests.helpers.pretrained_files import write_tiny_bert, write_tiny_gguf
from tests.helpers.same import assert_same

TRANSLATION = SHIPPED / "translation.safetensors"
OPTION_SETS = [{}, {"decoding": "beam", "beam_size": 3, "return_scores": True},
               {"temperature": 2.0, "hard": False, "causal": False, "return_scores": True,
                "head_mask": {"encoder": [[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]}}]


@pytest.fixture(scope="module")
def translation_worker():
    worker = ExplainWorker(TRANSLATION, deadline_s=60)
    yield worker
    worker.close()


def test_the_wire_format_rebuilds_every_field_and_refuses_what_it_does_not_write() -> None:
    ckpt = load_checkpoint(SHIPPED / "lm.safetensors")
    for want in (explain(ckpt, "the cat", return_scores=True, continuation=3), explain(ckpt, "a dog")):
        records, arrays = to_wire([want])
        assert all(isinstance(v, np.ndarray) for v in arrays.values()) and "0.attention.decoder" in arrays
        assert_same(from_wire(records, arrays)[0], want)
    records, arrays = to_wire([want])
    del arrays["0.attention.decoder"]
    with pytest.raises(ValueError, match="malformed"):
        from_wire(records, arrays)
    with pytest.raises(ValueError, match="malformed"):
        from_wire([{"text": "x"}], {})


def test_a_shipped_checkpoint_explains_in_the_worker_bit_for_bit(translation_worker: ExplainWorker) -> None:
    ckpt = load_checkpoint(TRANSLATION)
    facts = translation_worker.facts
    assert (facts.architecture, facts.max_len, facts.parameters) == (
        ckpt.config.architecture, ckpt.config.max_len, sum(p.numel() for p in ckpt.model.parameters()))
    assert isinstance(facts, ModelFacts) and facts.config == ckpt.config and facts.info.sha256 == ckpt.info.sha256
    for options in OPTION_SETS:
        assert_same(translation_worker.explain("the black cat", **options), explain(ckpt, "the black cat", **options))
    texts = ["the cat", "a big black dog runs"]
    got = translation_worker.explain_batch(texts, padding=False)
    for a, b in zip(got, explain_batch(ckpt, texts, padding=False)):
        assert_same(a, b)
    assert translation_worker.starts == 1  # loaded once, every request answered by the same child


def test_a_bad_text_is_the_same_one_line_refusal_and_the_child_lives_on(translation_worker: ExplainWorker) -> None:
    with pytest.raises(ValueError) as in_process:
        explain(load_checkpoint(TRANSLATION), "   ")
    with pytest.raises(ValueError) as worker:
        translation_worker.explain("   ")
    assert str(worker.value) == str(in_process.value) and "\n" not in str(worker.value)
    starts = translation_worker.starts
    assert translation_worker.explain("the cat").prediction.text
    assert translation_worker.starts == starts


def assert_worker_matches(path: Path, text: str, option_sets: list[dict]) -> None:
    """The pretrained model at ``path`` explains ``text`` in its worker exactly as in this process."""
    worker = ExplainWorker(path, deadline_s=60)
    try:
        loaded = load_pretrained(path)
        for options in option_sets:
            assert_same(worker.explain(text, **options), explain(loaded, text, **options))
    finally:
        worker.close()


def test_a_hugging_face_bert_folder_explains_in_the_worker_bit_for_bit(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "bert")
    assert_worker_matches(tmp_path / "bert", "the cat sat on the mat", [{}, {"return_scores": True, "temperature": 0.5}])


def test_a_gguf_file_explains_in_the_worker_bit_for_bit(tmp_path: Path) -> None:
    write_tiny_gguf(tmp_path / "tiny.gguf")
    assert_worker_matches(tmp_path / "tiny.gguf", "the cat sat", [{}, {"continuation": 3, "return_scores": True}])


@pytest.mark.slow  # transformers builds the reference folder: ~14 s on a loaded machine
def test_a_hugging_face_gpt2_folder_explains_in_the_worker_bit_for_bit(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from tests.helpers.hf_decoder_reference import reference_model, save_folder
    config = transformers.GPT2Config(vocab_size=320, n_positions=64, n_embd=16, n_layer=2, n_head=4,
                                     bos_token_id=1, eos_token_id=2)
    folder = save_folder(reference_model(config), tmp_path / "gpt2", add_bos=False)
    assert_worker_matches(folder, "the cat sat on", [{}, {"continuation": 4, "return_scores": True}])


def test_a_run_past_its_deadline_is_stopped_in_one_line_and_the_next_call_starts_a_fresh_child(
        translation_worker: ExplainWorker) -> None:
    translation_worker.facts  # started: the deadline is the run's alone
    starts, slow = translation_worker.starts, ["the black cat sat on a big mat"] * 256
    began = time.perf_counter()
    with pytest.raises(ValueError, match=r"took longer than 0\.2 s and was stopped") as caught:
        translation_worker.explain_batch(slow, decoding="beam", beam_size=8, deadline_s=0.2)
    assert time.perf_counter() - began < 10.0 and "\n" not in str(caught.value)
    assert translation_worker.explain("the cat").prediction.text  # a fresh child
    assert translation_worker.starts == starts + 1


def test_a_child_killed_mid_run_is_one_line_and_never_a_hang(translation_worker: ExplainWorker) -> None:
    translation_worker.facts
    pid, starts = translation_worker._child.process.pid, translation_worker.starts
    killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(ValueError, match="worker process ended") as caught:
        translation_worker.explain_batch(["the black cat sat on a big mat"] * 256, decoding="beam", beam_size=8)
    killer.join()
    assert "\n" not in str(caught.value)
    assert translation_worker.explain("the cat").prediction.text and translation_worker.starts == starts + 1


def test_a_memory_cap_far_too_small_is_one_line(tmp_path: Path) -> None:
    worker = ExplainWorker(TRANSLATION, memory_bytes=2**20, deadline_s=30)
    try:
        began = time.perf_counter()
        with pytest.raises(ValueError, match="memory cap") as caught:
            worker.explain("the cat")
        assert time.perf_counter() - began < 60.0 and "\n" not in str(caught.value)
    finally:
        worker.close()


def test_a_base_exception_in_the_child_is_one_error_answer_and_the_child_answers_on() -> None:
    code = LOAD_CHILD + ("def setup(message):\n    return message, 'facts'\n"
                         "def answer(state, message):\n"
                         "    if message == 'interrupt':\n        raise KeyboardInterrupt\n"
                         "    if message == 'exit':\n        raise SystemExit(3)\n"
                         "    print('noise on stdout')\n    return [state, message]\n"
                         "child.serve(setup, answer)\n")
    child = Child(code)
    try:
        assert child.start("state", 30) == ("ready", "facts")
        assert child.ask("interrupt", 10, "run") == ("error", "KeyboardInterrupt")
        assert child.ask("exit", 10, "run") == ("error", "3")
        assert child.ask("hello", 10, "run") == ("ok", ["state", "hello"])  # what it printed never reached us
    finally:
        child.kill()
    assert not child.alive() and child.ask("hello", 1, "run") == ("ended", "run")
