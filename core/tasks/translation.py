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
from core.tasks.lexicon import (
    ADJECTIVES, ALSO_INTRANSITIVE, BE, DETERMINERS, ENGLISH_BE, NOUNS, NUMBERS, PERSONS, PRONOUNS, VERBS,
)
from core.tasks.pools import draw_pools, held_out_pairs

Pairs = set[tuple[str, str]]
NounPhrase = tuple[str, str | None, str, bool]  # (determiner or "", adjective or None, English singular noun, plural)

HELD_OUT_PAIRS = held_out_pairs(tuple(NOUNS), tuple(ADJECTIVES))
BUCKETS = ("1", "2-4", "5-7", "8+")
TEST_BUCKETS = ("2-4", "5-7", "8+")  # a one-word input has no noun-adjective pair to hold out
_SINGULAR = ("the", "a", "one", "this", "that", "my", "your", "his", "her", "our", "their")
_PLURAL = ("the", "some", "these", "those", "my", "your", "his", "her", "our", "their", *NUMBERS)
_NO_PERSONAL_A = ("have", "want", "buy", "need", "sell")  # may take "the dog" as object
_INDEFINITE_ANIMALS = ("see", "find", "watch")  # may take "a dog", "two dogs", "dogs"
_INTRANSITIVE = tuple(v for v, verb in VERBS.items() if not verb.objects or v in ALSO_INTRANSITIVE)
_TRANSITIVE = tuple(v for v, verb in VERBS.items() if verb.objects)
_ANIMATE = tuple(n for n, noun in NOUNS.items() if noun.kind in "pa")
_NOT_ANIMATE_PREDICATES = ("hot", "cold")  # "i am cold" is "tengo frío", not "estoy frío"


normalize = lower_case  # "I have cats" -> "i have cats", same length


def word_count(english: str) -> int:
    """English words in a sentence ("didn't" is one word; punctuation is not counted)."""
    return len(english.replace("?", " ").replace(".", " ").split())


def length_bucket(example: Example) -> str:
    """The length bucket of an example's English source: ``"1"``, ``"2-4"``, ``"5-7"`` or ``"8+"``."""
    n = word_count(example.source)
    return "1" if n <= 1 else "2-4" if n <= 4 else "5-7" if n <= 7 else "8+"


def noun_phrase(phrase: NounPhrase) -> tuple[str, str]:
    """English and Spanish of ``(determiner, adjective, noun, plural)``.

    ``("the", "red", "house", True)`` -> ("the red houses", "las casas rojas"); the determiner
    ``"a"`` is written "an" before a vowel; ``""`` means no determiner ("cats" -> "gatos").
    """
    det, adjective, noun_name, plural = phrase
    noun = NOUNS[noun_name]
    en = [w for w in (adjective, noun.en_plural if plural else noun.en) if w]
    es = [noun.es_plural if plural else noun.es]
    if adjective:
        es.append(ADJECTIVES[adjective].agree(noun.gender, plural))
    if det:
        en.insert(0, "an" if det == "a" and en[0][0] in "aeiou" else det)
        form = DETERMINERS[det][2 * plural + (noun.gender == "f")]
        if form is None:
            raise ValueError(f"{det!r} cannot go with a {'plural' if plural else 'singular'} noun")
        es.insert(0, form)
    return " ".join(en), " ".join(es)


def _subject(subject: str | NounPhrase) -> tuple[str, str, str, str, bool]:
    """(English, Spanish, person, gender, plural) of a pronoun or a noun phrase."""
    if isinstance(subject, str):
        es, person, gender = PRONOUNS[subject]
        return subject, es, person, gender, person in ("1pl", "3pl")
    en, es = noun_phrase(subject)
    return en, es, "3pl" if subject[3] else "3sg", NOUNS[subject[2]].gender, subject[3]


