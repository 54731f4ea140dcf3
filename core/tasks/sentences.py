"""Everyday sentences of the translation grammar, built from :mod:`core.tasks.phrases` (noun phrases,
clauses), :mod:`core.tasks.everyday` (time, weather, idioms), :mod:`core.tasks.activities` ("like",
activities, places, commands), names (:mod:`core.tasks.names`) and numbers (:mod:`core.tasks.numbers`).

Each builder returns ``(English, Spanish, pairs)``: ``pairs`` holds the (noun, adjective) pairs the
sentence uses, and ``("", name)`` for each name, so the split can hold some of either out.
"""

from __future__ import annotations

import random

from core.tasks import activities, everyday
from core.tasks.lexicon import ADJECTIVES, NOUNS, NUMBERS, PRONOUNS
from core.tasks.verbs import PERSONS, VERBS
from core.tasks.names import HELD_OUT_NAMES, random_name
from core.tasks.numbers import digits
from core.tasks.wordlist import GRAMMAR_WORDS
from core.tasks.phrases import (
    INTRANSITIVE, NOT_ANIMATE_PREDICATES, NounPhrase, Pairs, clause, noun_phrase, object_phrase, pairs_of,
    pick_tense, predicate, random_np, subject_phrase,
)

Subject = str | NounPhrase


def name(rng: random.Random, pairs: Pairs) -> str:
    """A name (one in ten from ``HELD_OUT_NAMES``, which only the test split may use), noted in ``pairs``."""
    chosen = rng.choice(sorted(HELD_OUT_NAMES)) if rng.random() < 0.1 else random_name(rng, GRAMMAR_WORDS)
    pairs.add(("", chosen))
    return chosen


def subject(rng: random.Random, kinds: str, pairs: Pairs, names: float = 0.2) -> Subject:
    """A pronoun (40 %), a name (``names``) or a noun phrase of ``kinds``."""
    roll = rng.random()
    if roll < 0.4:
        return rng.choice(tuple(PRONOUNS))
    if roll < 0.4 + names:
        return name(rng, pairs)
    phrase = random_np(rng, kinds, bare=False)
    pairs.update(pairs_of(phrase))
    return phrase


def obj(rng: random.Random, kinds: str, pairs: Pairs) -> Subject:
    """An object of ``kinds``: a noun phrase, or a name when people ("p") may be objects."""
    if "p" in kinds and rng.random() < 0.3:
        return name(rng, pairs)
    phrase = random_np(rng, kinds.replace("a", "") or "t", animal_definite=False)
    pairs.update(pairs_of(phrase))
    return phrase


def timed_clause(rng: random.Random) -> tuple[str, str, Pairs]:
    """A clause with a time or frequency word: "my mother reads a book every night"."""
    pairs: Pairs = set()
    verb = rng.choice(tuple(VERBS))
    who = subject(rng, "pa", pairs)
    thing = obj(rng, VERBS[verb].objects, pairs) if VERBS[verb].objects and rng.random() < 0.8 else None
    if thing is None and verb not in INTRANSITIVE:
        verb = rng.choice(INTRANSITIVE)
    tense, negated = pick_tense(rng, verb)
    if tense == "present" and not negated and rng.random() < 0.35:
        en, es = clause(who, verb, thing)
        en_who, es_who = subject_phrase(who)[:2]
        return (*everyday.add_frequency(rng, en, es, en_who, es_who), pairs)
    en, es = clause(who, verb, thing, tense=tense, negated=negated, contracted=rng.random() < 0.5)
    return (*everyday.add_time(rng, everyday.contract(rng, en), es, tense), pairs)


def activity_clause(rng: random.Random) -> tuple[str, str, Pairs]:
    """"we will go to the park tomorrow", "i play football", "they live in a big house"."""
    pairs: Pairs = set()
    who = subject(rng, "pa", pairs)
    if rng.random() < 0.5:
        verb, en_rest, es_rest = activities.activity(rng)
    else:
        verb = VERBS[rng.choice(activities.MOVING + activities.STAYING)]
        place = random_np(rng, "l", bare=False)
        pairs.update(pairs_of(place))
        en_rest, es_rest = activities.place_phrase(rng, verb.en, noun_phrase(place))
    tense, negated = pick_tense(rng, verb.en)
    en, es = clause(who, verb, tense=tense, negated=negated, contracted=rng.random() < 0.5)
    en, es = everyday.contract(rng, f"{en} {en_rest}"), f"{es} {es_rest}"
    return (*(everyday.add_time(rng, en, es, tense) if rng.random() < 0.4 else (en, es)), pairs)


