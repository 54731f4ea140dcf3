"""The training CLI in child processes: resume after SIGKILL matches an uninterrupted run, SIGTERM and Ctrl-C
stop after the step with a full checkpoint, DDP with two CPU processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from core.io.checkpoint import CheckpointError, load, read_info
from core.training.state import resume_state_path
from core.training.trainer import train
from tests.helpers.tiny import TINY_TRAINING, tiny_training_config

ROOT = Path(__file__).resolve().parents[2]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load(path).model.state_dict()


def _cli(out: Path, *extra: str) -> list[str]:
    flags = [f"--{k}={v}" for k, v in TINY_TRAINING.items()]
    return [sys.executable, "-m", "core", "train", *flags, f"--out={out}", *extra]


def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path):
    STEPS = 200  # a wide margin between the first resume state and the end, even on a loaded machine
    reference = train(tiny_training_config(tmp_path, "reference", steps=STEPS))
    out = tmp_path / "killed.safetensors"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_cli(out, f"--steps={STEPS}"), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            try:
                if read_info(resume_state_path(out)).extra["train_state"]["step"] >= 10:  # the first resume state: kill now
                    break
            except CheckpointError:
                pass
            time.sleep(0.05)
        else:
            pytest.fail("the run never saved a resume state")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    killed_at = read_info(resume_state_path(out)).extra["train_state"]["step"]
    assert killed_at < STEPS, "the run finished before it could be killed"
    assert load(out).info.task == "copy"  # the last complete checkpoint still loads after the kill
    done = subprocess.run(_cli(out, f"--steps={STEPS}", "--resume"), cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed, expected = weights(out), weights(Path(reference.checkpoint))
    assert all(torch.equal(resumed[k], expected[k]) for k in expected)
    assert load(out).info.metrics == load(reference.checkpoint).info.metrics


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_signal_stops_the_cli_run_after_its_step_with_a_full_checkpoint(tmp_path, sent):
    out = tmp_path / "signalled.safetensors"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_cli(out, "--steps=100000"), cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not resume_state_path(out).exists():  # training has started and taken 10 steps
        assert time.monotonic() < deadline and proc.poll() is None, "the run never saved a resume state"
        time.sleep(0.05)
    proc.send_signal(sent)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-2000:]
    assert "stopping after this step" in stderr
    info = read_info(out)
    history = info.extra["history"]
    assert 10 <= history[-1]["step"] < 100000  # validated at the step it stopped, as a finished run does
    assert info.metrics["test"] and load(out).model is not None


def test_ddp_with_two_cpu_processes(tmp_path):
    out = tmp_path / "ddp.safetensors"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
               "-m", "core", "train", *_cli(out, "--steps=12")[4:]]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    final = [line for line in done.stderr.splitlines() if line.startswith(f"{out} after 12 steps")]
    assert len(final) == 1 and "{}" not in final[0], done.stderr[-3000:]  # the main rank's line, once
    ckpt = load(out)
    assert ckpt.info.extra["train"]["world_size"] == 2
    assert [h["step"] for h in ckpt.info.extra["history"]] == [10, 12]
    single = train(tiny_training_config(tmp_path, "single", steps=12))
    one = weights(Path(single.checkpoint))
    # Two ranks average gradients over twice the data, so the weights differ from one process.
    assert not all(torch.equal(one[k], v) for k, v in ckpt.model.state_dict().items())
