"""Long runs, by hand: ``python -m pytest -m slow`` (about a minute each on a 2-core CPU)."""

from __future__ import annotations

import pytest

from core import load_checkpoint, training


@pytest.mark.slow
def test_reverse_trains_from_scratch_to_99_percent(tmp_path):
    config = training.TrainConfig(task="reverse", out=str(tmp_path / "reverse.safetensors"), train_size=60000, lr=0.5,
                         warmup=200, batch_size=128, steps=1500, eval_every=100, stop_at=0.99, progress=False)
    result = training.train(config)
    assert result.stopped == "target reached"
    assert result.metrics["test"]["exact_match"] >= 0.99
    assert load_checkpoint(result.checkpoint).info.extra["snapshots"]["kinds"] == ["encoder", "decoder", "cross"]
