"""Issue 28 through the app: an uploaded model's Lesson trace and Learn pages' model maths run in its worker
process, never in the server.

With an uploaded translation checkpoint chosen, the Lesson, Positional (what the model adds), the Playground
(Q/K/V and ``nn.MultiheadAttention``), Self-attention (the permutation demo, positions) and Masks (the model's
tokenizer) draw what the upload's worker computed: none of core's lesson functions ran in this process, one
child answered everything, and each answer is the in-process result bit for bit. A run past the gate's run time
is one ``st.error`` line, never a traceback, and the page works again. A pretrained model chosen in the sidebar
gives the Learn pages a line saying what they read, never Streamlit's error page.
"""

from __future__ import annotations

import functools
import os

import pytest

import core.lessons
from app import resources
from core import load_checkpoint
from core.lessons.worker import CALLS
from tests.helpers.apptest_helpers import SCRIPTS, open_page
from tests.helpers.paths import SHIPPED
from tests.helpers.pretrained_files import write_tiny_bert
from tests.helpers.same import assert_same
from tests.helpers.uploads import upload, zipped

TRANSLATION = SHIPPED / "translation.safetensors"
LEARN = ["positional", "playground", "self-attention", "masks"]


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """(worker, call name, args, kwargs, result) of every lesson call the app's workers answered."""
    seen, real = [], resources.explain_worker

    def spy(path: str, version: str):
        worker = real(path, version)
        if not hasattr(worker, "_spied"):
            lesson = worker.lesson

            def recorded(name, *args, **kwargs):
                result = lesson(name, *args, **kwargs)
                seen.append((worker, name, args, {k: v for k, v in kwargs.items() if k != "deadline_s"}, result))
                return result
            worker.lesson, worker._spied = recorded, True
        return worker

    monkeypatch.setattr(resources, "explain_worker", spy)
    return seen


@pytest.fixture
def in_server(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of core's lesson functions run in this (the server's) process."""
    ran: list[str] = []
    for name in CALLS:
        if hasattr(core.lessons, name):
            real = getattr(core.lessons, name)
            monkeypatch.setattr(core.lessons, name, functools.wraps(real)(
                lambda *a, _real=real, **k: ran.append(_real.__name__) or _real(*a, **k)))
    return ran


def test_an_uploaded_model_s_lesson_and_learn_maths_run_in_its_worker_bit_for_bit(runs, answers, in_server) -> None:
    at = open_page("lesson")
    in_server.clear()
    at = upload(at, "my-translation.safetensors", TRANSLATION.read_bytes())
    assert at.session_state["ckpt"].startswith("upload:") and not at.error, [e.value for e in at.error]
    for page in LEARN:
        if page == "masks":
            at.session_state["mask_tok"] = "checkpoint"
        at.switch_page(SCRIPTS[page]).run()
        assert not at.exception and not at.error, (page, [e.message for e in at.exception], [e.value for e in at.error])
    assert not in_server  # the server never ran the uploaded model
    called = {name for _, name, *_ in answers}
    assert called >= {"trace_sentence", "model_encoding", "model_projection", "torch_mha", "permutation_demo",
                      "pe_beyond", "checkpoint_batch"}, called
    workers = {id(worker) for worker, *_ in answers}
    worker = answers[0][0]
    assert len(workers) == 1 and worker.starts == 1 and worker.pid not in (None, os.getpid())
    ckpt = load_checkpoint(worker.path)
    for _, name, args, kwargs, result in answers:
        assert_same(result, CALLS[name](ckpt, *args, **kwargs), name)


def test_a_lesson_past_the_run_time_is_one_error_line_and_the_page_works_again(
        runs, answers, monkeypatch: pytest.MonkeyPatch) -> None:
    at = upload(open_page("positional"), "my-translation.safetensors", TRANSLATION.read_bytes())
    assert not at.error, [e.value for e in at.error]
    worker = answers[-1][0]
    monkeypatch.setattr(resources.GATE, "run_s", 0.001)  # the worker's deadline is the gate's own run time
    at.text_input(key="pe_text").input("the black dog").run()
    assert not at.exception, [x.message for x in at.exception]
    errors = [x.value for x in at.error]
    assert len(errors) == 1 and "took longer than 0.001 s and was stopped" in errors[0] and "\n" not in errors[0], errors
    assert worker.pid is None  # the child was killed
    monkeypatch.setattr(resources.GATE, "run_s", 60.0)
    at.text_input(key="pe_text").input("the black cat").run()
    assert not at.exception and not at.error, [x.value for x in at.error]
    assert worker.starts == 2 and answers[-1][1] == "model_encoding" and answers[-1][2] == ("the black cat",)


def test_an_uploaded_pretrained_model_gives_the_learn_pages_a_line_never_an_error_page(runs, tmp_path) -> None:
    write_tiny_bert(tmp_path / "bert")
    at = upload(open_page("explore"), "bert.zip", zipped(tmp_path / "bert"))
    assert at.session_state["ckpt"].startswith("upload:") and not at.error, [e.value for e in at.error]
    at.session_state["mask_tok"] = "checkpoint"
    for page in [*LEARN, "architecture", "checkpoints"]:
        at.switch_page(SCRIPTS[page]).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        assert any("is a pretrained model" in i.value for i in at.info), (page, [i.value for i in at.info])
