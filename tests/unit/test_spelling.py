"""Names and numbers a word vocabulary does not hold are spelled, so a translation model can copy them
(issue 27): the tokenizer's spelling, the translation task's vocabulary, and the grammar's agreement."""

from __future__ import annotations

import json
import random
import re

import pytest

from core.tasks import TASKS, translation
from core.tasks.activities import like, negative_command, person_predicate
from core.tasks.verbs import VERBS
from core.tasks.names import FIRST_NAMES, HELD_OUT_NAMES, TRAIN_NAMES
from core.tasks.phrases import clause, noun_phrase, predicate
from core.tasks.sentences import and_word, because_it
from core.tasks.wordlist import GRAMMAR_WORDS, spelled
from core.text.inputs import prepare, tokenize
from core.text.spelling import SPELL_ALPHABET
from core.text.tokenizer import UNK_ID, Tokenizer
from core.training.setup import build_tokenizers


def _spelling() -> Tokenizer:
    return Tokenizer.train("word", ["i have two cats .", "maria has 3 dogs"], spelled=lambda w: w.isdigit() or w == "maria")


def test_an_unknown_word_is_read_letter_by_letter_and_decoded_whole():
    tok = _spelling()
    enc = tok.encode("zorblat has 2024 cats")
    assert tok.token_strings(enc.ids) == ["z", "##o", "##r", "##b", "##l", "##a", "##t", "has", "2", "##0", "##2", "##4",
                                          "cats"]
    assert all(enc.tokens[i] == "zorblat has 2024 cats"[s:e] for i, (s, e) in enumerate(enc.offsets))
    assert [e - s for s, e in enc.offsets[:7]] == [1] * 7
    assert tok.decode(enc.ids) == "zorblat has 2024 cats"
    assert "maria" not in tok.token_strings(range(tok.vocab_size))  # kept out of the vocabulary: spelled
    assert tok.decode(tok.encode("maria has 3 dogs").ids) == "maria has 3 dogs"


def test_a_word_outside_the_alphabet_stays_unknown_and_plain_tokenizers_do_not_spell():
    tok = _spelling()
    assert tok.encode("niño has cats").ids[0] == UNK_ID  # "ñ" is not spelled
    plain = Tokenizer.train("word", ["i have two cats ."])
    assert plain.encode("zorblat has cats").ids[0] == UNK_ID
    assert "spell" not in json.loads(plain.to_json())  # old checkpoints' tokenizers read and write as before


def test_spelling_survives_json_and_is_checked():
    tok = _spelling()
    again = Tokenizer.from_json(tok.to_json())
    assert again == tok and again.spell == SPELL_ALPHABET
    assert again.encode("zorblat").ids == tok.encode("zorblat").ids
    spec = json.loads(tok.to_json())
    spec["spell"] = "abc\u00e9"  # "é" has no pieces in the vocabulary
    with pytest.raises(ValueError, match="spelled piece"):
        Tokenizer.from_json(json.dumps(spec))


def test_the_input_notes_name_the_spelled_words_but_not_numbers():
    item = prepare("zorblat has 3 cats")
    tokenize(item, _spelling(), 64)
    assert any("'zorblat'" in note and "letter by letter" in note for note in item.notes)
    assert not any("'3'" in note for note in item.notes) and item.unknown == []


def test_translation_vocabulary_holds_no_name_and_no_number():
    data = TASKS["translation"].generate(0, (3000, 10, 40))
    tokenizers = build_tokenizers(TASKS["translation"], data)
    for tok in tokenizers.values():
        vocabulary = set(tok.token_strings(range(tok.vocab_size)))
        assert not vocabulary & set(TRAIN_NAMES) - GRAMMAR_WORDS
        assert not any(w.isdigit() and len(w) > 1 for w in vocabulary)
        assert tok.decode(tok.encode("kofimbo 4071").ids) == "kofimbo 4071"
    names = {w for e in data.train for w in re.findall(r"\w+", e.source) if spelled(w) and not w.isdigit()}
    assert len(names) > 100 and not names & HELD_OUT_NAMES  # many names, none of the held-out ones
    assert any(re.search(r"\b\d+\b", e.source) for e in data.train)
    assert set(HELD_OUT_NAMES) < set(FIRST_NAMES) and not set(HELD_OUT_NAMES) & set(TRAIN_NAMES)


@pytest.mark.parametrize(("made", "expected"), [
    (lambda: clause("maria", "have", ("two", None, "dog", True)), ("maria has two dogs", "maria tiene dos perros")),
    (lambda: clause("i", "have", ("3", None, "cat", True)), ("i have 3 cats", "yo tengo 3 gatos")),
    (lambda: clause("we", "go", tense="future"), ("we will go", "nosotros iremos")),
    (lambda: clause("she", "read", ("a", None, "book", False), tense="progressive"),
     ("she is reading a book", "ella está leyendo un libro")),
    (lambda: clause("they", "help", ("the", None, "teacher", False), tense="going", negated=True, contracted=True),
     ("they aren't going to help the teacher", "ellos no van a ayudar al profesor")),
    (lambda: clause("i", "call", "jose", tense="past"), ("i called jose", "yo llamé a jose")),
    (lambda: noun_phrase(("the", "cold", "water", False)), ("the cold water", "el agua fría")),
    (lambda: noun_phrase(("twenty-two", "red", "house", True)), ("twenty-two red houses", "veintidós casas rojas")),
    (lambda: noun_phrase(("thirty five", None, "cat", True)), ("thirty five cats", "treinta y cinco gatos")),
    (lambda: predicate("she", "tired"), ("she is tired", "ella está cansada")),
    (lambda: like(random.Random(0), ("my brother", "mi hermano"), ("to play football", "jugar al fútbol", False),
                  "present", False), ("my brother likes to play football", "a mi hermano le gusta jugar al fútbol")),
    (lambda: like(random.Random(0), "she", ("cats", "los gatos", True), "present", True),
     ("she doesn't like cats", "a ella no le gustan los gatos")),
    (lambda: person_predicate("friend", "f", False, "my"), ("my friend", "mi amiga")),
    (lambda: person_predicate("teacher", "m", False, "a"), ("a teacher", "profesor")),
])
def test_the_grammar_agrees(made, expected):
    assert made() == expected


def test_small_rules_of_spelling_and_conjunction():
    assert [negative_command(VERBS[v]) for v in ("run", "cross", "play", "go", "hear")] == [
        "corras", "cruces", "juegues", "vayas", "oigas"]
    assert and_word("hijos") == "e" and and_word("hielo") == "y" and and_word("gatos") == "y"
    assert VERBS["have"].future[0] == "tendré" and VERBS["read"].gerund == "leyendo" and VERBS["run"].en_ing == "running"
    en, es, _ = because_it(random.Random(5))
    assert " because " in en and " porque " in es


def test_the_lecture_sentence_with_it_is_trained_on():
    data = TASKS["translation"].generate(0, (200, 10, 40))
    lecture = "the animal didn't cross the street because it was too tired"
    assert translation.Example(lecture, "el animal no cruzó la calle porque estaba demasiado cansado") in data.train
