"""The building blocks of the translation grammar: noun phrases, subjects, clauses and predicates,
each returning the English and the Spanish side together (word lists in :mod:`core.tasks.lexicon`).
"""

from __future__ import annotations

import random

from core.tasks.lexicon import (
    ADJECTIVES, ALSO_INTRANSITIVE, BE, DETERMINERS, ENGLISH_BE, NOUNS, NUMBERS, PERSONS, PRONOUNS, VERBS,
)

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


def pronoun_or_np(rng: random.Random, kinds: str, pronoun_share: float) -> str | NounPhrase:
    if rng.random() < pronoun_share:
        return rng.choice(tuple(PRONOUNS))
    return random_np(rng, kinds, bare=False)


def pairs_of(*phrases: str | NounPhrase | None) -> Pairs:
    return {(p[2], p[1]) for p in phrases if isinstance(p, tuple) and p[1]}


def pick_tense(rng: random.Random, verb: str) -> tuple[str, bool]:
    """Present 50 % (a third of it negated), past 50 % (a third of it "didn't ...")."""
    roll = rng.random()
    if roll < 0.5:
        return "present", roll < 0.5 / 3
    return "past", roll < 0.5 + 0.5 / 3 or VERBS[verb].en_past is None
