"""Learn pages under AppTest (issue 23): a widget that does not touch a model run or a timing
experiment draws them from the cache; one that touches them runs them once per new input."""

from __future__ import annotations

from collections import Counter

import pytest

import core
from app import resources
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import REVERSE

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


# ----------------------------------------------------------------------------- every Learn page's main control
@pytest.fixture
def runs_made(monkeypatch: pytest.MonkeyPatch):
    """The model runs the app makes (``resources.MODEL_EVENTS["run"]``, what the browser benchmark counts),
    and the calls of the playground's projection with the learned weights, from here on."""
    calls: Counter = Counter()
    real = core.lessons.model_projection

    def projection(*args, **kwargs):
        calls["projection"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(core.lessons, "model_projection", projection)
    start = resources.MODEL_EVENTS["run"]
    return lambda: {"run": resources.MODEL_EVENTS["run"] - start, **calls}


def test_the_playgrounds_controls_never_rerun_the_models_projection(runs_made):
    at = open_page("playground", ckpt="shipped:translation")
    assert runs_made()["projection"] == 1  # section 5 projects the sentences with the learned weights once
    made = runs_made()
    at.slider(key="pg_beta").set_value(4.0).run()  # the main control: β of section 1
    at.toggle(key="pg_hard").set_value(True).run()
    at.select_slider(key="pg_dims").set_value((4, 64)).run()
    at.number_input(key="pg_seed").set_value(7).run()
    assert runs_made() == made and not at.exception
    at.selectbox(key="pg_qkv_head").set_value(1).run()  # the control that does touch it: one projection more
    assert runs_made()["projection"] == made["projection"] + 1 and runs_made()["run"] == made["run"] + 1


@pytest.mark.parametrize("page, moves", [
    ("masks", [("slider", "mask_len", 12), ("number_input", "mask_seed", 3)]),
    ("architecture", [("slider", "ffn_tokens", 9), ("slider", "norm_batch", 5), ("radio", "arch_norm", "pre")]),
], ids=["masks", "architecture"])
def test_a_learn_pages_main_control_runs_no_model(runs_made, page, moves):
    at = open_page(page, ckpt="shipped:translation")
    made = runs_made()
    for widget, key, value in moves:
        getattr(at, widget)(key=key).set_value(value).run()
        assert not at.exception, (key, [e.message for e in at.exception])
    assert runs_made() == made