def person_object_clause(rng: random.Random) -> tuple[str, str, Pairs]:
    """A person as object, with the personal "a": "i help the teacher" -> "yo ayudo al profesor"."""
    pairs: Pairs = set()
    verb = rng.choice(tuple(v for v, item in VERBS.items() if "p" in item.objects))
    who, whom = subject(rng, "pa", pairs), obj(rng, "p", pairs)
    tense, negated = pick_tense(rng, verb)
    en, es = clause(who, verb, whom, tense=tense, negated=negated, contracted=rng.random() < 0.5)
    return everyday.contract(rng, en), es, pairs


def liking(rng: random.Random) -> tuple[str, str, Pairs]:
    """"i like cats" -> "me gustan los gatos"; "my brother likes to play football"."""
    pairs: Pairs = set()
    who = subject(rng, "p", pairs)
    if not isinstance(who, str) or who not in PRONOUNS:
        who = noun_phrase(who) if isinstance(who, tuple) else (who, who)
    thing = random_np(rng, "atfdrlv", bare=False)
    det, adjective, noun, plural = thing
    if det in ("a", "one", "some") or det not in ("the", "my", "your", "this", "these", "our"):
        det = ""  # a generic plural: "cats" -> "los gatos"
        plural = True
    en_thing = noun_phrase((det, adjective, noun, plural))[0]
    es_thing = noun_phrase((det or "the", adjective, noun, plural))[1]
    liked = activities.liked_thing(rng, (en_thing, es_thing, plural))
    if liked[0] == en_thing:
        pairs.update(pairs_of(thing))
    return (*activities.like(rng, who, liked, "past" if rng.random() < 0.25 else "present", rng.random() < 0.25),
            pairs)


def being(rng: random.Random) -> tuple[str, str, Pairs]:
    """"she is my friend", "it's very cold today", "i am hungry", "the car is very fast"."""
    pairs: Pairs = set()
    roll = rng.random()
    if roll < 0.2:
        return (*everyday.weather(rng), pairs)
    if roll < 0.3:
        return (*everyday.day_sentence(rng), pairs)
    who = subject(rng, "pa", pairs, names=0.1)
    en_who, es_who, person, gender, plural = subject_phrase(who)
    if roll < 0.5:
        return (*everyday.idiom(rng, en_who, es_who, person), pairs)
    if roll < 0.7 and (who in PRONOUNS if isinstance(who, str) else NOUNS[who[2]].kind == "p"):
        noun = rng.choice(tuple(activities.FEMININE))
        det = rng.choice(("my", "your", "our", "his", "her", "their", "the", "a" if not plural else ""))
        en_pred, es_pred = activities.person_predicate(noun, gender, plural, det)
        en_be = {"1sg": "am", "2sg": "are", "3sg": "is"}.get(person, "are")
        es_be = ("soy", "eres", "es", "somos", "son")[PERSONS.index(person)]
        return everyday.contract(rng, f"{en_who} {en_be} {en_pred}"), f"{es_who} {es_be} {es_pred}", pairs
    animate = isinstance(who, str) or NOUNS[who[2]].kind in "pa"
    adjective = rng.choice(tuple(a for a in ADJECTIVES if not (animate and a in NOT_ANIMATE_PREDICATES)))
    if isinstance(who, str) and who not in PRONOUNS and ADJECTIVES[adjective].forms[0] != ADJECTIVES[adjective].forms[1]:
        pairs.discard(("", who))
        who = rng.choice(tuple(PRONOUNS))  # a name's gender is unknown: no gendered adjective after it
    en, es = predicate(who, adjective, negated=rng.random() < 0.2, contracted=rng.random() < 0.5)
    return (*everyday.add_degree(rng, everyday.contract(rng, en), es), pairs)


def commanding(rng: random.Random) -> tuple[str, str, Pairs]:
    """"please open the door" -> "por favor abre la puerta"."""
    pairs: Pairs = set()
    roll = rng.random()
    if roll < 0.55:
        verb = VERBS[rng.choice(activities.COMMAND_VERBS)]
        thing = obj(rng, verb.objects, pairs)
        return (*activities.command(rng, verb, *object_phrase(thing)), pairs)
    if roll < 0.8:
        return (*activities.command(rng, *activities.activity(rng)), pairs)
    return (*activities.command(rng, VERBS[rng.choice(activities.ALONE)], "", ""), pairs)


