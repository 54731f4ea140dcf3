"""The ``everyday`` task: the translation grammar (:mod:`core.tasks.translation`) extended with the constructions
English's commonest words need (:mod:`core.tasks.constructions`): prepositional phrases (of, for, with, from,
about, by), object pronouns (me, you, him, her, us, them), modals (can, could, should, would), wh-questions (what,
who, when, where, how, which; "can you …?") and comparatives ("taller than", "more … than", "better").

Half of the sentences come from the translation grammar as they are, half from the new builders below. The test
split holds out what the translation task holds out (noun-adjective pairs, names), and the splits keep
:data:`core.tasks.class_sentences.NEW_EVERYDAY` out of training and validation.
"""

from __future__ import annotations

import random

from core.tasks import activities, everyday, everyday_frames, everyday_words, sentences, translation
from core.tasks.base import Example, Task, TaskData, lower_case
from core.tasks.class_sentences import NEW_EVERYDAY
from core.tasks.constructions import (
    COMPARATIVES, MODALS, construction_english_words, construction_words, OBJECT_PRONOUNS, comparative, how_is, modal_clause, object_pronoun_clause,
    prepositional, who_is, wh_question,
)
from core.tasks.lexicon import ADJECTIVES, DETERMINERS, NOUNS, PRONOUNS
from core.tasks.phrases import NounPhrase, Pairs, clause, object_phrase, pairs_of, random_np
from core.tasks.pools import draw_pools
from core.tasks.verbs import VERBS
from core.tasks.numbers import is_digits
from core.tasks.wordlist import ENGLISH_WORDS, FRAGMENTS, GRAMMAR_WORDS
from core.tasks.names import HELD_OUT_NAMES

PERSON_VERBS = tuple(v for v, item in VERBS.items() if "p" in item.objects and item.en_past)
THING_VERBS = tuple(v for v, item in VERBS.items() if item.objects.strip("pa") and item.en_past)
VEHICLES = tuple(n for n, noun in NOUNS.items() if noun.kind == "v")
_NEW_SOURCES = frozenset(lower_case(en) for en in NEW_EVERYDAY)
WORDS = GRAMMAR_WORDS | construction_words() | everyday_words.words()  # what the tokenizer's vocabulary may hold
ENGLISH = ENGLISH_WORDS | construction_english_words() | everyday_words.english_words()


def english_word_count() -> int:
    """How many English words the everyday grammar writes (contraction pieces left out)."""
    return len(ENGLISH - FRAGMENTS)


def spelled(word: str) -> bool:
    """As :func:`core.tasks.wordlist.spelled`, over the everyday grammar's words."""
    return is_digits(word) or word not in WORDS


def _np(rng: random.Random, kinds: str, pairs: Pairs) -> NounPhrase:
    phrase = random_np(rng, kinds, bare=False, animal_definite=False)
    pairs.update(pairs_of(phrase))
    return phrase


def _pronoun_object(rng: random.Random, subject: str | NounPhrase) -> str:
    """An object pronoun that is not the subject itself ("i see me" is left out)."""
    own = subject if isinstance(subject, str) else ""
    return rng.choice([p for p, (_, _, as_subject) in OBJECT_PRONOUNS.items() if as_subject != own])


def with_phrase(rng: random.Random) -> tuple[str, str, Pairs]:
    """A simple sentence + a prepositional phrase: "yesterday i went to the market with my mother"."""
    en, es, pairs = rng.choice((sentences.activity_clause, sentences.person_object_clause,
                                sentences.timed_clause))(rng)
    preposition = rng.choice(("with", "with", "for", "from", "about", "by"))
    if preposition == "by":
        obj: str | NounPhrase = ("", None, rng.choice(VEHICLES), False)
    elif preposition in ("with", "for") and rng.random() < 0.3:
        obj = rng.choice(tuple(OBJECT_PRONOUNS))
    else:
        obj = _np(rng, {"with": "pa", "for": "p", "from": "l", "about": "atlr"}[preposition], pairs)
    en_pp, es_pp = prepositional(preposition, obj)
    return f"{en} {en_pp}", f"{es} {es_pp}", pairs


