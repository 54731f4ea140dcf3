"""The building blocks of the translation grammar: noun phrases, subjects, clauses and predicates,
each returning the English and the Spanish side together (word lists in :mod:`core.tasks.lexicon`).
"""

from __future__ import annotations

import random

from core.tasks.numbers import BIG_NUMBERS, digits, is_digits
from core.tasks.lexicon import (
    ADJECTIVES, ALSO_INTRANSITIVE, BE, DETERMINERS, ENGLISH_BE, GOING, NOUNS, NUMBERS, PRONOUNS,
)
from core.tasks.verbs import PERSONS, VERBS, Verb

Pairs = set[tuple[str, str]]
NounPhrase = tuple[str, str | None, str, bool]  # (determiner or "", adjective or None, English singular noun, plural)

_SINGULAR = ("the", "a", "one", "this", "that", "my", "your", "his", "her", "our", "their")
_PLURAL = ("the", "some", "these", "those", "my", "your", "his", "her", "our", "their", *NUMBERS)
NO_PERSONAL_A = ("have", "want", "buy", "need", "sell")  # may take "the dog" as object
INDEFINITE_ANIMALS = ("see", "find", "watch")  # may take "a dog", "two dogs", "dogs"
INTRANSITIVE = tuple(v for v, verb in VERBS.items() if not verb.objects or v in ALSO_INTRANSITIVE)
TRANSITIVE = tuple(v for v, verb in VERBS.items() if verb.objects)
ANIMATE = tuple(n for n, noun in NOUNS.items() if noun.kind in "pa")
NOT_ANIMATE_PREDICATES = ("hot", "cold")  # "i am cold" is "tengo frío", not "estoy frío"
STRESSED_A = ("agua", "águila")  # feminine nouns beginning with a stressed "a" take "el"/"un" in the singular
TENSES = ("present", "past", "future", "going", "progressive")


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
        form = det if is_digits(det) else DETERMINERS[det][2 * plural + (noun.gender == "f")]
        if form is None:
            raise ValueError(f"{det!r} cannot go with a {'plural' if plural else 'singular'} noun")
        if not plural and noun.es in STRESSED_A:  # "el agua", "un agua" (RAE, DPD "el")
            form = {"la": "el", "una": "un"}.get(form, form)
        es.insert(0, form)
    return " ".join(en), " ".join(es)


def subject_phrase(subject: str | NounPhrase) -> tuple[str, str, str, str, bool]:
    """(English, Spanish, person, gender, plural) of a pronoun or a noun phrase."""
    if isinstance(subject, str):
        if subject not in PRONOUNS:  # a name, copied through
            return subject, subject, "3sg", "m", False
        es, person, gender = PRONOUNS[subject]
        return subject, es, person, gender, person in ("1pl", "3pl")
    en, es = noun_phrase(subject)
    return en, es, "3pl" if subject[3] else "3sg", NOUNS[subject[2]].gender, subject[3]


def object_phrase(obj: str | NounPhrase | None) -> tuple[str, str]:
    """English and Spanish of an object: a person (a name or a person noun) takes the personal "a",
    which joins "el" into "al" ("i help the teacher" -> "ayudo al profesor")."""
    if obj is None:
        return "", ""
    if isinstance(obj, str):
        return obj, f"a {obj}"
    en, es = noun_phrase(obj)
    if NOUNS[obj[2]].kind != "p":
        return en, es
    return en, "al" + es[2:] if es.startswith("el ") else f"a {es}"


def _verb_forms(v: Verb, person: str, tense: str, negated: bool, contracted: bool) -> tuple[str, str]:
    """English and Spanish verb group of ``v`` for a statement."""
    i, third = PERSONS.index(person), person == "3sg"
    if tense in ("going", "progressive"):
        be = ENGLISH_BE[person] + ("n't" if negated and contracted and person != "1sg" else " not" if negated else "")
        en = f"{be} going to {v.en}" if tense == "going" else f"{be} {v.en_ing}"
        es = f"{GOING[i]} a {v.infinitive}" if tense == "going" else f"{BE['estar'][i]} {v.gerund}"
    elif tense == "future":
        en, es = (("won't" if contracted else "will not") if negated else "will") + f" {v.en}", v.future[i]
    elif negated:
        aux = "did" if tense == "past" else "does" if third else "do"
        en, es = (f"{aux}n't {v.en}" if contracted else f"{aux} not {v.en}"), (v.present if tense == "present"
                                                                              else v.preterite)[i]
    elif tense == "past":
        if v.en_past is None:
            raise ValueError(f"the past of {v.en!r} looks like its present; only 'didn't {v.en}' is used")
        en, es = v.en_past, v.preterite[i]
    else:
        en, es = v.en_third if third else v.en, v.present[i]
    return en, f"no {es}" if negated else es


