"""Translation task: English -> Spanish from a grammar of everyday English a class can type at.

The grammar (``wordlist.english_word_count()`` English words; nouns and adjectives in
:mod:`core.tasks.lexicon`, verbs and their conjugation in :mod:`core.tasks.verbs`, everyday words in
:mod:`core.tasks.everyday` and :mod:`core.tasks.activities`, sentences in
:mod:`core.tasks.sentences`; the sources of each agreement rule are in those modules) covers:

* noun phrases: ``the/a/one/some/this/that/these/those``, possessives ``my your his her our
  their``, numbers as words (two to a hundred) and as digits, bare plurals; at most one adjective,
  which Spanish puts after the noun, agreeing in gender and number ("the black cat" -> "el gato
  negro", "my red houses" -> "mis casas rojas", "el agua fría");
* subject pronouns (kept in Spanish, the lecture's convention: "i have cats" -> "yo tengo
  gatos"; "you" is ``tú``, "we" ``nosotros``, "they" ``ellos``; "i"/"you" agree in the masculine);
  names, copied through letter by letter ("maria has two dogs" -> "maria tiene dos perros");
* verbs in the present, past, future ("will" -> "leeré"), "going to" (-> "voy a leer") and
  progressive ("am reading" -> "estoy leyendo") with person agreement, negation, contractions,
  the personal "a" before people ("i help the teacher" -> "yo ayudo al profesor");
* "to be" with ``ser``/``estar``, degree words ("very", "too"), the "tener" idioms ("i am hungry" ->
  "yo tengo hambre"), the weather ("it's very cold today" -> "hace mucho frío hoy"), days, months,
  "like" (-> "gustar"), activities and places, commands with "please", time and frequency words;
* two clauses joined by "and", "but", "or", "because" (the lecture's "the animal didn't cross the
  street because it was too tired" -> "... porque estaba demasiado cansado");
* questions: "do you have cats?" -> "¿ tú tienes gatos ?" (statement word order inside ``¿ ?``).

Spanish output is written the way the word tokenizer decodes it: words and punctuation
separated by single spaces ("¿ tú tienes gatos ?"). Inputs are lower-cased by :func:`normalize`
(``Task.normalize_input`` says whether it changed anything), so "I have cats" works. Names and
numbers in digits are kept out of the vocabulary and spelled (``TASK.spelled``), so the model copies
ones it has never seen.

Test split: ``HELD_OUT_PAIRS`` (noun, adjective) never occur together in train or validation,
nor do the names in ``HELD_OUT_NAMES``; every test sentence contains at least one of either, drawn
in equal numbers per length bucket (:func:`length_bucket`: English words 2-4, 5-7, 8-11, 12+).
"""

from __future__ import annotations

import random

from core.tasks.base import Example, Task, TaskData, lower_case
from core.tasks.lexicon import ADJECTIVES, NOUNS
from core.tasks.verbs import VERBS
from core.tasks.phrases import (
    ANIMATE, INDEFINITE_ANIMALS, INTRANSITIVE, NO_PERSONAL_A, NOT_ANIMATE_PREDICATES, TRANSITIVE, NounPhrase,
    Pairs,
    clause, noun_phrase, pairs_of, predicate, pronoun_or_np, random_np, pick_tense,
)
from core.tasks import sentences
from core.tasks.names import HELD_OUT_NAMES
from core.tasks.pools import draw_pools, held_out_pairs
from core.tasks.wordlist import english_word_count, spelled


HELD_OUT_PAIRS = held_out_pairs(tuple(NOUNS), tuple(ADJECTIVES))
BUCKETS = ("1", "2-4", "5-7", "8-11", "12+")
TEST_BUCKETS = ("2-4", "5-7", "8-11", "12+")  # a one-word input has no noun-adjective pair to hold out
normalize = lower_case  # "I have cats" -> "i have cats", same length


def word_count(english: str) -> int:
    """English words in a sentence ("didn't" is one word; punctuation is not counted)."""
    return len(english.replace("?", " ").replace(".", " ").split())


def length_bucket(example: Example) -> str:
    """The length bucket of an example's English source: ``"1"``, ``"2-4"``, ``"5-7"`` or ``"8+"``."""
    n = word_count(example.source)
    return "1" if n <= 1 else "2-4" if n <= 4 else "5-7" if n <= 7 else "8-11" if n <= 11 else "12+"