def clause(
    subject: str | NounPhrase, verb: str, obj: NounPhrase | None = None, *, tense: str = "present",
    negated: bool = False, contracted: bool = False, question: bool = False,
) -> tuple[str, str]:
    """English and Spanish of subject + verb (+ object) in ``tense`` "present" or "past".

    ``clause("i", "have", ("", None, "cat", True))`` -> ("i have cats", "yo tengo gatos");
    ``clause(("the", None, "animal", False), "cross", ("the", None, "street", False), tense="past",
    negated=True, contracted=True)`` -> ("the animal didn't cross the street",
    "el animal no cruzó la calle"). A question ("do you have cats?") is only built affirmative.
    """
    subject_en, subject_es, person, _, _ = _subject(subject)
    v = VERBS[verb]
    third = person == "3sg"
    es_verb = (v.present if tense == "present" else v.preterite)[PERSONS.index(person)]
    object_en, object_es = noun_phrase(obj) if obj else ("", "")
    if question:
        aux = "did" if tense == "past" else "does" if third else "do"
        en = f"{aux} {subject_en} {v.en} {object_en}".strip()
        return en + "?", f"¿ {subject_es} {es_verb} {object_es}".strip() + " ?"
    if negated:
        aux = "did" if tense == "past" else "does" if third else "do"
        en_verb = f"{aux}n't {v.en}" if contracted else f"{aux} not {v.en}"
        es_verb = f"no {es_verb}"
    elif tense == "past":
        if v.en_past is None:
            raise ValueError(f"the past of {verb!r} looks like its present; only 'didn't {verb}' is used")
        en_verb = v.en_past
    else:
        en_verb = v.en_third if third else v.en
    return f"{subject_en} {en_verb} {object_en}".strip(), f"{subject_es} {es_verb} {object_es}".strip()


def predicate(
    subject: str | NounPhrase, adjective: str, *, negated: bool = False, contracted: bool = False,
    question: bool = False,
) -> tuple[str, str]:
    """Subject + "to be" + adjective: ``ser`` or ``estar`` by the adjective, agreeing with the subject.

    ``predicate("she", "tired")`` -> ("she is tired", "ella está cansada").
    """
    subject_en, subject_es, person, gender, plural = _subject(subject)
    adj = ADJECTIVES[adjective]
    be_en, be_es = ENGLISH_BE[person], BE[adj.copula][PERSONS.index(person)]
    adj_es = adj.agree(gender, plural)
    if question:
        return f"{be_en} {subject_en} {adjective}?", f"¿ {subject_es} {be_es} {adj_es} ?"
    if negated:
        be_en = f"{be_en}n't" if contracted and be_en != "am" else f"{be_en} not"
        be_es = f"no {be_es}"
    return f"{subject_en} {be_en} {adjective}", f"{subject_es} {be_es} {adj_es}"


def _np(rng: random.Random, kinds: str, *, bare: bool = True, singular_bare: bool = False,
        animal_definite: bool = True) -> NounPhrase:
    """A random noun phrase over nouns of the given classes; half have an adjective.

    ``bare`` allows a plural without determiner ("cats"); ``singular_bare`` a lone singular noun;
    ``animal_definite=False`` keeps animals to "a", "one", "some" and numbers (no personal ``a`` needed).
    """
    noun = rng.choice(_NOUNS_OF[kinds])
    plural = rng.random() < 0.45
    if plural:
        dets = [d for d in _PLURAL if d not in NUMBERS] + ([""] * 4 if bare else [])
        if rng.random() < 0.25:
            dets = list(NUMBERS)
    else:
        dets = list(_SINGULAR) + ([""] * 3 if singular_bare or (bare and NOUNS[noun].kind == "d") else [])
    if NOUNS[noun].kind == "a" and not animal_definite:
        dets = [d for d in dets if d in ("a", "one", "some", "") or d in NUMBERS] or ["a"]
    adjective = rng.choice(tuple(ADJECTIVES)) if rng.random() < 0.5 else None
    return rng.choice(dets), adjective, noun, plural


class _ByKind(dict):
    def __missing__(self, kinds: str) -> tuple[str, ...]:
        self[kinds] = tuple(n for n, noun in NOUNS.items() if noun.kind in kinds)
        return self[kinds]


_NOUNS_OF: dict[str, tuple[str, ...]] = _ByKind()


def _pronoun_or_np(rng: random.Random, kinds: str, pronoun_share: float) -> str | NounPhrase:
    if rng.random() < pronoun_share:
        return rng.choice(tuple(PRONOUNS))
    return _np(rng, kinds, bare=False)


def _pairs(*phrases: str | NounPhrase | None) -> Pairs:
    return {(p[2], p[1]) for p in phrases if isinstance(p, tuple) and p[1]}


def _tense(rng: random.Random, verb: str) -> tuple[str, bool]:
    """Present 50 % (a third of it negated), past 50 % (a third of it "didn't ...")."""
    roll = rng.random()
    if roll < 0.5:
        return "present", roll < 0.5 / 3
    return "past", roll < 0.5 + 0.5 / 3 or VERBS[verb].en_past is None