def clause(
    subject: str | NounPhrase, verb: str | Verb, obj: str | NounPhrase | None = None, *, tense: str = "present",
    negated: bool = False, contracted: bool = False, question: bool = False,
) -> tuple[str, str]:
    """English and Spanish of subject + verb (+ object) in one of ``TENSES``: "present", "past",
    "future" ("will"), "going" ("going to" -> "ir a") or "progressive" ("am reading" -> "estoy leyendo").

    ``clause("i", "have", ("", None, "cat", True))`` -> ("i have cats", "yo tengo gatos");
    ``clause(("the", None, "animal", False), "cross", ("the", None, "street", False), tense="past",
    negated=True, contracted=True)`` -> ("the animal didn't cross the street",
    "el animal no cruzó la calle"). A question ("do you have cats?") is only built affirmative.
    A subject or object that is neither a pronoun nor a noun phrase is a name ("maria").
    """
    subject_en, subject_es, person, _, _ = subject_phrase(subject)
    v, i = VERBS[verb] if isinstance(verb, str) else verb, PERSONS.index(person)
    object_en, object_es = object_phrase(obj)
    if question:
        if tense in ("present", "past"):
            aux = "did" if tense == "past" else "does" if person == "3sg" else "do"
            en_head, en_verb = f"{aux} {subject_en}", v.en
            es_verb = (v.present if tense == "present" else v.preterite)[i]
        elif tense == "future":
            en_head, en_verb, es_verb = f"will {subject_en}", v.en, v.future[i]
        else:
            en_head = f"{ENGLISH_BE[person]} {subject_en}"
            en_verb = f"going to {v.en}" if tense == "going" else v.en_ing
            es_verb = f"{GOING[i]} a {v.infinitive}" if tense == "going" else f"{BE['estar'][i]} {v.gerund}"
        en = f"{en_head} {en_verb} {object_en}".strip()
        return en + "?", f"¿ {subject_es} {es_verb} {object_es}".strip() + " ?"
    en_verb, es_verb = _verb_forms(v, person, tense, negated, contracted)
    return f"{subject_en} {en_verb} {object_en}".strip(), f"{subject_es} {es_verb} {object_es}".strip()


def predicate(
    subject: str | NounPhrase, adjective: str, *, negated: bool = False, contracted: bool = False,
    question: bool = False,
) -> tuple[str, str]:
    """Subject + "to be" + adjective: ``ser`` or ``estar`` by the adjective, agreeing with the subject.

    ``predicate("she", "tired")`` -> ("she is tired", "ella está cansada").
    """
    subject_en, subject_es, person, gender, plural = subject_phrase(subject)
    adj = ADJECTIVES[adjective]
    be_en, be_es = ENGLISH_BE[person], BE[adj.copula][PERSONS.index(person)]
    adj_es = adj.agree(gender, plural)
    if question:
        return f"{be_en} {subject_en} {adjective}?", f"¿ {subject_es} {be_es} {adj_es} ?"
    if negated:
        be_en = f"{be_en}n't" if contracted and be_en != "am" else f"{be_en} not"
        be_es = f"no {be_es}"
    return f"{subject_en} {be_en} {adjective}", f"{subject_es} {be_es} {adj_es}"


def random_np(rng: random.Random, kinds: str, *, bare: bool = True, singular_bare: bool = False,
        animal_definite: bool = True) -> NounPhrase:
    """A random noun phrase over nouns of the given classes; half have an adjective.

    ``bare`` allows a plural without determiner ("cats"); ``singular_bare`` a lone singular noun;
    ``animal_definite=False`` keeps animals to "a", "one", "some" and numbers (no personal ``a`` needed).
    """
    noun = rng.choice(_NOUNS_OF[kinds])
    plural = rng.random() < 0.45
    if plural:
        dets = [d for d in _PLURAL if d not in NUMBERS] + ([""] * 4 if bare else [])
        if rng.random() < 0.3:
            roll = rng.random()
            dets = [digits(rng)] if roll < 0.35 else list(BIG_NUMBERS) if roll < 0.55 else list(NUMBERS)
    else:
        dets = list(_SINGULAR) + ([""] * 3 if singular_bare or (bare and NOUNS[noun].kind == "d") else [])
    if NOUNS[noun].kind == "a" and not animal_definite:
        dets = [d for d in dets if d in ("a", "one", "some", "", *NUMBERS, *BIG_NUMBERS) or is_digits(d)] or ["a"]
    adjective = rng.choice(tuple(ADJECTIVES)) if rng.random() < 0.5 else None
    return rng.choice(dets), adjective, noun, plural


class _ByKind(dict):
    def __missing__(self, kinds: str) -> tuple[str, ...]:
        self[kinds] = tuple(n for n, noun in NOUNS.items() if noun.kind in kinds)
        return self[kinds]


_NOUNS_OF: dict[str, tuple[str, ...]] = _ByKind()


def pronoun_or_np(rng: random.Random, kinds: str, pronoun_share: float) -> str | NounPhrase:
    if rng.random() < pronoun_share:
        return rng.choice(tuple(PRONOUNS))
    return random_np(rng, kinds, bare=False)


def pairs_of(*phrases: str | NounPhrase | None) -> Pairs:
    return {(p[2], p[1]) for p in phrases if isinstance(p, tuple) and p[1]}


def pick_tense(rng: random.Random, verb: str) -> tuple[str, bool]:
    """Present 36 % and past 34 % (a third of each negated: "didn't ..."), "will" 15 %, "going to" 7 % and
    "am ...-ing" 8 % (a fifth of those negated)."""
    roll = rng.random()
    if roll < 0.36:
        return "present", roll < 0.12
    if roll < 0.7:
        return "past", roll < 0.36 + 0.34 / 3 or VERBS[verb].en_past is None
    tense = "future" if roll < 0.85 else "going" if roll < 0.92 else "progressive"
    return tense, rng.random() < 0.2
