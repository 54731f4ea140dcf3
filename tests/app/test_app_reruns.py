"""Learn pages under AppTest (issue 23): a widget that does not touch a model run or a timing
experiment draws them from the cache; one that touches them runs them once per new input."""

from __future__ import annotations

from collections import Counter

import pytest

import core
from app import resources
from tests.helpers.apptest_helpers import REVERSE, open_page

pytestmark = pytest.mark.skipif(not REVERSE.exists(), reason="the shipped reverse checkpoint is missing")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Calls of the self-attention page's model run and timing experiment, and of the Positional page's
    embedding read, behind emptied caches."""
    calls: Counter = Counter()

    def spy(name, real):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(core.lessons, "permutation_demo", spy("permutation", core.lessons.permutation_demo))
    monkeypatch.setattr(core.lessons, "model_encoding", spy("encoding", core.lessons.model_encoding))
    monkeypatch.setattr(core.lessons, "attention_cost", spy("timing", core.lessons.attention_cost))
    resources.explanation.clear()
    resources.attention_timing.clear()
    yield calls
    resources.attention_timing.clear()


def test_the_self_attention_page_reruns_only_what_a_control_touches(counted):
    at = open_page("self-attention", ckpt="shipped:reverse", query={"cc_max": "128"})
    first = dict(counted)
    assert first["permutation"] == 1 and first["timing"] == 2  # the warm-up call, then the measurement
    at.select_slider(key="cc_max").set_value(64).run()  # the timing experiment's lengths: it runs again
    assert counted["permutation"] == 1 and counted["timing"] == 4
    at.toggle(key="cc_pos").set_value(True).run()  # the shuffle with positions: a new model run, no timing
    assert counted["permutation"] == 2 and counted["timing"] == 4
    at.toggle(key="cc_pos").set_value(False).run()  # back: both from the cache
    at.select_slider(key="cc_max").set_value(128).run()
    assert counted["permutation"] == 2 and counted["timing"] == 4 and not at.exception


def test_the_positional_pages_sliders_do_not_reread_the_model(counted):
    at = open_page("positional", ckpt="shipped:reverse")
    reads = counted["encoding"]
    assert reads == 1
    at.slider(key="pe_len").set_value(12).run()
    at.slider(key="pe_dim").set_value(64).run()
    assert counted["encoding"] == reads and not at.exception
    at.text_input(key="pe_text").input("abc").run()  # the text it reads: once more
    assert counted["encoding"] == reads + 1
