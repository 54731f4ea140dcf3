"""The first, small English -> Spanish grammar (22 nouns, 8 adjectives, 6 verbs), kept for the ``lm`` task.

The translation task has since grown (:mod:`core.tasks.translation`); the language-model task
still draws its English and Spanish sentences from this grammar, so its data, and the shipped
``lm`` checkpoint measured on it, stay exactly as they were.

Spanish keeps explicit subject pronouns and puts adjectives after the noun, with
articles and adjectives agreeing in gender and number with the noun. People (boy,
girl, man, woman) are only subjects, so no personal "a" is ever needed. The test
split holds out combinations: ``HELD_OUT_PAIRS`` (noun, adjective) never appear
together in train or validation, and every test sentence contains at least one.
"""

from __future__ import annotations

import random

from core.tasks.pools import held_out_pairs

Pairs = set[tuple[str, str]]
NounPhrase = tuple[str, str | None, str, bool]  # (article, adjective, English singular noun, plural)

# English singular -> (English plural, Spanish singular, Spanish plural, gender)
NOUNS: dict[str, tuple[str, str, str, str]] = {
    "car": ("cars", "coche", "coches", "m"),
    "house": ("houses", "casa", "casas", "f"),
    "dog": ("dogs", "perro", "perros", "m"),
    "cat": ("cats", "gato", "gatos", "m"),
    "book": ("books", "libro", "libros", "m"),
    "table": ("tables", "mesa", "mesas", "f"),
    "flower": ("flowers", "flor", "flores", "f"),
    "horse": ("horses", "caballo", "caballos", "m"),
    "city": ("cities", "ciudad", "ciudades", "f"),
    "shoe": ("shoes", "zapato", "zapatos", "m"),
    "door": ("doors", "puerta", "puertas", "f"),
    "hat": ("hats", "sombrero", "sombreros", "m"),
    "window": ("windows", "ventana", "ventanas", "f"),
    "boat": ("boats", "barco", "barcos", "m"),
    "chair": ("chairs", "silla", "sillas", "f"),
    "apple": ("apples", "manzana", "manzanas", "f"),
    "letter": ("letters", "carta", "cartas", "f"),
    "bed": ("beds", "cama", "camas", "f"),
    "boy": ("boys", "niño", "niños", "m"),
    "girl": ("girls", "niña", "niñas", "f"),
    "man": ("men", "hombre", "hombres", "m"),
    "woman": ("women", "mujer", "mujeres", "f"),
}
PEOPLE = ("boy", "girl", "man", "woman")
OBJECTS = tuple(noun for noun in NOUNS if noun not in PEOPLE)
# English -> Spanish (masculine singular, feminine singular, masculine plural, feminine plural)
ADJECTIVES: dict[str, tuple[str, str, str, str]] = {
    "red": ("rojo", "roja", "rojos", "rojas"),
    "big": ("grande", "grande", "grandes", "grandes"),
    "small": ("pequeño", "pequeña", "pequeños", "pequeñas"),
    "new": ("nuevo", "nueva", "nuevos", "nuevas"),
    "old": ("viejo", "vieja", "viejos", "viejas"),
    "white": ("blanco", "blanca", "blancos", "blancas"),
    "black": ("negro", "negra", "negros", "negras"),
    "green": ("verde", "verde", "verdes", "verdes"),
}
# English base form -> (English third person singular, Spanish forms for the PERSONS below)
VERBS: dict[str, tuple[str, tuple[str, str, str, str, str]]] = {
    "have": ("has", ("tengo", "tienes", "tiene", "tenemos", "tienen")),
    "see": ("sees", ("veo", "ves", "ve", "vemos", "ven")),
    "want": ("wants", ("quiero", "quieres", "quiere", "queremos", "quieren")),
    "buy": ("buys", ("compro", "compras", "compra", "compramos", "compran")),
    "need": ("needs", ("necesito", "necesitas", "necesita", "necesitamos", "necesitan")),
    "find": ("finds", ("encuentro", "encuentras", "encuentra", "encontramos", "encuentran")),
}
PERSONS = ("1sg", "2sg", "3sg", "1pl", "3pl")
PRONOUNS: dict[str, tuple[str, str]] = {
    "i": ("yo", "1sg"),
    "you": ("tú", "2sg"),
    "he": ("él", "3sg"),
    "she": ("ella", "3sg"),
    "we": ("nosotros", "1pl"),
    "they": ("ellos", "3pl"),
}
ARTICLES = {
    ("the", False): ("el", "la"),
    ("the", True): ("los", "las"),
    ("a", False): ("un", "una"),
    ("", True): ("", ""),
}
HELD_OUT_PAIRS = held_out_pairs(tuple(NOUNS), tuple(ADJECTIVES))


