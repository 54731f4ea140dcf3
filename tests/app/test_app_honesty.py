"""Explore is honest about what the model does not know: unknown words mark the output unreliable, and every
generated token is shown with the probability the model gave it (issue 27)."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np

from tests.helpers.apptest_helpers import charts, is_plotly, open_page, spec
from app.charts import confidence
from app.ui import widgets
from core import explain, get_task
from core.tasks.wordlist import english_word_count
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


class _Tokens(HTMLParser):
    """The tokens of a confidence row: each token's text, hover, bar width, bar colour and printed value."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[dict] = []
        self.inside: str | None = None  # the class of the span whose text is being read

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        if attrs.get("class") == "token":
            self.tokens.append({"title": attrs["title"], "text": "", "value": ""})
        elif attrs.get("class") in ("text", "value"):
            self.inside = attrs["class"]
        elif tag == "span" and "style" in attrs and self.tokens:
            style = dict(part.split(": ") for part in attrs["style"].split("; "))
            self.tokens[-1].update(width=style["width"], colour=style["background"])

    def handle_endtag(self, tag: str) -> None:
        self.inside = None

    def handle_data(self, data: str) -> None:
        if self.inside and self.tokens:
            self.tokens[-1][self.inside] += data


def _confidence_row(html: str) -> list[dict]:
    parser = _Tokens()
    parser.feed(html)
    return parser.tokens


def test_every_generated_token_is_shown_with_its_probability():
    at = _explore("the black cat")
    expected = explain(TRANSLATION, "the black cat")
    assert not [w.value for w in at.warning if "Unreliable" in w.value]
    (row,) = [h.proto.body for h in at.get("html") if confidence.CLASS in h.proto.body]
    keep = expected.token_probabilities > 0  # the end and padding left out
    probs = expected.token_probabilities[keep]
    tokens = _confidence_row(row)
    assert [t["text"] for t in tokens] == [g for g, k in zip(expected.generated_tokens, keep) if k]
    assert [t["width"] for t in tokens] == [f"{p:.1%}" for p in probs]  # the bar as long as the probability
    assert [t["value"] for t in tokens] == [f"{p:.0%}" for p in probs]
    assert [t["title"] for t in tokens] == [f"{t['text']}: {p:.1%}" for t, p in zip(tokens, probs)]
    unsure = probs < confidence.UNSURE  # vermillion where the model was unsure
    assert [t["colour"] for t in tokens] == [confidence.UNSURE_COLOR if u else confidence.SURE_COLOR for u in unsure]
    assert not [c for c in charts(at) if is_plotly(c) and any(t.get("type") == "bar" for t in spec(c)["data"])]


def test_the_confidence_row_escapes_tokens_and_shows_whitespace():
    tokens = _confidence_row(confidence.token_confidence(["<b>el</b>", " ", "gato"], np.array([0.9, 0.6, 0.2])))
    assert [t["text"] for t in tokens] == ["<b>el</b>", "␣", "gato"]  # markup shown as text, a space made visible
    assert [t["colour"] for t in tokens] == [confidence.SURE_COLOR, confidence.SURE_COLOR, confidence.UNSURE_COLOR]
    assert [t["value"] for t in tokens] == ["90%", "60%", "20%"]
    assert "<b>" not in confidence.token_confidence(["<b>el</b>"], np.array([0.9]))
    assert len(_confidence_row(confidence.token_confidence([f"t{i}" for i in range(60)], np.full(60, 0.8)))) == 60


def test_the_unreliable_line_is_none_when_every_word_is_known():
    assert confidence.unreliable_message((), "<unk>") is None
    line = confidence.unreliable_message((("zebra", ("break",)), ("okapi", ())), "<unk>")
    assert line.startswith("Unreliable output") and "“okapi”" in line and "them as <unk>" in line


def test_a_dropped_phrase_is_marked_not_translated_and_the_output_less_reliable():
    at = _explore("Yesterday I went to the market with my mother.")
    (flag,) = [w.value for w in at.warning if w.value.startswith("Not translated?")]
    assert "“with”, “my”, “mother”" in flag and "0.26" in flag
    assert any(c.value == "Generated output (less reliable: see below)" for c in at.caption)


def test_a_fully_translated_sentence_is_not_flagged():
    at = _explore("the big dog sees a small cat")
    assert not [w.value for w in at.warning if w.value.startswith("Not translated?")]
    assert any(c.value == "Generated output" for c in at.caption)


def test_the_note_under_the_output_names_the_model_for_what_it_is():
    at = _explore("the black cat")
    scope = [c.value for c in at.caption if "A classroom model trained on a generated grammar" in c.value]
    assert scope == [widgets.plain(get_task("translation").scope)]
    assert f"of {english_word_count():,} English words" in scope[0]
