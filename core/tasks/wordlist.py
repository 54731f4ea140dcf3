"""Every word the translation grammar writes, English and Spanish: what its tokenizer's vocabulary
may hold. Anything else a sentence contains (a name, a number in digits) is spelled letter by letter
(:mod:`core.text.spelling`), and made-up names are never drawn from this list."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.tasks import activities, everyday
from core.tasks.activities import negative_command
from core.tasks.lexicon import ADJECTIVES, BE, DETERMINERS, ENGLISH_BE, GOING, NOUNS, PRONOUNS
from core.tasks.verbs import VERBS
from core.tasks.numbers import BIG_NUMBERS, is_digits

# the words the sentence builders write themselves (not in a table): English, then Spanish
ENGLISH_FUNCTION_WORDS = """
there is are where do does did not n't no don didn doesn won t ' s m re ll will going to a in at near on with
and but because or , . ? please it was were it's very too so years old age today tomorrow yesterday birthday an
some one the like likes liked be isn wasn aren weren they he she we you i
"""
SPANISH_FUNCTION_WORDS = """
hay dónde no a al del en cerca de con y e pero porque o u , . ? ¿ por favor estaba estaban está están muy
demasiado tan años cumpleaños hoy mañana ayer es fue l me te le les nos él ella ellos todos todas el la los las mi tu su
nuestro nuestra mis tus sus gusta gustan gustó gustaron hace hacía hará yo tú nosotros
"""
FUNCTION_WORDS = ENGLISH_FUNCTION_WORDS + SPANISH_FUNCTION_WORDS
#: Contraction pieces the word tokenizer splits off ("didn't" -> didn ' t): not words of their own.
FRAGMENTS = frozenset({"t", "s", "m", "re", "ll", "ve", "d", "n"})


def _words(texts: Iterable[str]) -> set[str]:
    return {w for text in texts for w in re.findall(r"\w+|[^\w\s]+", text)}


def grammar_words() -> frozenset[str]:
    """The English and Spanish words of every table of the grammar (lower case)."""
    texts: list[str] = FUNCTION_WORDS.split()
    for noun in NOUNS.values():
        texts += [noun.en, noun.en_plural, noun.es, noun.es_plural]
    for name, adjective in ADJECTIVES.items():
        texts += [name, *adjective.forms]
    for verb in VERBS.values():
        texts += [verb.en, verb.en_third, verb.en_past or "", verb.en_ing, verb.infinitive, *verb.present,
                  *verb.preterite, *verb.future, verb.gerund, verb.imperative, negative_command(verb)]
    texts += [*PRONOUNS, *(es for es, _, _ in PRONOUNS.values()), *GOING, *ENGLISH_BE.values()]
    texts += [*DETERMINERS, *(form for forms in DETERMINERS.values() for form in forms if form)]
    texts += [*BIG_NUMBERS, *BIG_NUMBERS.values(), *(f for forms in BE.values() for f in forms)]
    for table in (everyday.DAYS, everyday.MONTHS, everyday.FREQUENCY, everyday.DEGREE, everyday.WEATHER,
                  everyday.CONTRACTIONS, everyday.ENGLISH_WAS, activities.CLITICS, everyday.CONJUNCTIONS):
        texts += [*table, *table.values()]
    texts += [w for tense in everyday.TIME.values() for pair in tense.items() for w in pair]
    texts += [w for forms in everyday.RAIN.values() for w in forms] + [f"{r}{e}" for r in everyday.RAIN
                                                                       for e in ("", "s", "ed", "ing")]
    texts += [w for adjective, (noun, much) in everyday.IDIOMS.items() for w in (adjective, noun, much)]
    texts += [w for forms in everyday.TENER.values() for w in forms]
    texts += [w for row in activities.ACTIVITIES for w in row] + [w for pair in activities.FEMININE.values()
                                                                  for w in pair]
    texts += [w for s, (es, article) in activities.SUBJECTS.items() for w in (s, es, article)]
    return frozenset(_words(texts))


def english_words() -> frozenset[str]:
    """The English words of every table of the grammar (lower case, split as the word tokenizer splits them:
    "didn't" gives "didn" and "t")."""
    texts: list[str] = ENGLISH_FUNCTION_WORDS.split()
    texts += [form for noun in NOUNS.values() for form in (noun.en, noun.en_plural)]
    texts += [*ADJECTIVES, *PRONOUNS, *ENGLISH_BE.values(), *DETERMINERS, *BIG_NUMBERS, *everyday.ENGLISH_WAS.values()]
    for verb in VERBS.values():
        texts += [verb.en, verb.en_third, verb.en_past or "", verb.en_ing]
    for table in (everyday.DAYS, everyday.MONTHS, everyday.FREQUENCY, everyday.DEGREE, everyday.WEATHER,
                  activities.CLITICS, everyday.CONJUNCTIONS, everyday.IDIOMS, activities.FEMININE, activities.SUBJECTS):
        texts += list(table)
    texts += [*everyday.CONTRACTIONS, *everyday.CONTRACTIONS.values()]
    texts += [w for tense in everyday.TIME.values() for w in tense]
    texts += [f"{r}{e}" for r in everyday.RAIN for e in ("", "s", "ed", "ing")]
    texts += [w for row in activities.ACTIVITIES for w in row[:2]]
    return frozenset(w for w in _words(texts) if re.fullmatch(r"[a-z]+", w))


GRAMMAR_WORDS = grammar_words()
ENGLISH_WORDS = english_words()


def english_word_count() -> int:
    """How many English words the grammar writes: :data:`ENGLISH_WORDS` without the contraction pieces."""
    return len(ENGLISH_WORDS - FRAGMENTS)


def spelled(word: str) -> bool:
    """Whether the translation tokenizer spells ``word`` rather than keeping it in its vocabulary: a
    number in digits or a name (any word the grammar's tables do not hold; a name that is also a word
    of the grammar, "rosa", stays a word)."""
    return is_digits(word) or word not in GRAMMAR_WORDS