_EVERYDAY = (  # (share of all sentences, builder)
    (0.12, sentences.timed_clause), (0.10, sentences.activity_clause), (0.05, sentences.person_object_clause),
    (0.07, sentences.liking), (0.10, sentences.being), (0.05, sentences.commanding), (0.05, sentences.counting),
    (0.04, sentences.because_it),
)
_SIMPLE = (sentences.timed_clause, sentences.activity_clause, sentences.person_object_clause, sentences.being)


def tagged_sentence(rng: random.Random) -> tuple[str, str, Pairs]:
    """A random (English, Spanish, pairs used) triple from the grammar: ``pairs`` holds the (noun,
    adjective) pairs and ``("", name)`` for each name."""
    roll = rng.random()
    for share, builder in _EVERYDAY:
        if roll < share:
            en, es, pairs = builder(rng)
            break
        roll -= share
    else:
        if roll < 0.06:
            en, es, pairs = sentences.joined(rng, [rng.choice(_SIMPLE)(rng) for _ in range(2)])
        else:
            return _basic(rng)
    if rng.random() < 0.15:
        en, es = en + ".", es + " ."
    return en, es, pairs


def _basic(rng: random.Random) -> tuple[str, str, Pairs]:
    """The first grammar's sentences: noun phrases, clauses, "to be" + adjective, "there is", questions."""
    roll = rng.random()
    contracted = rng.random() < 0.5
    if roll < 0.16:  # a noun phrase alone, or a single noun
        phrase = random_np(rng, "patfdrlv", singular_bare=rng.random() < 0.15)
        en, es = noun_phrase(phrase)
        pairs = pairs_of(phrase)
    elif roll < 0.52:  # subject verb object
        verb = rng.choice(TRANSITIVE)
        subject = pronoun_or_np(rng, "pa", 0.4)
        kinds = VERBS[verb].objects
        animal_ok = verb in NO_PERSONAL_A or verb in INDEFINITE_ANIMALS
        if animal_ok and rng.random() < 0.25:
            obj = random_np(rng, "a", animal_definite=verb in NO_PERSONAL_A)
        else:
            obj = random_np(rng, kinds.replace("a", "") or kinds)
        tense, negated = pick_tense(rng, verb)
        en, es = clause(subject, verb, obj, tense=tense, negated=negated, contracted=contracted)
        pairs = pairs_of(subject, obj)
    elif roll < 0.63:  # subject verb
        verb = rng.choice(INTRANSITIVE)
        subject = pronoun_or_np(rng, "pa", 0.4)
        tense, negated = pick_tense(rng, verb)
        en, es = clause(subject, verb, tense=tense, negated=negated, contracted=contracted)
        pairs = pairs_of(subject)
    elif roll < 0.76:  # subject is adjective
        subject = pronoun_or_np(rng, "patfdrlv", 0.3)
        adjective = _predicate_adjective(rng, subject)
        en, es = predicate(subject, adjective, negated=rng.random() < 0.25, contracted=contracted)
        pairs = pairs_of(subject)
    elif roll < 0.80:  # there is / there are
        phrase = random_np(rng, "patfdrv", bare=True)
        plural = phrase[3]
        en, es = f"there {'are' if plural else 'is'} {noun_phrase(phrase)[0]}", f"hay {noun_phrase(phrase)[1]}"
        pairs = pairs_of(phrase)
    else:
        return _question(rng)
    if rng.random() < 0.15:
        en, es = en + ".", es + " ."
    return en, es, pairs


def _predicate_adjective(rng: random.Random, subject: str | NounPhrase) -> str:
    animate = isinstance(subject, str) or subject[2] in ANIMATE
    while True:
        adjective = rng.choice(tuple(ADJECTIVES))
        if not (animate and adjective in NOT_ANIMATE_PREDICATES):
            return adjective


