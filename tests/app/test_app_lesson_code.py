"""The code beside each Lesson stage (app/views/parts/lesson_code.py) under AppTest: a stage's folded "The code"
opens on the paper model's own source of that step with where it lives; every stage of every track has its code,
but for the three that cannot (the families' own positions, the encoder-only track's use, sampling's own)."""

from __future__ import annotations

import pytest

from app.views.lesson import STAGES
from app.views.parts import lesson_code, lesson_tracks
from core import lessons
from tests.helpers.apptest_helpers import open_page

WITHOUT = {"Embeddings + positions", "What the encoder output is used for", "Sampling instead of greedy"}
NAMES = [name for name, _ in STAGES]


def test_every_stage_of_every_track_has_its_code():
    titles = {stage.title for track in lesson_tracks.TRACKS.values() for stage in track}
    assert titles - set(lesson_code.STEP_OF) == WITHOUT
    assert set(lesson_code.STEP_OF.values()) == set(lessons.CODE_STEPS)  # and no step is left unshown


@pytest.mark.parametrize(("stage", "step"), [("Softmax", "attention"), ("Add & Norm", "add_norm")])
def test_a_stage_opens_on_its_steps_source(runs, stage, step):
    at = open_page("lesson", state={"lesson_ask": False, "lesson_stage": NAMES.index(stage)}, timeout=60)
    code = lessons.implementation(step)
    (box,) = [e for e in at.expander if code.name in e.label]
    assert code.annotated in box.label and not at.code  # folded: no source sent
    at.session_state[f"lesson_code_{step}"] = True
    at.run()
    assert not at.exception
    assert [c.value.rstrip() for c in at.code] == [code.source.rstrip()]
    assert any(f"{code.path}, from line {code.line}" in c.value for c in at.caption)
