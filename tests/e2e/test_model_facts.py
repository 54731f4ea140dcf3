"""The facts a worker process reports of the model it loaded (``core.inspect.facts``), and its idle end.

The facts cross as JSON and come back equal, every field type-checked (a field of the wrong type, an unknown
one or an unknown architecture is one ``ValueError``); an Attnscope checkpoint's header rebuilt from them is the
file's own (``read_info``) and goes through the same checks (a config over the budget is refused); a pretrained
model's shape is its config's. A worker left idle ends its child, still knows the facts, and the next run starts a
fresh child; the Checkpoints page's timeline from a worker is the in-process one.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from core import CheckpointError, ExplainWorker, lessons, load_checkpoint, load_pretrained, ModelFacts, read_info
from core.inspect.facts import facts_of
from core.lessons.worker import LessonWorker
from core.training import snapshot_timeline, timeline_parts
from tests.helpers.paths import REVERSE, SHIPPED
from tests.helpers.pretrained_files import write_tiny_gguf

TRANSLATION = SHIPPED / "translation.safetensors"


def test_a_checkpoints_facts_cross_as_json_and_rebuild_its_header():
    ckpt = load_checkpoint(TRANSLATION)
    facts = facts_of(ckpt, 7)
    again = ModelFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert again == facts and not again.pretrained and again.parameters == 7
    assert again.info == read_info(TRANSLATION) and again.config == ckpt.config
    assert again.source_tokenizer.to_json() == ckpt.source_tokenizer.to_json()
    assert dict(again.parameter_counts) == ckpt.model.parameter_counts()
    assert lessons.lesson_follows(again) == lessons.lesson_follows(ckpt) is True


def test_a_pretrained_models_facts_are_its_shape(tmp_path):
    write_tiny_gguf(tmp_path / "tiny.gguf")
    loaded = load_pretrained(tmp_path / "tiny.gguf", use_cache=False)
    facts = ModelFacts.from_json(json.loads(json.dumps(facts_of(loaded, 1).to_json())))
    assert facts.pretrained and facts.info is None and facts.source_tokenizer is None
    c = loaded.config
    assert (facts.config.architecture, facts.config.n_heads, facts.config.d_model, facts.config.n_decoder_layers,
            facts.config.max_len) == ("decoder", c.n_heads, c.d_model, c.n_decoder_layers, c.max_len)
    assert lessons.lesson_follows(facts)  # a decoder-only model has its own Lesson track


@pytest.mark.parametrize("change", [{"max_len": "80"}, {"parameters": True}, {"architecture": "tree"},
                                    {"surprise": 1}, {"spec": {"architecture": "decoder"}},
                                    {"header": [["config", 3]]}, {"parameter_counts": [["x"]]}])
def test_facts_of_the_wrong_shape_are_refused(change):
    good = facts_of(load_checkpoint(REVERSE), 1).to_json()
    with pytest.raises(ValueError, match="malformed"):
        ModelFacts.from_json({**good, **change})


def test_a_header_in_the_facts_goes_through_the_checks_reading_the_file_makes():
    facts = facts_of(load_checkpoint(REVERSE), 1).to_json()
    header = dict(facts["header"])
    config = json.loads(header["config"])
    header["config"] = json.dumps({**config, "max_len": 10**6})
    forged = ModelFacts.from_json({**facts, "header": list(header.items())})
    with pytest.raises(CheckpointError, match="max_len"):
        forged.info


def test_an_idle_worker_ends_its_child_keeps_its_facts_and_starts_again_when_asked():
    worker = ExplainWorker(REVERSE, idle_s=1.0)
    try:
        facts = worker.start()
        assert worker.pid is not None
        deadline = time.monotonic() + 30
        while worker.pid is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert worker.pid is None and worker.facts == facts and worker.starts == 1
        assert worker.explain("abc").prediction.text and worker.starts == 2
    finally:
        worker.close()


def test_the_timeline_from_a_worker_is_the_in_process_one():
    ckpt = load_checkpoint(SHIPPED / "copy.safetensors")
    want = snapshot_timeline(ckpt)
    assert timeline_parts(ckpt).timeline() == want  # equal in everything but the maps, compared next
    worker = LessonWorker(SHIPPED / "copy.safetensors")
    try:
        got = worker.lesson("timeline_parts").timeline()
    finally:
        worker.close()
    assert got == want and got.steps and set(got.stored) == set(want.stored)
    for key, maps in want.stored.items():
        assert np.array_equal(got.stored[key], maps) and got.stored[key].dtype == maps.dtype
