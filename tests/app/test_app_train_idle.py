"""Issue 28: a training run nobody watches is shown to whoever opens Train, kept alive while a Train
page draws it, and stopped (validated and saved) once nobody has for ``app.services.jobs.IDLE_S``, unless it was
started to run on; a run the server forgot (a restart) continues from its resume state with the page's Continue."""

from __future__ import annotations

import pytest

from app.resources import registry
from core import training
from tests.helpers.apptest_helpers import open_page
from tests.app.test_app_train import set_tiny_run

pytestmark = pytest.mark.usefixtures("runs")  # tests/conftest.py: an empty runs folder, no job left training


def test_a_run_started_elsewhere_is_shown_to_whoever_opens_train_and_stops_once_nobody_does(runs, monkeypatch):
    config = training.TrainConfig(task="copy", preset="tiny", train_size=300, batch_size=16, steps=100_000, progress=False,
                         device="cpu", out=str(runs / "elsewhere.safetensors"))
    job = registry().start("elsewhere", config)  # another session's run, its tab since closed
    watched = []
    monkeypatch.setattr(job, "watch", lambda real=job.watch: watched.append(1) or real())
    at = open_page("train")
    assert any("`elsewhere`" in m.value for m in at.markdown)
    assert any("with no Train page open on it" in c.value for c in at.caption)
    for n in range(1, 3):  # every draw of the page (and of its fragment) keeps the run alive
        at.run()
        assert len(watched) > n and job.alive
    monkeypatch.setattr("app.services.jobs.IDLE_S", 0.5)
    assert job.join(timeout=120)  # nobody draws it any more: it stops by itself
    at.run()
    assert job.view().stopped_idle
    assert any("because nobody watched it" in i.value for i in at.info)


def test_a_run_started_to_run_on_says_so(runs):
    at = open_page("train")
    set_tiny_run(at, "runon", steps=5000)
    at.checkbox(key="train_run_on").check().run()
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error
    assert registry().get("runon").view().run_on
    at.run()
    assert any("Keeps training with nobody watching" in c.value for c in at.caption)


def test_a_run_the_server_forgot_continues_from_its_resume_state(runs):
    at = open_page("train")
    set_tiny_run(at, "restart", steps=10)
    at.button(key="train_start").click().run()
    assert registry().get("restart").join(timeout=120)
    registry().forget("restart")  # a restarted server knows no job; the run's files are all that is left
    at = open_page("train")
    set_tiny_run(at, "restart", steps=15)
    assert at.button(key="train_start").disabled and not at.button(key="train_resume").disabled
    assert any("or continue it" in w.value for w in at.warning)
    at.button(key="train_resume").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    job = registry().get("restart")
    assert job.join(timeout=120) and job.view().status == "finished"
    assert job.view().steps[0] == 11  # it went on from step 10, not from 0
