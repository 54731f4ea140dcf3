"""Explore is honest about what the model does not know: unknown words mark the output unreliable, and every
generated token is drawn as sure as the model was (issue 27)."""

from __future__ import annotations

import numpy as np

from tests.helpers.apptest_helpers import charts, is_plotly, open_page, plotly_array, spec
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
    (strip,) = [t for c in charts(at) if is_plotly(c) for t in spec(c)["data"] if t.get("name") == "probability"]
    keep = expected.token_probabilities > 0
    assert strip["type"] == "bar" and list(strip["customdata"]) == [t for t, k in zip(expected.generated_tokens, keep) if k]
    np.testing.assert_allclose(plotly_array(strip["y"]), expected.token_probabilities[keep], rtol=1e-6)
    unsure = expected.token_probabilities[keep] < confidence.UNSURE  # faint and orange where the model was unsure
    assert list(strip["marker"]["color"]) == [confidence.UNSURE_COLOR if u else confidence.SURE_COLOR for u in unsure]
    np.testing.assert_allclose(strip["marker"]["opacity"], 0.3 + 0.7 * expected.token_probabilities[keep], rtol=1e-6)


def test_the_strip_labels_every_token_of_a_short_output_and_thins_a_long_one():
    short = confidence.token_confidence(["el", "gato"], np.array([0.9, 0.2]))
    assert list(short.layout.xaxis.ticktext) == ["el", "gato"] and list(short.data[0].marker.color) == [
        confidence.SURE_COLOR, confidence.UNSURE_COLOR]
    long = confidence.token_confidence([f"t{i}" for i in range(60)], np.full(60, 0.8))
    assert len(long.layout.xaxis.ticktext) == 20 and len(long.data[0].x) == 60  # every 3rd labelled, all drawn


def test_the_unreliable_line_is_none_when_every_word_is_known():
    assert confidence.unreliable_message((), "<unk>") is None
    line = confidence.unreliable_message((("zebra", ("break",)), ("okapi", ())), "<unk>")
    assert line.startswith("Unreliable output") and "“okapi”" in line and "them as <unk>" in line