def of_phrase(rng: random.Random) -> tuple[str, str, Pairs]:
    """"i see the door of the house" -> "yo veo la puerta de la casa"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    verb = rng.choice(("see", "want", "need", "find", "clean", "open", "close", "paint"))
    thing = ("the", None, rng.choice(("door", "window", "key", "photo", "map", "room")), rng.random() < 0.3)
    owner = _np(rng, "pl", pairs)
    en, es = clause(who, verb, thing, tense="past" if rng.random() < 0.4 else "present")
    en_of, es_of = prepositional("of", owner)
    return f"{en} {en_of}", f"{es} {es_of}", pairs


def pronoun_object(rng: random.Random) -> tuple[str, str, Pairs]:
    """"she sees them every day" -> "ella los ve todos los días"; "i didn't help her"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs, names=0.1)
    tense = rng.choice(("present", "present", "past", "future"))
    en, es = object_pronoun_clause(who, rng.choice(PERSON_VERBS + ("see", "find")), _pronoun_object(rng, who),
                                   tense=tense, negated=rng.random() < 0.25)
    if rng.random() < 0.4:
        en, es = everyday.add_time(rng, en, es, tense)
    return en, es, pairs


def modal(rng: random.Random) -> tuple[str, str, Pairs]:
    """"i can't find my keys", "we should go to school by bus", "can you help me, please?"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs, names=0.1)
    question = rng.random() < 0.3
    name = rng.choice(tuple(MODALS))
    if rng.random() < 0.35:
        en, es = modal_clause(who, name, rng.choice(PERSON_VERBS), clitic=_pronoun_object(rng, who),
                              negated=not question and rng.random() < 0.3, question=question)
    elif rng.random() < 0.5:
        verb = rng.choice(THING_VERBS)
        thing = _np(rng, VERBS[verb].objects.replace("p", "").replace("a", "") or "t", pairs)
        en, es = modal_clause(who, name, verb, object_phrase(thing), negated=not question and rng.random() < 0.3,
                              question=question)
    else:
        verb, en_rest, es_rest = activities.activity(rng)
        if verb.en in ("go", "come") and rng.random() < 0.5:
            en_by, es_by = prepositional("by", ("", None, rng.choice(VEHICLES), False))
            en_rest, es_rest = f"{en_rest} {en_by}", f"{es_rest} {es_by}"
        en, es = modal_clause(who, name, verb, (en_rest, es_rest), question=question,
                              negated=not question and rng.random() < 0.3)
    if question and rng.random() < 0.3:
        en, es = en[:-1] + ", please?", es[:-2] + " , por favor ?"
    return en, es, pairs


def question(rng: random.Random) -> tuple[str, str, Pairs]:
    """"what do you want for your birthday?", "where does your brother live?", "who is your teacher?"."""
    pairs: Pairs = set()
    roll = rng.random()
    if roll < 0.15:
        return (*who_is(_np(rng, "p", pairs)), pairs)
    if roll < 0.25:
        return (*how_is(sentences.subject(rng, "p", pairs, names=0.1)), pairs)
    who = sentences.subject(rng, "p", pairs, names=0.1)
    tense = "past" if rng.random() < 0.3 else "present"
    if roll < 0.45:
        verb = rng.choice(("want", "need", "buy", "see", "find", "eat", "drink", "read", "write", "have"))
        rest = ("", "")
        if rng.random() < 0.15:
            rest = prepositional("for", _np(rng, "p", pairs))
        elif rng.random() < 0.15:
            owner = rng.choice(("my", "your", "his", "her", "our", "their"))
            rest = f"for {owner} birthday", f"para {DETERMINERS[owner][0]} cumpleaños"
        return (*wh_question("what", who, verb, rest, tense=tense), pairs)
    if roll < 0.6:
        noun = NOUNS[rng.choice(tuple(n for n, item in NOUNS.items() if item.kind in "tr"))]
        plural = rng.random() < 0.4
        pick = (noun.en_plural, noun.es_plural) if plural else (noun.en, noun.es)
        return (*wh_question("which", who, rng.choice(("want", "need", "buy", "see", "prefer")), tense=tense,
                             noun=pick), pairs)
    verb = rng.choice(activities.STAYING)
    return (*wh_question(rng.choice(("where", "when", "why")), who, verb, tense=tense), pairs)


def comparing(rng: random.Random) -> tuple[str, str, Pairs]:
    """"my sister is taller than my brother", "the car is more expensive than the bicycle"."""
    pairs: Pairs = set()
    people = rng.random() < 0.6
    kinds = "p" if people else "tv"
    who = sentences.subject(rng, "p", pairs, names=0.0) if people else _np(rng, kinds, pairs)
    if isinstance(who, tuple):
        pairs.update(pairs_of(who))
    choices = [a for a in (*COMPARATIVES, "expensive", "beautiful", "dangerous", "interesting") if a in ADJECTIVES]
    adjective = rng.choice(choices)
    other: str | NounPhrase = rng.choice(tuple(OBJECT_PRONOUNS)) if people and rng.random() < 0.3 else \
        _np(rng, kinds, pairs)
    if isinstance(who, str) and who not in PRONOUNS:
        who = rng.choice(tuple(PRONOUNS))
    return (*comparative(who, adjective, other), pairs)


_BUILDERS = ((0.26, with_phrase), (0.06, of_phrase), (0.16, pronoun_object), (0.2, modal), (0.22, question),
             (0.1, comparing))


def tagged_sentence(rng: random.Random) -> tuple[str, str, Pairs]:
    """Half the translation grammar's sentences, a quarter the new constructions, a quarter the everyday words'
    frames (:mod:`core.tasks.everyday_frames`); a sixth of the statements end with "."."""
    roll = rng.random()
    if roll < 0.5:
        return translation.tagged_sentence(rng)
    if roll < 0.75:
        en, es, pairs = everyday_frames.built(rng)
        return _full_stop(rng, everyday.contract(rng, en), es, pairs)
    roll = rng.random()
    for share, builder in _BUILDERS:
        if roll < share:
            break
        roll -= share
    en, es, pairs = builder(rng)
    return _full_stop(rng, everyday.contract(rng, en), es, pairs)


def _full_stop(rng: random.Random, en: str, es: str, pairs: Pairs) -> tuple[str, str, Pairs]:
    if not en.endswith("?") and rng.random() < 0.15:
        return en + ".", es + " .", pairs
    return en, es, pairs


def _draw(rng: random.Random) -> tuple[str, Example]:
    en, es, pairs = tagged_sentence(rng)
    example = Example(en, es)
    if en in _NEW_SOURCES:
        return "new", example
    held = pairs & translation.HELD_OUT_PAIRS or any(not noun and word in HELD_OUT_NAMES for noun, word in pairs)
    return (translation.length_bucket(example) if held else "seen"), example


def _split(rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    """As the translation task's split; the twelve new everyday sentences are the extra test ``"new_everyday"``."""
    n_train, n_val, n_test = sizes
    per_bucket = -(-n_test // len(translation.TEST_BUCKETS))
    wanted = {"seen": n_train + n_val, **{bucket: per_bucket for bucket in translation.TEST_BUCKETS}}
    pools = draw_pools(_draw, rng, wanted, max_draws=100 * sum(sizes))
    lecture = [Example(lower_case(en), es) for en, es in translation.LECTURE_EXAMPLES.items()]
    seen = [e for e in pools["seen"] if e not in lecture]
    test = [e for bucket in translation.TEST_BUCKETS for e in pools[bucket] if e not in lecture][:n_test]
    train = [*lecture, *seen[: n_train - len(lecture)]]
    new = [Example(lower_case(en), es) for en, es in NEW_EVERYDAY.items()]
    return TaskData(train=train, validation=seen[n_train - len(lecture): n_train - len(lecture) + n_val],
                    test=test, extra_tests={"new_everyday": new})


def sentence(rng: random.Random) -> tuple[str, str]:
    en, es, _ = tagged_sentence(rng)
    return en, es


def _make(rng: random.Random, n: int) -> list[Example]:
    return [Example(*sentence(rng)) for _ in range(n)]


TASK = Task(
    name="everyday",
    description=(
        f"Translate everyday English to Spanish ({english_word_count():,} English words): the translation grammar "
        "plus prepositional phrases, object pronouns, can/could/should/would, what/who/when/where/how/which "
        "questions and comparatives; the test split only uses noun-adjective pairs and names never seen in training."
    ),
    architecture="encoder-decoder",
    tokenizer_kind="word",
    metric="exact_match",
    examples=("can you help me, please?", "my sister is taller than my brother", "where does your brother live?",
              "she sees them every day", "i have cats", "the black cat"),
    probe="the big dog sees a small cat",
    probe_target="el perro grande ve un gato pequeño",
    make=_make,
    default_sizes=(150000, 1000, 3000),
    split=_split,
    normalize=lower_case,
    spelled=spelled,
    scope=(f"A classroom model trained on a generated grammar of {english_word_count():,} English words: a word "
           "outside them is read letter by letter and copied, and a phrase it cannot translate may be left out."),
)
