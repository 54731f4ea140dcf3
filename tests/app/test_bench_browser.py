"""The browser benchmark's pure parts: its statistics, its verdicts, and the log lines it counts
(the format ``app.resources`` writes them in and ``bench.browser_page`` reads them back)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from app import resources
from bench import browser
from bench.browser_page import events_in
from bench.browser_serve import LOG_FORMAT


@pytest.mark.parametrize("samples", [[5.0, 1.0, 3.0, 2.0, 4.0], list(np.linspace(10, 400, 24)), [7.0, 7.0]])
def test_p95_interpolates_like_numpy(samples):
    assert browser.p95(samples) == pytest.approx(np.percentile(samples, 95))


def test_p95_of_one_sample_is_that_sample():
    assert browser.p95([42.0]) == 42.0


def test_goal_row_takes_the_medians_and_holds_them_to_the_ratio_and_the_condition():
    row = browser.goal_row("edit", [300.0, 100.0, 200.0], [150.0, 170.0, 160.0])
    assert (row.measured, row.baseline, row.ok) == (200.0, 160.0, True)
    assert row.ratio == pytest.approx(200 / 160) and row.goal == "≤ 1.3× bare page"
    assert browser.goal_row("edit", [300.0, 100.0, 200.0], [60.0]).ok is False  # 3.3× the bare page
    assert browser.goal_row("move", [100.0], [90.0], holds=False).ok is False  # e.g. a model ran
    assert browser.goal_row("x", [199.0], [100.0], limit=2.0).ok is True


def test_the_sentences_of_a_run_differ_so_each_is_a_new_model_run():
    used = [browser.sentence(i) for i in [*range(100, 100 + browser.EDITS), *range(300, 300 + browser.SESSIONS),
                                           *range(400, 400 + browser.ROUNDS * browser.SESSIONS),
                                           *range(browser.BURST_FIRST, browser.BURST_FIRST + browser.SESSIONS),
                                           *range(browser.BURST_FIRST + 10,
                                                  browser.BURST_FIRST + 10 + browser.ROUNDS * browser.SESSIONS),
                                           *range(browser.PACED_FIRST, browser.PACED_FIRST + browser.SESSIONS),
                                           *range(browser.PACED_FIRST + 10,
                                                  browser.PACED_FIRST + 10 + browser.PACED_ROUNDS * browser.SESSIONS)]]
    assert len(set(used)) == len(used)


def test_the_counted_lines_are_the_ones_app_resources_logs(caplog):
    formatter = logging.Formatter(LOG_FORMAT)
    with caplog.at_level(logging.INFO, logger=resources.log.name):
        resources._count("loaded", "translation.safetensors")
        resources._count("run", "explain")
        resources._count("run", "batch")
    log = "\n".join(formatter.format(record) for record in caplog.records)
    assert events_in(log, "loaded") == ["translation.safetensors"]
    assert events_in(log, "run") == ["explain", "batch"]
    assert events_in("streamlit model loaded: elsewhere.safetensors", "loaded") == []
