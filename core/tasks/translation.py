"""Translation task: English -> Spanish from a grammar a class can type at.

The grammar (word lists in :mod:`core.tasks.lexicon`: 219 nouns, 59 adjectives and 63 verbs,
about 740 English word forms in the training split) covers:

* noun phrases: ``the/a/one/some/this/that/these/those``, possessives ``my your his her our
  their``, the numbers two to twenty, bare plurals; at most one adjective, which Spanish puts
  after the noun, agreeing in gender and number ("the black cat" -> "el gato negro",
  "my red houses" -> "mis casas rojas");
* subject pronouns (kept in Spanish, the lecture's convention: "i have cats" -> "yo tengo
  gatos"; "you" is ``tú``, "we" ``nosotros``, "they" ``ellos``; "i"/"you" agree in the masculine);
* verbs in the present with person agreement, their negation ("don't", "does not" -> ``no``),
  the past through "didn't" / "did not" and the simple past ("the animal didn't cross the
  street" -> "el animal no cruzó la calle") -> Spanish preterite;
* "to be" + adjective with ``ser`` (what something is) or ``estar`` (a state): "the car is fast"
  -> "el coche es rápido", "she is tired" -> "ella está cansada"; "there is/are" -> ``hay``;
* questions: "do you have cats?" -> "¿ tú tienes gatos ?" (statement word order inside ``¿ ?``),
  "is the car red?", "where are my keys?" -> "¿ dónde están mis llaves ?", "are there ...?".

Spanish output is written the way the word tokenizer decodes it: words and punctuation
separated by single spaces ("¿ tú tienes gatos ?"). People are never objects and an animal
object takes a definite determiner only with verbs that need no personal ``a``
("tengo el perro", never "veo el perro"). Inputs are lower-cased by :func:`normalize`
(``Task.normalize_input`` says whether it changed anything), so "I have cats" works.

Test split: ``HELD_OUT_PAIRS`` (noun, adjective) never occur together in train or validation,
and every test sentence contains at least one, drawn in equal numbers per length bucket
(:func:`length_bucket`: English words 2-4, 5-7, 8+).
"""

from __future__ import annotations

import random

from core.tasks.base import Example, Task, TaskData, lower_case
from core.tasks.lexicon import ADJECTIVES, NOUNS, VERBS
from core.tasks.phrases import (
    ANIMATE, INDEFINITE_ANIMALS, INTRANSITIVE, NO_PERSONAL_A, NOT_ANIMATE_PREDICATES, TRANSITIVE, NounPhrase, Pairs,
    clause, noun_phrase, pairs_of, predicate, pronoun_or_np, random_np, pick_tense,
)
from core.tasks.pools import draw_pools, held_out_pairs


HELD_OUT_PAIRS = held_out_pairs(tuple(NOUNS), tuple(ADJECTIVES))
BUCKETS = ("1", "2-4", "5-7", "8+")
TEST_BUCKETS = ("2-4", "5-7", "8+")  # a one-word input has no noun-adjective pair to hold out
normalize = lower_case  # "I have cats" -> "i have cats", same length


def word_count(english: str) -> int:
    """English words in a sentence ("didn't" is one word; punctuation is not counted)."""
    return len(english.replace("?", " ").replace(".", " ").split())


def length_bucket(example: Example) -> str:
    """The length bucket of an example's English source: ``"1"``, ``"2-4"``, ``"5-7"`` or ``"8+"``."""
    n = word_count(example.source)
    return "1" if n <= 1 else "2-4" if n <= 4 else "5-7" if n <= 7 else "8+"


def tagged_sentence(rng: random.Random) -> tuple[str, str, Pairs]:
    """A random (English, Spanish, (noun, adjective) pairs used) triple from the grammar."""
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
    return (length_bucket(example) if pairs & HELD_OUT_PAIRS else "seen"), example


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
}

TASK = Task(
    name="translation",
    description=(
        "Translate English to Spanish (219 nouns, 59 adjectives, 63 verbs; present and past, "
        "negation, questions, numbers, possessives; adjectives move after the noun and agree with it); "
        "the test split only uses noun-adjective pairs never seen together in training."
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
)
