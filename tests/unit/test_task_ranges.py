"""Every task says when an input lies outside the domain its generator draws from (issue 24): dates and
addition from their own definitions, every generated example inside, the explain pipeline's notes carry it."""

from __future__ import annotations

import random

import pytest

from core import TASKS
from core.tasks import out_of_range
from core.inspect.explainer import explain
from core.io.checkpoint import load, save
from tests.helpers.tiny import tiny_model


@pytest.mark.parametrize("name", ["dates", "addition"])
def test_every_generated_example_and_shipped_example_is_in_range(name):
    task = TASKS[name]
    drawn = task.make(random.Random(7), 3000)
    assert [e.source for e in drawn if out_of_range(name, e.source)] == []
    assert [text for text in (*task.examples, task.probe) if out_of_range(name, text)] == []


@pytest.mark.parametrize(("text", "words"), [
    ("2/29/2000", "no month 29"),  # month-first: the example, read day first
    ("29/2/2001", "no day 29"),  # not a leap year
    ("31 April 2020", "no day 31"),
    ("5 March 1850", "1900-2099"),
    ("1/1/2100", "1900-2099"),
    ("next tuesday", "does not read as"),
])
def test_dates_out_of_range_say_why(text, words):
    assert words in (out_of_range("dates", text) or "")


@pytest.mark.parametrize("text", ["29/2/2000", "Mar 5, 49", "Tuesday, 14 July 1925", "1999/12/31", "31.12.99"])
def test_dates_in_range(text):
    assert out_of_range("dates", text) is None


@pytest.mark.parametrize(("text", "words"), [("1234+1", "more than 3 digits"), ("7+1000", "more than 3 digits"),
                                             ("3-1", "joined by +"), ("1+2+3", "joined by +")])
def test_addition_out_of_range_says_why(text, words):
    assert words in (out_of_range("addition", text) or "")


def test_tasks_without_a_domain_and_unknown_tasks_say_nothing():
    assert out_of_range("reverse", "anything at all") is None
    assert out_of_range("no such task", "1234+1") is None
    assert out_of_range(None, "1234+1") is None


@pytest.mark.parametrize(("task", "text", "expected"), [("addition", "1234+1", True), ("addition", "12+34", False),
                                                        ("dates", "2/29/2000", True), ("dates", "5/3/2021", False)])
def test_explain_notes_carry_the_range_warning(tmp_path, char_tokenizer, task, text, expected):
    model = tiny_model("encoder-decoder", vocab=char_tokenizer.vocab_size)
    path = tmp_path / f"{task}.safetensors"
    save(path, model, {"source": char_tokenizer, "target": char_tokenizer}, task=task)
    notes = explain(load(path), text).notes
    assert any(out_of_range(task, text) == note for note in notes) is expected
