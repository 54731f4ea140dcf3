"""``python -m bench`` appends each run to the benchmark record: its date, command, machine, load and table."""

from __future__ import annotations

import bench.__main__ as bench_main
from bench.table import Row


def test_a_run_is_appended_with_its_machine_load_and_table(tmp_path, monkeypatch, capsys):
    record = tmp_path / "RESULTS.md"
    monkeypatch.setenv("ATTNSCOPE_BENCH_RESULTS", str(record))
    monkeypatch.setitem(bench_main.SECTIONS, "inference", lambda: [Row("inference", "a row", "≤ 2×", 3.0, "ms", 2.0)])
    assert bench_main.main(["inference"]) == 0
    assert bench_main.main(["inference"]) == 0
    text = record.read_text()
    assert text.startswith("# Benchmark record") and text.count("`python -m bench inference`") == 2
    assert "Load average (1 / 5 / 15 min)" in text and "Machine:" in text and text.count("| a row |") == 2
    assert "| a row |" in capsys.readouterr().out
    bench_main.main(["inference", "--no-record"])
    assert record.read_text() == text