def tagged_sentence(rng: random.Random) -> tuple[str, str, Pairs]:
    """A random (English, Spanish, (noun, adjective) pairs used) triple from the grammar."""
    roll = rng.random()
    contracted = rng.random() < 0.5
    if roll < 0.16:  # a noun phrase alone, or a single noun
        phrase = _np(rng, "patfdrlv", singular_bare=rng.random() < 0.15)
        en, es = noun_phrase(phrase)
        pairs = _pairs(phrase)
    elif roll < 0.52:  # subject verb object
        verb = rng.choice(_TRANSITIVE)
        subject = _pronoun_or_np(rng, "pa", 0.4)
        kinds = VERBS[verb].objects
        animal_ok = verb in _NO_PERSONAL_A or verb in _INDEFINITE_ANIMALS
        if animal_ok and rng.random() < 0.25:
            obj = _np(rng, "a", animal_definite=verb in _NO_PERSONAL_A)
        else:
            obj = _np(rng, kinds.replace("a", "") or kinds)
        tense, negated = _tense(rng, verb)
        en, es = clause(subject, verb, obj, tense=tense, negated=negated, contracted=contracted)
        pairs = _pairs(subject, obj)
    elif roll < 0.63:  # subject verb
        verb = rng.choice(_INTRANSITIVE)
        subject = _pronoun_or_np(rng, "pa", 0.4)
        tense, negated = _tense(rng, verb)
        en, es = clause(subject, verb, tense=tense, negated=negated, contracted=contracted)
        pairs = _pairs(subject)
    elif roll < 0.76:  # subject is adjective
        subject = _pronoun_or_np(rng, "patfdrlv", 0.3)
        adjective = _predicate_adjective(rng, subject)
        en, es = predicate(subject, adjective, negated=rng.random() < 0.25, contracted=contracted)
        pairs = _pairs(subject)
    elif roll < 0.80:  # there is / there are
        phrase = _np(rng, "patfdrv", bare=True)
        plural = phrase[3]
        en, es = f"there {'are' if plural else 'is'} {noun_phrase(phrase)[0]}", f"hay {noun_phrase(phrase)[1]}"
        pairs = _pairs(phrase)
    else:
        return _question(rng)
    if rng.random() < 0.15:
        en, es = en + ".", es + " ."
    return en, es, pairs


def _predicate_adjective(rng: random.Random, subject: str | NounPhrase) -> str:
    animate = isinstance(subject, str) or subject[2] in _ANIMATE
    while True:
        adjective = rng.choice(tuple(ADJECTIVES))
        if not (animate and adjective in _NOT_ANIMATE_PREDICATES):
            return adjective


def _question(rng: random.Random) -> tuple[str, str, Pairs]:
    roll = rng.random()
    if roll < 0.45:  # do/does/did ... ?
        subject = _pronoun_or_np(rng, "pa", 0.5)
        if rng.random() < 0.7:
            verb = rng.choice(_TRANSITIVE)
            obj = _np(rng, VERBS[verb].objects.replace("a", "") or "t")
        else:
            verb, obj = rng.choice(_INTRANSITIVE), None
        tense = "past" if rng.random() < 0.3 else "present"
        en, es = clause(subject, verb, obj, tense=tense, question=True)
        pairs = _pairs(subject, obj)
    elif roll < 0.75:  # is the car red?
        subject = _pronoun_or_np(rng, "patfdrlv", 0.3)
        en, es = predicate(subject, _predicate_adjective(rng, subject), question=True)
        pairs = _pairs(subject)
    elif roll < 0.9:  # where is / where are
        phrase = _np(rng, "patfdrv", bare=False)
        en_np, es_np = noun_phrase(phrase)
        en = f"where {'are' if phrase[3] else 'is'} {en_np}?"
        es = f"¿ dónde {'están' if phrase[3] else 'está'} {es_np} ?"
        pairs = _pairs(phrase)
    else:  # is there / are there
        phrase = _np(rng, "patfdrv", bare=True)
        en_np, es_np = noun_phrase(phrase)
        en, es = f"{'are' if phrase[3] else 'is'} there {en_np}?", f"¿ hay {es_np} ?"
        pairs = _pairs(phrase)
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
