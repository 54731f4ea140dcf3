"""The typed run record reads what the trainer writes and treats wrong types as absent."""

from __future__ import annotations

from pathlib import Path

from core import load_checkpoint
from core.io.run_record import RunRecord

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"


def test_a_shipped_run_reads_its_labels_history_and_command():
    sentiment = load_checkpoint(SHIPPED / "sentiment.safetensors").info
    assert sentiment.run.labels == tuple(sentiment.extra["labels"]) and len(sentiment.run.labels) >= 2
    reverse = load_checkpoint(SHIPPED / "reverse.safetensors").info.run
    assert reverse.history and all({"step", "loss", "validation"} <= set(r) for r in reverse.history)
    assert reverse.command and "python -m core train" in reverse.command


def test_wrong_types_read_as_absent():
    record = RunRecord({"labels": "abc", "best_step": True, "train": [1], "history": [{"step": "1"}],
                        "imported_from": 3})
    empty = RunRecord()
    for name in ("labels", "best_step", "train", "command", "seed", "sizes", "history", "imported_from"):
        assert getattr(record, name) == getattr(empty, name), name
    assert RunRecord({"train": {"seed": 7, "sizes": [3, 2, 1], "command": "x"}}).seed == 7
    assert RunRecord({"train": {"sizes": [3, "2"]}}).sizes is None
    assert RunRecord({"train": {"sizes": [3, 2]}}).sizes == (3, 2)
    assert RunRecord({"best_step": 12}).best_step == 12
