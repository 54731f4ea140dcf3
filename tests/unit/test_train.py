"""The trainer: objective, learning, reproducibility, snapshots, stop, resume (the CLI in child processes:
resume after SIGKILL, signals, DDP: ``tests/e2e/test_train_processes.py``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.config import ModelConfig
from core.io.checkpoint import load, read_info
from core.training.config import MODEL_FLAGS, PRESET_SIZES
from core.training.data import Batch
from core.training.objectives import noam_lr, smoothed_loss, smoothed_targets
from core.training.snapshots import snapshot_maps, snapshot_timeline
from core.training.state import is_resume_state
from core.training.step import StepRecipe, train_step
from tests.helpers.tiny import random_ids, tiny_model, tiny_training_config
from core.cli.train import parse_args
from core.training.config import TrainConfig
from core.training.trainer import train
from core.training.state import resume_state_path

ROOT = Path(__file__).resolve().parents[2]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load(path).model.state_dict()


# ------------------------------------------------------------------------------ objective
def test_noam_schedule_follows_the_paper_formula():
    d_model, warmup = 512, 4000
    for step in (1, 100, 3999, 4000, 4001, 20000):
        expected = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert noam_lr(step, d_model, warmup) == pytest.approx(expected)
    rates = [noam_lr(s, d_model, warmup) for s in range(1, 8000)]
    assert max(range(len(rates)), key=rates.__getitem__) + 1 == warmup  # peak exactly at the warm-up's end
    assert noam_lr(10, 64, 100, factor=2.0) == pytest.approx(2 * noam_lr(10, 64, 100))


def test_label_smoothing_distribution_matches_the_annotated_transformer():
    dist = smoothed_targets(torch.tensor([2, 1, 0]), n_classes=5, smoothing=0.4, pad_id=0)
    third = 0.4 / 3  # smoothing spread over V - 2 classes (not the target, not padding)
    assert torch.allclose(dist[0], torch.tensor([0.0, third, 0.6, third, third]))
    assert torch.allclose(dist[1], torch.tensor([0.0, 0.6, third, third, third]))
    assert torch.equal(dist[2], torch.zeros(5))  # a padding target counts for nothing
    assert torch.allclose(dist[:2].sum(-1), torch.ones(2))


def test_smoothed_loss_without_smoothing_is_cross_entropy():
    torch.manual_seed(0)
    logits, targets = torch.randn(4, 6, 9), torch.randint(0, 9, (4, 6))
    expected = F.cross_entropy(logits.reshape(-1, 9), targets.reshape(-1), ignore_index=0)
    assert smoothed_loss(logits, targets, 0.0, pad_id=0).item() == pytest.approx(expected.item(), rel=1e-6)
    row_logits, target = torch.tensor([[2.0, 0.0, 1.0, -1.0]]), torch.tensor([2])
    logp = row_logits.log_softmax(-1)[0]
    by_hand = -(0.8 * logp[2] + 0.1 * logp[1] + 0.1 * logp[3])  # 0.2 spread over V - 2 = 2 classes
    assert smoothed_loss(row_logits, target, 0.2, pad_id=0).item() == pytest.approx(by_hand.item(), rel=1e-6)


# ------------------------------------------------------------------------------ training
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    steps, evals, snaps = [], [], []
    result = train(tiny_training_config(tmp, steps=40), on_step=steps.append, on_eval=evals.append,
                   on_snapshot=lambda step, maps, index: snaps.append((step, maps)))
    return tmp, result, steps, evals, snaps


def test_training_lowers_the_loss_and_reports_through_callbacks(finished_run):
    _, result, steps, evals, snaps = finished_run
    assert [s.step for s in steps] == list(range(1, 41))
    assert sum(s.loss for s in steps[-5:]) < 0.9 * sum(s.loss for s in steps[:5])
    assert all(s.tokens_per_s > 0 and s.lr > 0 for s in steps)
    assert [e["step"] for e in evals] == [10, 20, 30, 40]
    assert [step for step, _ in snaps] == [0, 10, 20, 30, 40]
    assert result.stopped == "completed" and result.step == 40
    assert set(result.metrics) == {"validation", "test"}


def test_checkpoint_records_history_command_and_snapshots(finished_run):
    tmp, result, *_ = finished_run
    ckpt = load(result.checkpoint)
    extra = ckpt.info.extra
    assert ckpt.info.task == "copy"
    assert [h["step"] for h in extra["history"]] == [10, 20, 30, 40]
    assert extra["train"]["command"].startswith("python -m core train ")
    assert "--task=copy" in extra["train"]["command"] and "--preset=tiny" in extra["train"]["command"]
    assert extra["snapshots"]["steps"] == [0, 10, 20, 30, 40]
    probe = extra["snapshots"]["probe"]
    assert probe == {"source": "gbdkajc", "target": "gbdkajc"}
    maps = snapshot_maps(ckpt.extra_tensors, 20)
    assert set(maps) == {"encoder", "decoder", "cross"}
    n_src, n_tgt = len(extra["snapshots"]["source_tokens"]), len(extra["snapshots"]["target_tokens"])
    assert maps["cross"].shape == (1, 2, n_tgt, n_src) and maps["encoder"].shape == (1, 2, n_src, n_src)
    assert abs(maps["cross"].sum(-1) - 1).max() < 1e-2  # float16 storage
    assert not torch.equal(torch.from_numpy(snapshot_maps(ckpt.extra_tensors, 0)["cross"]),
                           torch.from_numpy(maps["cross"]))  # attention changed during training
    assert ckpt.info.metrics["test"]["exact_match"] == result.metrics["test"]["exact_match"]


def test_the_run_checkpoint_holds_the_best_validated_weights(finished_run):
    _, result, *_ = finished_run
    history = load(result.checkpoint).info.extra["history"]
    best = max(history, key=lambda h: h["validation"]["exact_match"])
    assert load(result.checkpoint).info.extra["best_step"] == best["step"]


def test_same_seed_gives_the_same_checkpoint(tmp_path):
    first = train(tiny_training_config(tmp_path, "a", steps=15))
    second = train(tiny_training_config(tmp_path, "b", steps=15))
    a, b = weights(Path(first.checkpoint)), weights(Path(second.checkpoint))
    assert all(torch.equal(a[k], b[k]) for k in a)
    third = train(tiny_training_config(tmp_path, "c", steps=15, seed=1))
    c = weights(Path(third.checkpoint))
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_stop_request_ends_cleanly_with_a_loadable_checkpoint(tmp_path):
    calls = {"n": 0}

    def stop_after_seven() -> bool:
        calls["n"] += 1
        return calls["n"] >= 7

    result = train(tiny_training_config(tmp_path, steps=100), should_stop=stop_after_seven)
    assert result.stopped == "stopped" and result.step == 7
    ckpt = load(result.checkpoint)
    assert ckpt.info.extra["history"][-1]["step"] == 7
    assert read_info(resume_state_path(result.checkpoint)).extra["train_state"]["step"] == 7


def test_stop_at_target_and_patience(tmp_path):
    reached = train(tiny_training_config(tmp_path, "target", steps=60, stop_at=0.0))
    assert reached.stopped == "target reached" and reached.step == 10
    patient = train(tiny_training_config(tmp_path, "patient", steps=200, lr=1e-9, schedule="constant", patience=2))
    assert patient.stopped == "early stopping" and patient.step == 30


def test_resume_refuses_changed_settings(tmp_path):
    config = tiny_training_config(tmp_path, steps=10)
    train(config)
    with pytest.raises(ValueError, match="d_model"):
        train(tiny_training_config(tmp_path, steps=20, d_model=48), resume=True)
    longer = train(tiny_training_config(tmp_path, steps=20), resume=True)  # more steps is allowed
    assert longer.step == 20
    recorded = load(longer.checkpoint).info.run  # and the record says how to reproduce the longer run
    assert recorded.train["steps"] == 20 and "--steps=20" in recorded.command and "--steps=10" not in recorded.command


def test_cli_parses_flags_by_type():
    config, resume = parse_args(["--task=sort", "--steps=5", "--n_layers=none", "--tie_embeddings=true", "--resume"])
    assert (config.task, config.steps, config.n_layers, config.tie_embeddings, resume) == ("sort", 5, None, True, True)
    with pytest.raises(SystemExit):
        parse_args(["--steps=many"])
    with pytest.raises(ValueError, match="unknown task"):
        TrainConfig(task="poetry")


def test_train_config_takes_its_model_fields_from_model_config():
    model = {f.name: f for f in dataclasses.fields(ModelConfig)}
    train_fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for name in MODEL_FLAGS:
        assert (train_fields[name].type, train_fields[name].default) == (model[name].type, model[name].default)
    for name in PRESET_SIZES:
        assert (train_fields[name].type, train_fields[name].default) == (f"{model[name].type} | None", None)
    config = TrainConfig(d_model=48, n_heads=3, n_layers=1, norm="pre")
    options = config.model_options()
    assert (options["d_model"], options["n_heads"], options["n_encoder_layers"], options["norm"]) == (48, 3, 1, "pre")
    assert config.command().endswith("--n_layers=1 --d_model=48 --n_heads=3 --norm=pre")


def test_train_config_check_refuses_a_model_the_task_cannot_build():
    TrainConfig(task="sentiment", device="cpu").check()
    with pytest.raises(ValueError, match="divisible"):
        TrainConfig(d_model=30, n_heads=4).check()
    with pytest.raises(ValueError, match="n_layers must be at least 1"):
        TrainConfig(n_layers=0).check()
    with pytest.raises(ValueError, match="tie_embeddings"):
        TrainConfig(task="sentiment", tie_embeddings=True).check()


# ------------------------------------------------------------------------------ the train step
def _seq_batch(seed: int = 0) -> Batch:
    src, seq = random_ids(3, 5, seed=seed), random_ids(3, 6, seed=seed + 1)
    seq[2, 4:] = 0  # some padding targets
    return Batch(src, seq[:, :-1], seq[:, 1:], int((seq[:, 1:] != 0).sum()) + 15)


def test_recipe_learning_rates():
    assert StepRecipe(64, warmup=10, lr=2.0).lr_at(7) == pytest.approx(noam_lr(7, 64, 10, 2.0))
    assert StepRecipe(64, schedule="constant", lr=3e-4).lr_at(1000) == 3e-4
    with pytest.raises(ValueError, match="schedule"):
        StepRecipe(64, schedule="cosine")


def test_train_step_loss_lr_and_update():
    model, batch = tiny_model().train(), _seq_batch()
    torch.manual_seed(0)
    expected = smoothed_loss(model(batch.src, batch.tgt).logits, batch.targets, 0.1, 0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.Adam(model.parameters())
    torch.manual_seed(0)  # the same dropout mask as above
    outcome = train_step(model, optimizer, [batch], 3, StepRecipe(16, warmup=5))
    assert outcome.loss == pytest.approx(expected.item(), rel=1e-6)
    assert outcome.lr == pytest.approx(noam_lr(3, 16, 5)) and optimizer.param_groups[0]["lr"] == outcome.lr
    assert outcome.tokens == batch.tokens
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_train_step_accumulates_micro_batches_and_clips_the_global_norm():
    batch = _seq_batch()
    one, two = tiny_model(dropout=0.0), tiny_model(dropout=0.0)
    sgd = dict(lr=1.0)
    recipe = StepRecipe(16, schedule="constant", lr=1.0, label_smoothing=0.0, clip_norm=1e-3)
    train_step(one, torch.optim.SGD(one.parameters(), **sgd), [batch], 1, recipe)
    train_step(two, torch.optim.SGD(two.parameters(), **sgd), [batch, batch], 1, recipe)  # the mean of two equal halves
    start = tiny_model(dropout=0.0).state_dict()
    a, b = one.state_dict(), two.state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    moved = torch.sqrt(sum(((a[k] - start[k]) ** 2).sum() for k in a if a[k].is_floating_point()))
    assert moved.item() == pytest.approx(1e-3, rel=1e-3)  # SGD with lr 1 moves by exactly the clipped gradient


def test_train_step_trains_any_model_that_returns_logits():
    class Bigram(torch.nn.Module):  # not a Transformer: (src, tgt) -> logits (B, T, V)
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.nn.Embedding(11, 11)

        def forward(self, src, tgt):
            return self.table(tgt)

    model, batch = Bigram(), _seq_batch()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    recipe = StepRecipe(16, schedule="constant", lr=0.1, label_smoothing=0.0)
    losses = [train_step(model, optimizer, [batch], n, recipe).loss for n in range(1, 30)]
    assert losses[-1] < 0.5 * losses[0]


# ------------------------------------------------------------------------------ timeline and run files
def test_snapshot_timeline_gives_the_stored_maps(finished_run):
    _, result, *_ = finished_run
    ckpt = load(result.checkpoint)
    timeline = snapshot_timeline(ckpt)
    index = ckpt.info.extra["snapshots"]
    assert timeline.steps == [0, 10, 20, 30, 40] and timeline.kinds == ["encoder", "decoder", "cross"]
    assert (timeline.probe_source, timeline.probe_target) == ("gbdkajc", "gbdkajc")
    for step in timeline.steps:
        stored = snapshot_maps(ckpt.extra_tensors, step)
        for kind in timeline.kinds:
            maps = timeline.maps(step, kind)
            assert maps.dtype == np.float32 and np.array_equal(maps, stored[kind])
            assert np.array_equal(maps, ckpt.extra_tensors[f"snapshot/{step}/{kind}"].float().numpy())
    rows, cols = timeline.axes("cross")
    assert rows == index["target_tokens"] and cols == index["source_tokens"]
    assert timeline.axes("encoder") == (index["source_tokens"], index["source_tokens"])
    history = ckpt.info.extra["history"]
    assert timeline.history == history and timeline.best_step == ckpt.info.extra["best_step"]
    assert timeline.metrics_at(20) == history[1]["validation"] and timeline.metrics_at(0) is None
    with pytest.raises(KeyError):
        timeline.maps(5, "cross")


def test_a_checkpoint_without_snapshots_has_an_empty_timeline(checkpoints):
    timeline = snapshot_timeline(checkpoints["encoder-decoder"])
    assert timeline.steps == [] and timeline.kinds == [] and timeline.history == []


def test_resume_state_lives_beside_the_checkpoint():
    path = resume_state_path(Path("runs") / "copy.safetensors")
    assert path == Path("runs") / "copy.train-state.safetensors"
    assert is_resume_state(path) and not is_resume_state("runs/copy.safetensors")


def test_run_files_live_where_core_says(tmp_path):
    from core import training
    ckpt = training.run_checkpoint_path(tmp_path, "mine")
    ckpt.write_bytes(b"")
    resume_state_path(ckpt).write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    assert training.run_checkpoints(tmp_path) == [ckpt] and ckpt.parent == tmp_path and ckpt.stem == "mine"


def test_every_train_flag_has_a_description_beside_its_default(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines: compare on single spaces
    for f in dataclasses.fields(TrainConfig):
        help_line = f"{f.metadata['help']} (default: {f.default})"
        assert len(f.metadata["help"].split()) >= 2 and help_line in text, f.name


def test_check_refuses_bad_settings_before_anything_runs():
    with pytest.raises(ValueError, match="tie_embeddings"):
        TrainConfig(task="sentiment", preset="tiny", tie_embeddings=True).check()
    with pytest.raises(ValueError, match="device"):
        TrainConfig(task="copy", preset="tiny", device="quantum").check()
    with pytest.raises(ValueError, match="warmup"):
        TrainConfig(task="copy", warmup=0)
    TrainConfig(task="lm", preset="tiny").check()  # a valid one passes
