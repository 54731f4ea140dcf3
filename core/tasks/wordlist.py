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

# the words the sentence builders write themselves (not in a table)
FUNCTION_WORDS = """
there is are hay where dónde do does did not n't no don didn doesn won t ' s m re ll will going to a al del
en in at near on cerca de with con and y e but pero because porque or o u , . ? ¿ please por favor
it was were it's estaba estaban está están very too so muy demasiado tan years old años age
today tomorrow yesterday is was birthday cumpleaños hoy mañana ayer es fue l me te le les nos él ella ellos
an some one todos todas the el la los las mi tu su nuestro nuestra mis tus sus gusta gustan gustó gustaron
like likes liked to hace hacía hará be isn wasn aren weren they he she we you i yo tú nosotros
"""


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


GRAMMAR_WORDS = grammar_words()


def spelled(word: str) -> bool:
    """Whether the translation tokenizer spells ``word`` rather than keeping it in its vocabulary: a
    number in digits or a name (any word the grammar's tables do not hold; a name that is also a word
    of the grammar, "rosa", stays a word)."""
    return is_digits(word) or word not in GRAMMAR_WORDS
