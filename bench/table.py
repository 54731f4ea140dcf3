"""The benchmark table: one row per goal, timing helpers, and the printed table.

Every row carries the goal, the figure measured and, where there is one, the baseline measured
in the same run, so the ratio is never between two runs on a shared, noisy machine.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable, Iterable


@dataclass(frozen=True)
class Row:
    """One line of the table (``ratio`` = measured ÷ baseline)."""

    section: str
    what: str
    goal: str
    measured: float
    unit: str
    baseline: float | None = None
    ok: bool | None = None

    @property
    def ratio(self) -> float | None:
        return None if not self.baseline else self.measured / self.baseline


def median_ms(fn: Callable[[], object], repeats: int, warmup: int = 2,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time of ``fn`` in milliseconds by ``clock`` (wall time; ``time.process_time`` for CPU time)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        start = clock()
        fn()
        samples.append((clock() - start) * 1000)
    return statistics.median(samples)


def paired_ms(ours: Callable[[], object], theirs: Callable[[], object], repeats: int,
              clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """Medians (ms by ``clock``, as :func:`median_ms`) of two contenders timed in alternation, so load changes
    hit both alike."""
    ours(), theirs()
    a, b = [], []
    for _ in range(repeats):
        for fn, out in ((ours, a), (theirs, b)):
            start = clock()
            fn()
            out.append((clock() - start) * 1000)
    return statistics.median(a), statistics.median(b)


def _figure(value: float, unit: str) -> str:
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def markdown(rows: Iterable[Row]) -> str:
    """The table in Markdown, as the README shows it."""
    lines = ["| section | what | goal | measured | baseline (same run) | ratio | result |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        baseline = _figure(r.baseline, r.unit) if r.baseline else "—"
        ratio = f"{r.ratio:.2f}×" if r.ratio is not None else "—"
        result = {True: "pass", False: "short", None: "—"}[r.ok]
        lines.append(f"| {r.section} | {r.what} | {r.goal} | {_figure(r.measured, r.unit)} | {baseline} | {ratio} "
                     f"| {result} |")
    return "\n".join(lines)
