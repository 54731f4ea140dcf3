"""The shipped checkpoints: they load, explain their examples, and meet their targets on held-out data."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import numpy as np
import pytest

from core import explain, get_task, load_checkpoint
from core.tasks import Example
from core.tasks.letters import ALPHABET
from core.tasks.names import HELD_OUT_NAMES, made_up_name
from core.tasks.wordlist import GRAMMAR_WORDS
from core.training.report import exact_match_by_bucket, sample, task_data
from core.training.evaluation import evaluate, unigram_perplexity

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"
TASKS = ("copy", "reverse", "sort", "dates", "addition", "translation", "sentiment", "lm")
# (split, metric, minimum) the issue asks of each shipped model on held-out data
TARGETS = {
    "copy": [("test", "exact_match", 0.99)],
    "reverse": [("test", "exact_match", 0.99)],
    "sort": [("test", "exact_match", 0.99)],
    "dates": [("test", "exact_match", 0.99)],
    "addition": [("test", "exact_match", 0.97)],
    "translation": [("test", "exact_match", 0.98)],  # everyday English (issue 27): 98.43 % measured (goal 97 %)
    "sentiment": [("test", "accuracy", 0.97), ("negation", "accuracy", 0.95), ("short", "accuracy", 0.95)],
}
MAX_TOTAL_BYTES = 30 * 1024 * 1024


@pytest.fixture(scope="module", params=TASKS)
def shipped(request):
    path = ASSETS / f"{request.param}.safetensors"
    return request.param, load_checkpoint(path)


def test_every_task_has_a_small_shipped_checkpoint():
    files = sorted(p.name for p in ASSETS.glob("*.safetensors"))
    assert files == sorted(f"{t}.safetensors" for t in TASKS)
    assert sum(p.stat().st_size for p in ASSETS.glob("*.safetensors")) < MAX_TOTAL_BYTES


def test_checkpoint_records_its_task_command_and_snapshots(shipped):
    task, ckpt = shipped
    extra = ckpt.info.extra
    assert ckpt.info.task == task
    # checkpoints trained before the CLI became `python -m core train` record the old spelling
    assert extra["train"]["command"].split(f" --task={task} ")[0] in ("python -m core train", "python -m core.train")
    assert extra["snapshots"]["steps"][0] == 0 and len(extra["snapshots"]["steps"]) >= 5
    assert extra["history"], "training history is recorded"
    assert ckpt.info.probe, "the behaviour probe is recorded (and was re-run when it loaded)"


def test_examples_explain_with_finite_attention(shipped):
    task, ckpt = shipped
    for text in get_task(task).examples:
        result = explain(ckpt, text)
        for maps in result.attention.values():
            assert np.isfinite(maps).all()
        assert result.prediction.text


def test_held_out_metrics_meet_the_targets_when_measured_again(shipped):
    task_name, ckpt = shipped
    task = get_task(task_name)
    recipe = ckpt.info.extra["train"]
    data = task.generate(recipe["seed"], tuple(recipe["sizes"]))
    splits = {"test": data.test, **data.extra_tests}
    if task_name == "lm":
        measured = evaluate(ckpt.model, ckpt.info.tokenizers, task, data.test)["perplexity"]
        baseline = unigram_perplexity(ckpt.target_tokenizer, data.train, data.test)
        assert measured < 0.5 * baseline, f"perplexity {measured:.2f} vs unigram {baseline:.2f}"
        return
    for split, metric, minimum in TARGETS[task_name]:
        measured = evaluate(ckpt.model, ckpt.info.tokenizers, task, splits[split])[metric]
        assert measured >= minimum, f"{task_name} {split} {metric} = {measured:.4f} < {minimum}"
        recorded = ckpt.info.metrics["test" if split == "test" else f"test_{split}"][metric]
        assert measured == pytest.approx(recorded, abs=1e-9)


SEQUENCE_TASKS = ("copy", "reverse", "sort", "dates", "addition", "translation")
BEAM_SAMPLE = 64  # held-out examples per task: enough to catch a broken beam, small enough for CI


@pytest.mark.parametrize("task_name", SEQUENCE_TASKS)
@pytest.mark.parametrize("budget", ["max_len", "tight"])
def test_beam_search_is_at_least_as_good_as_greedy_on_held_out_data(task_name, budget):
    ckpt = load_checkpoint(ASSETS / f"{task_name}.safetensors")
    _, data = task_data(ckpt)
    examples = sample(data.test, BEAM_SAMPLE)
    # "tight": just enough tokens for the longest target and its <eos>, the budget that once made
    # beam search answer with empty finished hypotheses
    tokens = None if budget == "max_len" else 1 + max(len(ckpt.target_tokenizer.encode(e.target)) for e in examples)
    greedy = exact_match_by_bucket(ckpt, examples, max_new_tokens=tokens)["all"]
    beam = exact_match_by_bucket(ckpt, examples, decoding="beam", beam_size=4, max_new_tokens=tokens)["all"]
    assert beam[0] >= greedy[0], f"{task_name}: beam {beam} < greedy {greedy}"
    # translation: 98.43 % beam on the whole split
    assert beam[0] >= (0.9 if task_name == "translation" else 0.95) * len(examples)


# ---------------------------------------------------------------- per bucket (issue 12)
# (task, bucket, minimum exact match) on bounded samples of the held-out test split; the full
# figures per bucket: `python -m core report assets/checkpoints/*.safetensors`
BUCKET_SAMPLE = {"translation": 600, "dates": 2000}
BUCKET_TARGETS = {
    # full split, greedy = beam: 99.87 / 98.67 / 99.07 / 96.13 % (python -m core report)
    "translation": {"2-4": 0.96, "5-7": 0.94, "8-11": 0.95, "12+": 0.90},
    "dates": {f"{year}s": 0.99 for year in range(1900, 2100, 10)},
}


def _balanced_sample(examples, bucket, n):
    per = {}
    for e in examples:
        per.setdefault(bucket(e), []).append(e)
    return [e for group in per.values() for e in sample(group, n // len(per))]


@pytest.mark.parametrize("task_name", list(BUCKET_TARGETS))
def test_every_bucket_meets_its_target(task_name):
    from core.training.report import bucket_function

    ckpt = load_checkpoint(ASSETS / f"{task_name}.safetensors")
    task, data = task_data(ckpt)
    bucket = bucket_function(task)
    measured = exact_match_by_bucket(ckpt, _balanced_sample(data.test, bucket, BUCKET_SAMPLE[task_name]))
    for name, minimum in BUCKET_TARGETS[task_name].items():
        hits, total = measured[name]
        assert total >= 20 and hits / total >= minimum, f"{task_name} {name}: {hits}/{total} < {minimum}"


# exact match on all 156 one- and two-letter strings; sort's training split repeats them (core/tasks/sort.py),
# which fixed its doubled single letters ("b" -> "bb"; measured now: 155/156, every single letter right)
SHORT_STRINGS = {"copy": 1.0, "reverse": 1.0, "sort": 0.99}


def _every_string(length: int) -> list[str]:
    return ["".join(chars) for chars in itertools.product(ALPHABET, repeat=length)]


def test_letter_models_are_exact_within_their_trained_lengths_and_report_beyond():
    for name in ("copy", "reverse", "sort"):
        ckpt = load_checkpoint(ASSETS / f"{name}.safetensors")
        task, data = task_data(ckpt)
        shortest, longest = task.trained_lengths
        transform = task.make.args[0]  # the letter task's copy / reverse / sort function
        inside = exact_match_by_bucket(ckpt, sample(data.test, 200))["all"]
        assert inside[0] >= 0.97 * inside[1], (name, inside)
        # what a class types: every one- and two-letter string (nearly all are in training) ...
        short = [Example(s, transform(s)) for n in (shortest, shortest + 1) for s in _every_string(n)]
        hits, total = exact_match_by_bucket(ckpt, short)["all"]
        assert hits >= SHORT_STRINGS[name] * total, (name, hits, total)
        singles = [Example(s, transform(s)) for s in ALPHABET]
        assert exact_match_by_bucket(ckpt, singles)["all"] == (len(ALPHABET), len(ALPHABET)), name
        # ... and the longest trained length, held out
        longest_held_out = [e for e in data.test if len(e.source) == longest]
        hits, total = exact_match_by_bucket(ckpt, longest_held_out)["all"]
        assert total >= 15 and hits >= 0.9 * total, (name, hits, total)
        # the report reaches twice the longest length, with <bos> and <eos>; the app warns past `longest`
        assert ckpt.config.max_len >= 2 * longest + 2


# ---------------------------------------------------------------- what a class types
LECTURE = {
    "I have cats": "yo tengo gatos",
    "the black cat": "el gato negro",
    "the animal didn't cross the street": "el animal no cruzó la calle",
    "the animal does not cross the street": "el animal no cruza la calle",
    "the red car is fast": "el coche rojo es rápido",
    "The big dog sees a small cat": "el perro grande ve un gato pequeño",
    "do you have my keys?": "¿ tú tienes mis llaves ?",
    "she is tired": "ella está cansada",
    "we don't want three green apples": "nosotros no queremos tres manzanas verdes",
    "where are the books?": "¿ dónde están los libros ?",
}


def test_the_translation_model_translates_what_a_class_types():
    ckpt = load_checkpoint(ASSETS / "translation.safetensors")
    task = get_task("translation")
    for typed, spanish in LECTURE.items():
        text, _ = task.normalize_input(typed)
        for decoding in ("greedy", "beam"):
            assert explain(ckpt, text, decoding=decoding).prediction.text == spanish, (typed, decoding)


# ---------------------------------------------------------------- names, digits, everyday English (issue 27)
EVERYDAY = {  # twelve sentences written before looking at the model's vocabulary, with their Spanish
    "My mother reads a book every night.": "mi madre lee un libro todas las noches .",
    "Maria has two dogs and three cats.": "maria tiene dos perros y tres gatos .",
    "It's very cold today.": "hace mucho frío hoy .",
    "I have 3 cats": "yo tengo 3 gatos",
    "We will go to the park tomorrow.": "nosotros iremos al parque mañana .",
    "Please open the door.": "por favor abre la puerta .",
    "My brother likes to play football.": "a mi hermano le gusta jugar al fútbol .",
    "The teacher writes on the board.": "el profesor escribe en la pizarra .",  # "on" + place: not in the grammar
    "I want water because I am thirsty.": "yo quiero agua porque yo tengo sed .",
    "They live in a big house.": "ellos viven en una casa grande .",
    "Today is Monday.": "hoy es lunes .",
    "She is my friend and she is very happy.": "ella es mi amiga y ella está muy contenta .",
}
# measured on the shipped checkpoint, greedy = beam (docs/models.md lists all twelve outputs): 12 of 12
EVERYDAY_RIGHT = list(EVERYDAY)


def test_everyday_sentences_translate():
    ckpt = load_checkpoint(ASSETS / "translation.safetensors")
    task = get_task("translation")
    right = [typed for typed, spanish in EVERYDAY.items()
             if explain(ckpt, task.normalize_input(typed)[0]).prediction.text == spanish]
    assert right == EVERYDAY_RIGHT


def test_unseen_names_are_copied_through():
    """Names the model never saw (the held-out first names, and made-up ones from a seed the data does not
    use) are copied letter by letter."""
    ckpt = load_checkpoint(ASSETS / "translation.safetensors")
    rng = random.Random(2027)
    made_up = [name for name in (made_up_name(rng) for _ in range(40)) if name not in GRAMMAR_WORDS][:20]
    names = sorted(HELD_OUT_NAMES - GRAMMAR_WORDS) + made_up
    missed = [name for name in names
              if explain(ckpt, f"{name} has two dogs").prediction.text != f"{name} tiene dos perros"]
    assert len(names) == 39 and missed == []  # measured: every one of the 39


def test_numbers_are_copied_and_a_doubled_digit_is_the_known_miss():
    """A hundred numbers of each of two, three and four digits: every one without two equal neighbouring
    digits is copied digit by digit; one with them is sometimes written with the digit once ("488" → "48"),
    which the README states."""
    ckpt = load_checkpoint(ASSETS / "translation.safetensors")
    rng = random.Random(2027)
    numbers = [str(rng.randint(10 ** (n - 1), 10 ** n - 1)) for n in (2, 3, 4) for _ in range(100)]
    copied = {k: explain(ckpt, f"i have {k} cats").prediction.text == f"yo tengo {k} gatos" for k in numbers}
    doubled = [k for k in numbers if re.search(r"(\d)\1", k)]
    assert [k for k in numbers if k not in doubled and not copied[k]] == []  # measured: 247 of 247
    # measured: 44 of the 53 with a doubled digit (the earlier CPU-trained model: 43)
    assert len(doubled) == 53 and sum(copied[k] for k in doubled) >= 44


@pytest.mark.parametrize(("english", "noun", "adjective", "spanish"), [
    ("the black cat", "cat", "black", "el gato negro"),
    ("the red car", "car", "red", "el coche rojo"),
    ("my green apples", "apples", "green", "mis manzanas verdes"),
])
def test_cross_attention_shows_the_adjective_noun_swap(english, noun, adjective, spanish):
    # Spanish writes the noun first: in the last layer (mean over heads) the row after "el" (which
    # predicts the noun) looks at the English noun, and the row after the noun (which predicts the
    # adjective) looks back at the English adjective
    ckpt = load_checkpoint(ASSETS / "translation.safetensors")
    result = explain(ckpt, english)
    assert result.prediction.text == spanish
    keys = list(result.source_tokens)
    last = result.attention["cross"][-1].mean(axis=0)  # (Tq, Tk)
    assert result.generated_tokens[1:3] == tuple(spanish.split()[1:3])  # rows 1 and 2 predict noun, adjective
    assert keys[int(last[1].argmax())] == noun
    assert keys[int(last[2].argmax())] == adjective
