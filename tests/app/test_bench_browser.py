"""The browser benchmark's pure parts: its statistics, its verdicts, and the log lines it counts
(the format ``app.resources`` writes them in and ``bench.browser_page`` reads them back)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.testing.v1 import AppTest

from app import resources
from bench import browser, browser_floor
from bench.browser_page import events_in
from bench.browser_serve import LOG_FORMAT
from tests.helpers.paths import ROOT

BARE_PAGE = str(ROOT / browser.BASE)


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
                                                  browser.PACED_FIRST + 10 + browser.PACED_ROUNDS * browser.SESSIONS),
                                           *range(browser_floor.FIRST - 1, browser_floor.FIRST + browser_floor.ROUNDS)]]
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


def _frame(kind: str) -> bytes:
    message = ForwardMsg()
    if kind == "element":
        message.delta.new_element.markdown.body = "a line"
    elif kind == "container":
        message.delta.add_block.vertical.SetInParent()
    elif kind == "cached":  # a large element sent before: the browser draws it from its cache
        message.ref_hash = "a1b2"
    elif kind == "finished":
        message.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    else:
        message.session_status_changed.script_is_running = True
    return message.SerializeToString()


def test_the_floor_counts_the_elements_and_containers_a_rerun_sends_not_its_start_and_end():
    frames = [_frame(k) for k in ("status", "container", "element", "cached", "element", "finished", "status")]
    assert browser_floor.deltas_in(frames) == 4
    assert browser_floor.deltas_in([]) == 0


def _elements(at: AppTest) -> list[str]:
    """Every element of the bare page but its chart, as (kind, what it shows)."""
    return [f"caption:{e.value}" for e in at.caption] + [f"markdown:{e.value}" for e in at.markdown] + \
        [f"checkbox:{e.label}" for e in at.checkbox]


def test_the_bare_page_sends_as_many_more_elements_as_asked_the_same_every_rerun():
    plain = AppTest.from_file(BARE_PAGE).run()
    floor = AppTest.from_file(BARE_PAGE)
    floor.query_params["extra"] = "7"
    floor.run()
    assert not plain.exception and not floor.exception
    added = _elements(floor)
    assert len(added) == len(_elements(plain)) + 7 and len(floor.get("plotly_chart")) == 1
    assert [kind.split(":")[0] for kind in added].count("checkbox") == 2  # captions, Markdown, checkboxes in turn
    floor.text_area(key="text").set_value("another text").run()
    assert _elements(floor) == added  # unchanged: only the chart differs from one rerun to the next
