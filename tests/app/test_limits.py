"""app.services.limits: the byte-bounded result cache and the fair gate (issue 15 item 3), and the app's
decode budget. Concurrency is driven by events, never by sleeping and measuring."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import torch
import pytest

from app.services import costs
from app import resources
from app.services.limits import ByteLRU, Gate, OverBudget, freeze, size_of
from core import explain, load_checkpoint
from tests.helpers.paths import REVERSE

MB = 2**20


def block(mb: float) -> np.ndarray:
    return np.zeros(int(mb * MB), dtype=np.uint8)


def test_size_of_counts_array_buffers_inside_an_explanation():
    exp = explain(REVERSE, "abcdef")
    arrays = sum(a.nbytes for a in exp.attention.values())
    assert arrays <= size_of(exp) <= arrays + 64 * 1024
    assert size_of({"a": block(2)}) >= 2 * MB


def test_the_cache_is_bounded_in_bytes_and_evicts_the_least_recently_used():
    cache = ByteLRU(max_bytes=10 * MB, max_item_bytes=4 * MB)
    for i in range(3):
        assert cache.put(i, block(3))
    assert cache.get(0)[0]  # 0 is now the most recently used
    assert cache.put(3, block(3))  # 12 MB > 10 MB: the least recently used (1) goes
    assert [cache.get(i)[0] for i in range(4)] == [True, False, True, True]
    assert cache.total_bytes <= 10 * MB


def test_a_result_larger_than_the_item_limit_is_returned_but_never_kept():
    cache = ByteLRU(max_bytes=10 * MB, max_item_bytes=4 * MB)
    assert not cache.put("big", block(5))
    assert cache.get("big") == (False, None) and cache.total_bytes == 0 and len(cache) == 0


def test_cached_results_are_read_only():
    exp = freeze(explain(REVERSE, "abc"))
    with pytest.raises(ValueError):
        next(iter(exp.attention.values()))[0, 0, 0, 0] = 1.0


def held_gate(slots: int = 1, wait_s: float = 0.05, run_s: float = 30.0):
    """A gate whose slots are all held by a run of session "hostile" until ``release`` is set."""
    gate, started, release = Gate(slots, wait_s, run_s), threading.Event(), threading.Event()

    def hostile() -> str:
        started.set()
        release.wait()
        return "hostile done"

    threads = [threading.Thread(target=gate.run, args=(f"hostile-{i}", hostile)) for i in range(slots)]
    for thread in threads:
        thread.start()
    assert started.wait(10)
    return gate, release, threads


def test_a_session_waits_for_a_slot_only_within_its_budget():
    gate, release, threads = held_gate()
    with pytest.raises(OverBudget, match="busy with other sessions"):
        gate.run("victim", lambda: "never")
    release.set()
    for thread in threads:
        thread.join(10)
    assert gate.run("victim", lambda: 42) == 42 and gate.busy_sessions() == 0


def test_one_session_holds_at_most_one_slot():
    gate = Gate(slots=2, wait_s=5.0, run_s=30.0)
    started, release = threading.Event(), threading.Event()
    worker = threading.Thread(target=gate.run, args=("s1", lambda: started.set() or release.wait()))
    worker.start()
    assert started.wait(10)
    with pytest.raises(OverBudget, match="previous request is still running"):
        gate.run("s1", lambda: "second")
    assert gate.run("s2", lambda: "other session") == "other session"  # the free slot serves others
    release.set()
    worker.join(10)


def test_a_run_over_its_time_budget_stops_with_a_notice_and_frees_its_slot_when_done():
    gate, release = Gate(slots=1, wait_s=5.0, run_s=0.05), threading.Event()
    with pytest.raises(OverBudget, match="longer than the"):
        gate.run("slow", release.wait)
    with pytest.raises(OverBudget, match="previous request"):  # still running in the background
        gate.run("slow", lambda: 1)
    release.set()
    gate._free.acquire(timeout=10)  # the background run gives its slot back
    gate._free.release()
    assert gate.run("slow", lambda: 7) == 7


def test_errors_reach_the_session_and_release_the_slot():
    gate = Gate(slots=1, wait_s=1.0, run_s=30.0)
    with pytest.raises(ZeroDivisionError):
        gate.run("s", lambda: 1 / 0)
    assert gate.run("s", lambda: "ok") == "ok"


def test_generation_is_held_to_the_decode_budget_only_for_models_that_could_exceed_it():
    long = SimpleNamespace(config=SimpleNamespace(max_len=2048))
    short = SimpleNamespace(config=SimpleNamespace(max_len=64))
    assert costs.budgeted(long, {})["max_new_tokens"] == costs.DECODE_TOKENS
    assert costs.budgeted(long, {"max_new_tokens": 10})["max_new_tokens"] == 10
    assert costs.budgeted(long, {"max_new_tokens": 10**6})["max_new_tokens"] == costs.DECODE_TOKENS
    assert costs.budgeted(short, {}) == {}


def test_a_session_whose_run_was_long_rests_before_its_next_while_others_run(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("app.services.limits.time.monotonic", lambda: clock[0])
    gate = Gate(slots=2, wait_s=5.0, run_s=30.0, free_s=1.0)

    def long_run() -> str:
        clock[0] += 11.0  # the run "takes" 11 s on the fake clock
        return "done"

    assert gate.run("hog", long_run) == "done"
    assert gate.run("hog", lambda: 0) == 0  # nobody else is running: an idle server never refuses
    assert gate.run("hog", long_run) == "done"
    started, release = threading.Event(), threading.Event()
    polite = threading.Thread(target=gate.run, args=("polite", lambda: (started.set(), release.wait(5))))
    polite.start()
    assert started.wait(5)
    with pytest.raises(OverBudget, match="other sessions go first for 10 s more"):
        gate.run("hog", lambda: 1)
    release.set()
    polite.join(5)
    assert gate.run("hog", lambda: 2) == 2  # the other session is done: the rest no longer applies
    assert gate.run("polite", lambda: 3) == 3


# ----------------------------------------------------------------------------- fairness by cost (issue 28)
def test_large_model_runs_take_one_heavy_slot_and_cheap_requests_never_queue_behind_them():
    gate = Gate(slots=2, wait_s=0.05, run_s=30.0, heavy_cost=1e9)
    started, release = threading.Event(), threading.Event()
    big = threading.Thread(target=gate.run, args=("big-1", lambda: started.set() or release.wait(), 5e10))
    big.start()
    assert started.wait(10)
    with pytest.raises(OverBudget, match="large-model requests"):  # a second large run waits its turn
        gate.run("big-2", lambda: "never", 5e10)
    assert [gate.run(f"small-{i}", lambda i=i: i, 1e7) for i in range(3)] == [0, 1, 2]  # not queued
    release.set()
    big.join(10)
    assert gate.run("big-2", lambda: "now", 5e10) == "now"


def test_both_cheap_slots_full_do_not_block_a_large_run_and_cost_decides_the_lane():
    gate, release = Gate(slots=2, wait_s=0.05, run_s=30.0, heavy_cost=1e9), threading.Event()
    started = [threading.Event() for _ in range(2)]
    cheap = [threading.Thread(target=gate.run, args=(f"c{i}", lambda e=e: e.set() or release.wait(), 1.0))
             for i, e in enumerate(started)]
    for thread in cheap:
        thread.start()
    assert all(e.wait(10) for e in started)
    with pytest.raises(OverBudget, match="busy with other sessions' requests"):
        gate.run("c3", lambda: 0, 1.0)
    assert gate.run("big", lambda: "large", 1e9) == "large"
    assert gate.is_heavy(1e9) and not gate.is_heavy(1e9 - 1)
    release.set()
    for thread in cheap:
        thread.join(10)


def test_the_apps_cost_estimate_puts_the_shipped_models_in_the_cheap_lane_and_a_large_model_in_the_heavy_one():
    small = load_checkpoint(REVERSE)
    tokens = costs.tokens(small, "abcdef", {})
    assert costs.cost(small, tokens) == sum(p.numel() for p in small.model.parameters()) * tokens
    assert not resources.GATE.is_heavy(costs.cost(small, costs.tokens(small, "x" * 200, {})))
    large = torch.nn.Linear(4096, 4096, device="meta")  # 16.8 M parameters, nothing allocated
    assert resources.GATE.is_heavy(costs.cost(large, 64))


def test_an_upload_is_checked_through_the_gate_at_a_lower_priority_one_at_a_time_per_session():
    """``resources.gated_upload``: the check runs in the heavy lane at a lower priority, hands back its result or
    error, a session's second upload waits its turn, and another session's cheap run never waits for it."""
    import os

    gate = Gate(slots=2, wait_s=5, run_s=5, heavy_cost=10)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    assert resources.gated_upload(gate, "uploader", niceness) >= 10  # lowered (the caller ran at 0 or its own)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's own is untouched
    with pytest.raises(ZeroDivisionError):
        resources.gated_upload(gate, "uploader", lambda: 1 / 0)
    release = threading.Event()
    checking = threading.Thread(target=resources.gated_upload, args=(gate, "uploader", release.wait))
    checking.start()
    deadline = time.monotonic() + 5
    while gate.busy_sessions() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        with pytest.raises(OverBudget, match="still running"):
            resources.gated_upload(gate, "uploader", lambda: "second")
        assert gate.run("honest", lambda: "served", cost=1) == "served"  # the cheap lane is free
    finally:
        release.set()
        checking.join(10)
