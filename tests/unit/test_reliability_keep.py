"""Issue 28, nothing destroys a good file: a resume with no state refuses, a failed import leaves
the previous checkpoint at --out intact, and app runs write a resume state as they go."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from app.services.jobs import SAVE_EVERY, JobRegistry, with_resume_states
from core import training
from core.__main__ import main as core_main
from core.io.checkpoint import CheckpointError, read_info
from core.io.convert import NNImportOptions, import_nn_transformer
from core.training.state import resume_state_path
from tests.helpers.nn_reference import SRC_VOCAB, TGT_VOCAB, reference
from tests.helpers.tiny import TINY_TRAINING, tiny_training_config


def test_train_resume_without_a_state_refuses_in_one_line_and_keeps_the_checkpoint(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "best.safetensors"
    out.write_bytes(b"the best checkpoint")  # any bytes: it must come out untouched
    flags = [f"--{k}={v}" for k, v in TINY_TRAINING.items()]
    with caplog.at_level(logging.ERROR):
        status = core_main(["train", *flags, "--steps=5", f"--out={out}", "--resume"])
    assert status == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "no resume state" in errors[0] and "\n" not in errors[0]
    assert out.read_bytes() == b"the best checkpoint"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.safetensors"]


def bare_state_dict(tmp_path: Path, *, nan: bool) -> tuple[Path, NNImportOptions]:
    ref = reference(False, seed=8)
    torch.manual_seed(9)
    state = {**ref.state_dict(), "src_tokens.weight": torch.randn(SRC_VOCAB, 16),
             "tgt_tokens.weight": torch.randn(TGT_VOCAB, 16), "head.weight": torch.randn(TGT_VOCAB, 16)}
    if nan:
        state["encoder.layers.0.linear1.weight"] = state["encoder.layers.0.linear1.weight"].clone()
        state["encoder.layers.0.linear1.weight"][0, 0] = float("nan")
    path = tmp_path / ("nan.safetensors" if nan else "good.safetensors")
    save_file({k: v.contiguous() for k, v in state.items()}, path)
    words = lambda n: ["<pad>", "<bos>", "<eos>", "<unk>", *(f"w{i}" for i in range(n - 4))]  # noqa: E731
    return path, NNImportOptions(n_heads=4, src_vocab=tuple(words(SRC_VOCAB)), tgt_vocab=tuple(words(TGT_VOCAB)),
                                 positional="none")


def test_a_failed_import_leaves_the_previous_checkpoint_and_no_temp_file(tmp_path: Path) -> None:
    good, options = bare_state_dict(tmp_path, nan=False)
    out = tmp_path / "out.safetensors"
    import_nn_transformer(good, out, options)
    os.chmod(out, 0o640)
    before = out.read_bytes()
    bad, _ = bare_state_dict(tmp_path, nan=True)
    with pytest.raises(CheckpointError, match="out.safetensors.*(NaN|non-finite)|(NaN|non-finite).*out.safetensors"):
        import_nn_transformer(bad, out, options)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.safetensors", "nan.safetensors", "out.safetensors"]
    import_nn_transformer(good, out, options)  # a successful import replaces it, keeping its permissions
    assert out.stat().st_mode & 0o777 == 0o640


def test_app_runs_save_a_resume_state_at_every_validation(tmp_path: Path) -> None:
    config = with_resume_states(tiny_training_config(tmp_path, steps=25, save_every=10_000, eval_every=5))
    assert config.save_every == 5
    assert with_resume_states(tiny_training_config(tmp_path, save_every=10_000, eval_every=10_000)).save_every == SAVE_EVERY
    seen = {}

    def on_step(info) -> None:
        if info.step == 13:  # mid-run: the state of step 10 is on disk
            seen["step"] = read_info(resume_state_path(config.out)).extra["train_state"]["step"]

    training.train(config, on_step=on_step)
    assert seen == {"step": 10}


def test_an_app_run_continues_from_its_resume_state(tmp_path: Path) -> None:
    config = tiny_training_config(tmp_path, steps=10, eval_every=5)
    registry = JobRegistry(max_running=1)
    first = registry.start("run", config)
    assert first.join(120) and first.view().status == "finished"
    longer = registry.start("run", tiny_training_config(tmp_path, steps=15, eval_every=5), resume=True)
    assert longer.join(120) and longer.view().status == "finished"
    assert longer.view().steps[0] == 11  # it went on from step 10, not from 0
