"""The background training job manager: real tiny runs in a thread, stop, failure, one at a time."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from app.services.jobs import (FAILED, FINISHED, RUNNING, STOPPED, JobRefused, JobRegistry, default_name, describe_error,
                               sanitize_name)
from core import load_checkpoint
from core.training.snapshots import snapshot_maps
from tests.helpers.tiny import tiny_training_config



pytestmark = pytest.mark.usefixtures("runs")  # tests/conftest.py: an empty runs folder


@pytest.fixture
def registry():
    jobs = JobRegistry(max_running=1)
    yield jobs
    for job in jobs.jobs():  # never leave a thread training behind
        job.stop()
        assert job.join(timeout=120)


def wait_for_step(job, step: int, limit_s: float = 60.0) -> None:
    """Bounded wait until the training thread has done ``step`` steps."""
    deadline = time.monotonic() + limit_s
    while job.view().step < step and job.alive:
        assert time.monotonic() < deadline, "the training thread made no progress"
        time.sleep(0.02)


def test_a_job_trains_in_a_thread_and_records_everything(registry, runs):
    config = tiny_training_config(runs, steps=30)
    job = registry.start("run", config)
    assert job.view().status == RUNNING
    assert job.join(timeout=180)
    view = job.view()
    assert view.status == FINISHED and view.done and view.error is None
    assert view.step == 30 and view.progress == 1.0
    assert view.steps == tuple(range(1, 31)) and len(view.losses) == len(view.lrs) == 30
    assert all(loss > 0 for loss in view.losses) and view.tokens_per_s > 0
    assert [r["step"] for r in view.evaluations] == [10, 20, 30]
    assert "exact_match" in view.evaluations[-1]["validation"]
    assert view.snapshot_steps == (0, 10, 20, 30) and view.snapshot_step == 30
    assert set(view.snapshot) == {"encoder", "decoder", "cross"}

    ckpt = load_checkpoint(config.out)
    index = ckpt.info.extra["snapshots"]
    assert index["steps"] == [0, 10, 20, 30]
    assert view.source_tokens == tuple(index["source_tokens"])
    assert view.target_tokens == tuple(index["target_tokens"])
    stored = snapshot_maps(ckpt.extra_tensors, 30)
    for kind, maps in view.snapshot.items():  # the live map is the one stored (float16 in the file)
        assert maps.shape == stored[kind].shape == (1, 2, *maps.shape[2:])
        assert abs(maps - stored[kind]).max() < 1e-2
    assert view.result is not None and view.result.checkpoint == config.out
    assert view.result.metrics["test"]
    assert [j.name for j in registry.jobs()] == ["run"] and registry.running() == []


def test_stop_mid_run_keeps_a_checkpoint_that_loads(registry, runs):
    config = tiny_training_config(runs, steps=5000)
    job = registry.start("long", config)
    wait_for_step(job, 3)
    assert registry.is_training(config.out)
    registry.stop("long")
    assert job.join(timeout=120)
    view = job.view()
    assert view.status == STOPPED and view.stop_requested
    assert 3 <= view.step < 5000
    ckpt = load_checkpoint(config.out)  # a usable checkpoint of the stopped run
    assert ckpt.info.task == "copy"
    assert ckpt.info.extra["history"][-1]["step"] == view.step  # validated at the stop
    assert view.step in ckpt.info.extra["snapshots"]["steps"]
    assert not registry.is_training(config.out)


def test_a_crashing_job_records_its_message_not_a_traceback(registry, runs):
    config = tiny_training_config(runs, steps=10, d_model=30, n_heads=4)  # 30 heads-indivisible: fails in train()
    with pytest.raises(ValueError, match="divisible"):
        config.check()  # the page asks first …
    job = registry.start("broken", config)  # … but a job that crashes anyway says why
    assert job.join(timeout=120)
    view = job.view()
    assert view.status == FAILED and view.done
    assert "divisible by n_heads" in view.error and "Traceback" not in view.error
    assert not Path(config.out).exists()


def test_a_second_concurrent_job_is_refused(registry, runs):
    first = registry.start("first", tiny_training_config(runs, "first", steps=5000))
    with pytest.raises(JobRefused, match="one model at a time"):
        registry.start("second", tiny_training_config(runs, "second", steps=10))
    with pytest.raises(JobRefused, match="already training"):
        registry.start("first", tiny_training_config(runs, "first", steps=10))
    assert [j.name for j in registry.running()] == ["first"]
    registry.stop("first")
    assert first.join(timeout=120)
    registry.forget("first")
    assert registry.get("first") is None





def test_run_names_are_safe_file_stems():
    assert sanitize_name("../../etc/passwd") == "etc-passwd"
    assert sanitize_name("my run (2)!") == "my-run-2"
    assert sanitize_name("Übersetzung_v1") == "bersetzung_v1"
    assert sanitize_name("/// ...") == ""
    assert len(sanitize_name("x" * 500)) == 64
    assert default_name("reverse", datetime(2024, 5, 6, 7, 8, 9)) == "reverse-20240506-070809"


def test_error_messages_are_one_line():
    assert describe_error(ValueError("d_model must be positive")) == "d_model must be positive"
    assert describe_error(RuntimeError("boom\n  at line 3")) == "RuntimeError: boom"


# ----------------------------------------------------------------------------- unwatched runs (issue 28)
def test_a_run_nobody_watches_stops_after_the_idle_time_and_keeps_its_checkpoint(registry, runs, monkeypatch):
    monkeypatch.setattr("app.services.jobs.IDLE_S", 0.5)
    config = tiny_training_config(runs, steps=100_000)
    job = registry.start("unwatched", config)
    assert job.join(timeout=120)  # nobody calls watch(): it stops by itself
    view = job.view()
    assert view.status == STOPPED and view.stopped_idle and not view.stop_requested and not view.run_on
    assert 0 < view.step < 100_000
    assert load_checkpoint(config.out).info.path.exists()


def test_a_watched_run_and_a_run_started_to_run_on_keep_training_past_the_idle_time(registry, runs, monkeypatch):
    monkeypatch.setattr("app.services.jobs.IDLE_S", 2.0)
    registry.max_running = 2
    watched = registry.start("watched", tiny_training_config(runs, "watched", steps=100_000))
    on = registry.start("on", tiny_training_config(runs, "on", steps=100_000), run_on=True)
    until = time.monotonic() + 5.0  # two and a half idle times
    while time.monotonic() < until:
        watched.watch()  # what the Train page's fragment does about once a second
        time.sleep(0.1)
    views = {job.name: job.view() for job in (watched, on)}  # at once: the watched one was just watched
    for name, view in views.items():
        assert view.status == RUNNING and not view.stopped_idle, name
    step = on.view().step
    wait_for_step(on, step + 1)  # unwatched, started to run on: still training
    assert on.alive and on.view().run_on and not views["watched"].run_on