def _question(rng: random.Random) -> tuple[str, str, Pairs]:
    roll = rng.random()
    if roll < 0.45:  # do/does/did ... ?
        subject = pronoun_or_np(rng, "pa", 0.5)
        if rng.random() < 0.7:
            verb = rng.choice(TRANSITIVE)
            obj = random_np(rng, VERBS[verb].objects.replace("a", "") or "t")
        else:
            verb, obj = rng.choice(INTRANSITIVE), None
        tense = "past" if rng.random() < 0.3 else "present"
        en, es = clause(subject, verb, obj, tense=tense, question=True)
        pairs = pairs_of(subject, obj)
    elif roll < 0.75:  # is the car red?
        subject = pronoun_or_np(rng, "patfdrlv", 0.3)
        en, es = predicate(subject, _predicate_adjective(rng, subject), question=True)
        pairs = pairs_of(subject)
    elif roll < 0.9:  # where is / where are
        phrase = random_np(rng, "patfdrv", bare=False)
        en_np, es_np = noun_phrase(phrase)
        en = f"where {'are' if phrase[3] else 'is'} {en_np}?"
        es = f"¿ dónde {'están' if phrase[3] else 'está'} {es_np} ?"
        pairs = pairs_of(phrase)
    else:  # is there / are there
        phrase = random_np(rng, "patfdrv", bare=True)
        en_np, es_np = noun_phrase(phrase)
        en, es = f"{'are' if phrase[3] else 'is'} there {en_np}?", f"¿ hay {es_np} ?"
        pairs = pairs_of(phrase)
    if rng.random() < 0.2:
        en = en[:-1]  # typed without the question mark
    return en, es, pairs


def sentence(rng: random.Random) -> tuple[str, str]:
    """A random (English, Spanish) sentence pair from the grammar."""
    en, es, _ = tagged_sentence(rng)
    return en, es


def _make(rng: random.Random, n: int) -> list[Example]:
    return [Example(*sentence(rng)) for _ in range(n)]


def _draw(rng: random.Random) -> tuple[str, Example]:
    en, es, pairs = tagged_sentence(rng)
    example = Example(en, es)
    held = pairs & HELD_OUT_PAIRS or any(not noun and word in HELD_OUT_NAMES for noun, word in pairs)
    return (length_bucket(example) if held else "seen"), example


def _split(rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    """Train and validation avoid ``HELD_OUT_PAIRS``; the test split (every sentence uses at least
    one) has the same number of sentences in each of ``TEST_BUCKETS``."""
    n_train, n_val, n_test = sizes
    per_bucket = -(-n_test // len(TEST_BUCKETS))
    wanted = {"seen": n_train + n_val, **{bucket: per_bucket for bucket in TEST_BUCKETS}}
    pools = draw_pools(_draw, rng, wanted, max_draws=100 * sum(sizes))
    lecture = [Example(normalize(en), es) for en, es in LECTURE_EXAMPLES.items()]
    seen = [e for e in pools["seen"] if e not in lecture]
    test = [e for bucket in TEST_BUCKETS for e in pools[bucket] if e not in lecture][:n_test]
    train = [*lecture, *seen[: n_train - len(lecture)]]  # the lecture's sentences are always trained on
    return TaskData(train=train, validation=seen[n_train - len(lecture) : n_train - len(lecture) + n_val],
                    test=test)


LECTURE_EXAMPLES = {
    "I have cats": "yo tengo gatos",
    "the black cat": "el gato negro",
    "the animal didn't cross the street": "el animal no cruzó la calle",
    "the animal does not cross the street": "el animal no cruza la calle",
    "the red car is fast": "el coche rojo es rápido",
    "the animal didn't cross the street because it was too tired":
        "el animal no cruzó la calle porque estaba demasiado cansado",
}

TASK = Task(
    name="translation",
    description=(
        f"Translate everyday English to Spanish ({english_word_count():,} English words: present, past and future, "
        "negation, questions, commands, \"like\", the weather, time words, \"and\"/\"but\"/\"because\"; "
        "adjectives move after the noun and agree with it; names and digits are copied); the test split only "
        "uses noun-adjective pairs and names never seen in training."
    ),
    architecture="encoder-decoder",
    tokenizer_kind="word",
    metric="exact_match",
    examples=(
        "I have cats",
        "the black cat",
        "the animal didn't cross the street",
        "the red car is fast",
        "do you have my keys?",
        "the big dog sees a small cat",
    ),
    probe="the big dog sees a small cat",
    probe_target="el perro grande ve un gato pequeño",
    make=_make,
    default_sizes=(100000, 1000, 3000),
    split=_split,
    normalize=normalize,
    spelled=spelled,
    scope=(f"A classroom model trained on a generated grammar of {english_word_count():,} English words: a word "
           "outside them is read letter by letter and copied, and a phrase it cannot translate may be left out."),
)
