"""Issue 28: the teaching pages' model maths of an untrusted model run in its worker process
(``core.lessons.LessonWorker``).

Every call the worker answers (the Lesson's trace, Positional's model encoding, the Playground's projections and
``nn.MultiheadAttention``, Self-attention's permutation demo, positions and length accuracy, the Masks page's batch,
a sentence encoder's similarity) gives the in-process result bit for bit; a call it does not know, a refusal and a run past its deadline
are one ``ValueError`` line each and the next call works. The records' wire format refuses types it was not given.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from core import lessons, load_checkpoint, load_pretrained, sentence_similarity
from core.inspect.wire import pack, unpack
from core.lessons.worker import CALLS, RECORDS, LessonWorker
from tests.helpers.paths import REVERSE, SHIPPED
from tests.helpers.pretrained_files import write_tiny_bert
from tests.helpers.same import assert_same

TRANSLATION = SHIPPED / "translation.safetensors"
SOURCE, TARGET = "the black cat sleeps", "el gato negro duerme"
CASES = [
    ("trace_sentence", (SOURCE, 1), {}),
    ("model_encoding", ("the cat",), {}),
    *[("model_projection", (SOURCE, TARGET, mode, 2), {}) for mode in ("encoder self", "decoder self", "cross")],
    ("torch_mha", (SOURCE,), {}),
    ("permutation_demo", (SOURCE,), {"positions": True}),
    ("permutation_demo", ("the big dog",), {"positions": False, "permutation": [2, 0, 1]}),
    ("pe_beyond", (), {}),
    ("checkpoint_batch", (["the cat sleeps", "a big black dog"],), {"max_tokens": 3}),
    ("compare_decoding", (SOURCE, 3, 2.0, 5, 0.9), {}),
    ("compare_decoding", (SOURCE, 0, 1.0, None, None), {}),
]


@pytest.fixture(scope="module")
def translation() -> tuple[LessonWorker, object]:
    worker = LessonWorker(TRANSLATION, deadline_s=120)
    yield worker, load_checkpoint(TRANSLATION)
    worker.close()


@pytest.mark.parametrize("name, args, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_lesson_in_the_worker_is_the_in_process_result_bit_for_bit(translation, name, args, kwargs) -> None:
    worker, ckpt = translation
    want = CALLS[name](ckpt, *args, **kwargs)
    assert_same(worker.lesson(name, *args, **kwargs), want, name)
    assert worker.starts == 1  # one child, the model loaded once, for every call


def test_a_lesson_can_be_asked_by_its_function(translation) -> None:
    worker, ckpt = translation
    assert_same(worker.lesson(lessons.model_encoding, "a cat"), lessons.model_encoding(ckpt, "a cat"))
    assert worker.explain("the cat").prediction.text  # the same child explains too


def test_the_length_accuracy_of_a_letter_model_is_the_in_process_one() -> None:
    worker = LessonWorker(REVERSE, deadline_s=120)
    try:
        assert_same(worker.lesson("length_accuracy", per_length=2, seed=3),
                    lessons.length_accuracy(load_checkpoint(REVERSE), per_length=2, seed=3))
    finally:
        worker.close()


def test_a_sentence_encoder_s_similarity_is_the_in_process_one(tmp_path: Path) -> None:
    write_tiny_bert(tmp_path / "bert")
    worker = LessonWorker(tmp_path / "bert", deadline_s=120)
    try:
        got = worker.lesson("sentence_similarity", "the cat sat", "a dog ran")
        assert type(got) is float and got == sentence_similarity(load_pretrained(tmp_path / "bert"), "the cat sat",
                                                                 "a dog ran")
    finally:
        worker.close()


def test_a_pretrained_encoder_decoder_s_lesson_trace_is_the_in_process_one(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.helpers.hf_seq2seq_reference import t5  # needs transformers: a test-only dependency

    folder = t5(tmp_path / "t5", gated=True)[0]
    worker = LessonWorker(folder, deadline_s=120)
    try:
        assert_same(worker.lesson("trace_sentence", "the cat sat", 1),
                    lessons.trace_sentence(load_pretrained(folder), "the cat sat", 1))
    finally:
        worker.close()


def test_only_the_named_calls_run_and_a_refusal_is_one_line(translation) -> None:
    worker, ckpt = translation
    with pytest.raises(ValueError, match="not a lesson the worker runs"):
        worker.lesson(load_checkpoint)  # never sent to the child
    with pytest.raises(ValueError, match="not a lesson the worker runs"):
        worker.lesson(lambda model: model)
    starts = worker.starts
    with pytest.raises(ValueError, match="has no call named 'exec'"):
        worker.call("exec", "print(1)")  # the child's own registry refuses it too
    with pytest.raises(ValueError) as in_process:
        lessons.permutation_demo(ckpt, "   ")
    with pytest.raises(ValueError) as remote:
        worker.lesson("permutation_demo", "   ")
    assert str(remote.value) == str(in_process.value) and "\n" not in str(remote.value)
    assert worker.lesson("model_encoding", "a cat").tokens and worker.starts == starts  # the child lives on


def test_a_lesson_past_its_deadline_is_one_line_and_the_next_call_starts_a_fresh_child(translation) -> None:
    worker, ckpt = translation
    worker.start()
    starts, began = worker.starts, time.perf_counter()
    with pytest.raises(ValueError, match=r"took longer than 0\.001 s and was stopped") as caught:
        worker.lesson("trace_sentence", SOURCE, 0, deadline_s=0.001)
    assert time.perf_counter() - began < 10.0 and "\n" not in str(caught.value) and worker.pid is None
    assert_same(worker.lesson("trace_sentence", SOURCE, 0), lessons.trace_sentence(ckpt, SOURCE, 0))
    assert worker.starts == starts + 1


def test_records_cross_only_when_registered() -> None:
    trace = lessons.trace_sentence(load_checkpoint(TRANSLATION), "the cat", 0)
    value, arrays = pack(trace, RECORDS)
    assert all(isinstance(a, np.ndarray) for a in arrays.values())
    assert_same(unpack(value, arrays, RECORDS), trace)
    with pytest.raises(TypeError, match="cannot cross"):
        pack(trace, {"HeadTrace": lessons.HeadTrace})  # LessonTrace is not registered there
    with pytest.raises(ValueError, match="malformed"):
        unpack(value, arrays, {"HeadTrace": lessons.HeadTrace})
    with pytest.raises(ValueError, match="malformed"):
        unpack({"record": ["LessonTrace", {"head": 0}]}, {}, RECORDS)  # fields that do not build it