def noun_phrase(phrase: NounPhrase) -> tuple[str, str]:
    """The English and Spanish of one noun phrase.

    ``("the", "red", "house", True)`` gives ("the red houses", "las casas rojas"). ``phrase`` is
    (article, adjective or None, English singular noun, plural); the article is ``"the"``,
    ``"a"`` (singular only; written "an" before a vowel) or ``""`` (bare plural only).
    """
    article, adjective, noun, plural = phrase
    en_plural, es_singular, es_plural, gender = NOUNS[noun]
    feminine = gender == "f"
    en = [w for w in (adjective, en_plural if plural else noun) if w]
    es = [es_plural if plural else es_singular]
    if adjective:
        es.append(ADJECTIVES[adjective][2 * plural + feminine])
    if article:
        en.insert(0, "an" if article == "a" and en[0][0] in "aeiou" else article)
        es.insert(0, ARTICLES[article, plural][feminine])
    return " ".join(en), " ".join(es)


def clause(subject: str | NounPhrase, verb: str, obj: NounPhrase) -> tuple[str, str]:
    """English and Spanish for subject (a pronoun such as ``"i"`` or a noun phrase), verb (base form), object.

    ``clause("i", "have", ("", None, "cat", True))`` -> ("i have cats", "yo tengo gatos").
    """
    if isinstance(subject, str):
        subject_en, (subject_es, person) = subject, PRONOUNS[subject]
    else:
        (subject_en, subject_es), person = noun_phrase(subject), "3pl" if subject[3] else "3sg"
    third, forms = VERBS[verb]
    object_en, object_es = noun_phrase(obj)
    return (
        f"{subject_en} {third if person == '3sg' else verb} {object_en}",
        f"{subject_es} {forms[PERSONS.index(person)]} {object_es}",
    )


def _random_np(rng: random.Random, nouns: tuple[str, ...], bare_plural: bool) -> NounPhrase:
    articles = [("the", False), ("the", True), ("a", False)] + ([("", True)] if bare_plural else [])
    article, plural = rng.choice(articles)
    noun = rng.choice(nouns)
    adjective = rng.choice(tuple(ADJECTIVES)) if rng.random() < 0.5 else None
    return article, adjective, noun, plural


def tagged_sentence(rng: random.Random) -> tuple[str, str, Pairs]:
    """A random (English, Spanish, (noun, adjective) pairs used) triple.

    One in ten is a bare noun phrase ("the red car"); the rest are
    subject-verb-object clauses ("the big dog sees a small cat").
    """
    if rng.random() < 0.1:
        phrase = _random_np(rng, tuple(NOUNS), bare_plural=False)
        return (*noun_phrase(phrase), {(phrase[2], phrase[1])} if phrase[1] else set())
    subject: str | NounPhrase
    if rng.random() < 0.4:
        subject = rng.choice(tuple(PRONOUNS))
    else:
        subject = _random_np(rng, tuple(NOUNS), bare_plural=False)
    verb = rng.choice(tuple(VERBS))
    obj = _random_np(rng, OBJECTS, bare_plural=True)
    phrases = [obj] if isinstance(subject, str) else [subject, obj]
    return (
        *clause(subject, verb, obj),
        {(noun, adjective) for _, adjective, noun, _ in phrases if adjective},
    )


def sentence(rng: random.Random) -> tuple[str, str]:
    """A random (English, Spanish) sentence pair from the grammar."""
    en, es, _ = tagged_sentence(rng)
    return en, es
