"""A class asking for one input at once shares one forward pass: the app's result cache (``app.resources``, keyed by
model, text and options) runs the model once for sessions that miss it together, and every session gets that run's
result (issue 47: a class following its teacher to a new sentence on a process that has not seen it)."""

from __future__ import annotations

import threading
import time

from app import resources


def test_sessions_missing_one_key_at_once_share_one_run(monkeypatch):
    monkeypatch.setattr(resources, "session", lambda: threading.current_thread().name)  # one session a thread
    resources.results().clear()
    runs, got, start = [], {}, threading.Barrier(12)

    def compute():
        runs.append(threading.current_thread().name)
        time.sleep(0.3)  # a forward pass: long enough for every session to miss the cache meanwhile
        return {"answer": object()}

    def one_session(index: int) -> None:
        start.wait()
        got[index] = resources.cached(("explain", "model.safetensors", "sha", "I have cats", "{}"), compute,
                                      "Running the model…")

    sessions = [threading.Thread(target=one_session, args=(i,), name=f"session-{i}") for i in range(12)]
    for thread in sessions:
        thread.start()
    for thread in sessions:
        thread.join(timeout=30)
    assert len(runs) == 1
    assert len(got) == 12 and len({id(v["answer"]) for v in got.values()}) == 1
    assert resources._FLIGHTS == {}  # nothing left behind
    resources.results().clear()
