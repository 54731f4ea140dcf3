"""Explore is honest about what the model does not know: unknown words mark the output unreliable, and every
generated token is drawn as sure as the model was (issue 27)."""

from __future__ import annotations

import numpy as np

from tests.helpers.apptest_helpers import charts, frames, is_plotly, open_page
from app.charts import confidence
from core import explain
from tests.helpers.paths import SHIPPED

TRANSLATION = SHIPPED / "translation.safetensors"


def _explore(text: str):
    at = open_page("explore", ckpt="shipped:translation")
    at.text_area(key="text").input(text).run()
    assert not at.exception
    return at


def test_an_unknown_word_marks_the_output_unreliable_and_names_it():
    at = _explore("the zébra sleeps")  # "é" is outside the letters the model spells: one <unk>
    warnings = [w.value for w in at.warning]
    assert any("Unreliable output" in w and "“zébra”" in w and "<unk>" in w for w in warnings), warnings
    assert any("unreliable" in c.value for c in at.caption)


def test_every_generated_token_is_drawn_with_its_probability():
    at = _explore("the black cat")
    expected = explain(TRANSLATION, "the black cat")
    assert not [w.value for w in at.warning if "Unreliable" in w.value]
    data = next(f for c in charts(at) if not is_plotly(c) for f in frames(c) if {"token", "probability"} <= set(f))
    keep = expected.token_probabilities > 0
    assert list(data["token"]) == [t for t, k in zip(expected.generated_tokens, keep) if k]
    np.testing.assert_allclose(data["probability"], expected.token_probabilities[keep], rtol=1e-6)


def test_the_unreliable_line_is_none_when_every_word_is_known():
    assert confidence.unreliable_message((), "<unk>") is None
    line = confidence.unreliable_message((("zebra", ("break",)), ("okapi", ())), "<unk>")
    assert line.startswith("Unreliable output") and "“okapi”" in line and "them as <unk>" in line