def counting(rng: random.Random) -> tuple[str, str, Pairs]:
    """"i am 12 years old" -> "yo tengo 12 años"; "maria has two dogs and three cats"."""
    pairs: Pairs = set()
    who = subject(rng, "p", pairs, names=0.4)
    en_who, es_who, person = subject_phrase(who)[:3]
    if rng.random() < 0.35:
        age = digits(rng) if rng.random() < 0.6 else rng.choice(("two", "five", "eight", "ten", "twelve", "fifteen"))
        es_age = NUMBERS.get(age, age)
        en_be = {"1sg": "am", "2sg": "are", "3sg": "is"}.get(person, "are")
        return (everyday.contract(rng, f"{en_who} {en_be} {age} years old"),
                f"{es_who} {VERBS['have'].present[PERSONS.index(person)]} {es_age} años", pairs)
    verb = rng.choice(("have", "want", "need", "buy", "see", "find"))
    first, second = (random_np(rng, "atfr", animal_definite=False) for _ in range(2))
    pairs.update(pairs_of(first, second))
    tense = "past" if rng.random() < 0.3 else "present"
    en, es = clause(who, verb, first, tense=tense)
    en_second, es_second = noun_phrase(second)
    return everyday.contract(rng, f"{en} and {en_second}"), f"{es} {and_word(es_second)} {es_second}", pairs


def and_word(following: str) -> str:
    """"y", or "e" before a word that begins with the sound /i/ ("padres e hijos"; RAE, Ortografía 2010)."""
    word = following.split()[0] if following else ""
    starts_i = word.startswith(("i", "í")) or (word.startswith(("hi", "hí")) and not word.startswith(("hie", "hia")))
    return "e" if starts_i else "y"


_WAS = {False: ("was", "estaba"), True: ("were", "estaban")}


def joined(rng: random.Random, simple: list[tuple[str, str, Pairs]]) -> tuple[str, str, Pairs]:
    """Two simple sentences joined: "i am hungry and i want a sandwich" (English ", but" -> ", pero")."""
    (en1, es1, pairs1), (en2, es2, pairs2) = simple
    word = rng.choice(tuple(everyday.CONJUNCTIONS))
    es_word = everyday.CONJUNCTIONS[word]
    if word == "and":
        es_word = and_word(es2)
    elif word == "or" and es2.split()[0].startswith(("o", "ho")):
        es_word = "u"
    return f"{en1} {word} {en2}".replace(" ,", ","), f"{es1} {es_word} {es2}", pairs1 | pairs2


def because_it(rng: random.Random) -> tuple[str, str, Pairs]:
    """"the animal didn't cross the street because it was too tired" -> "el animal no cruzó la calle
    porque estaba demasiado cansado": Spanish drops "it", and the adjective agrees with the animal."""
    pairs: Pairs = set()
    who = random_np(rng, "pa", bare=False)
    pairs.update(pairs_of(who))
    verb = rng.choice(tuple(v for v in VERBS if VERBS[v].objects.strip("pa")))
    thing = obj(rng, VERBS[verb].objects.replace("p", ""), pairs)
    past = rng.random() < 0.7
    negated = rng.random() < 0.6 or (past and VERBS[verb].en_past is None)
    en, es = clause(who, verb, thing, tense="past" if past else "present", negated=negated,
                    contracted=rng.random() < 0.5)
    noun = NOUNS[who[2]]
    pronoun = "they" if who[3] else "it" if noun.kind == "a" else "she" if noun.gender == "f" else "he"
    adjective = rng.choice(tuple(a for a, item in ADJECTIVES.items() if item.copula == "estar"
                                 and a not in NOT_ANIMATE_PREDICATES))
    degree_en, degree_es = rng.choice((("too", "demasiado"), ("very", "muy"), ("so", "tan"), ("", "")))
    be_en, be_es = _WAS[who[3]] if past else (("are", "están") if who[3] else ("is", "está"))
    tail_en = " ".join(w for w in (pronoun, be_en, degree_en, adjective) if w)
    tail_es = " ".join(w for w in (be_es, degree_es, ADJECTIVES[adjective].agree(noun.gender, who[3])) if w)
    return f"{en} because {tail_en}", f"{es} porque {tail_es}", pairs
