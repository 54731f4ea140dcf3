"""Language-model task: next-character prediction over sentences from the other grammars.

Sources mix English and Spanish sentences from the first translation grammar
(:mod:`core.tasks.toy_spanish`) with reviews
from the sentiment grammar; targets are empty.
"""

from __future__ import annotations

import random

from core.tasks import sentiment, toy_spanish
from core.tasks.base import Example, Task

MAX_CHARS = 60


def sentence(rng: random.Random) -> str:
    """A random sentence of at most ``MAX_CHARS`` characters: English, Spanish or a review."""
    while True:
        side = rng.randrange(3)
        text = sentiment.sentence(rng) if side == 2 else toy_spanish.sentence(rng)[side]
        if len(text) <= MAX_CHARS:
            return text


def _make(rng: random.Random, n: int) -> list[Example]:
    return [Example(sentence(rng), "") for _ in range(n)]


TASK = Task(
    name="lm",
    description=(
        "Predict the next character of toy English, Spanish and review sentences: "
        "attention looks back along the sentence, often to the start of the current word."
    ),
    architecture="decoder",
    tokenizer_kind="char",
    metric="perplexity",
    examples=(
        "the big dog sees a small cat",
        "el perro grande ve un gato pequeño",
        "the movie was really great",
        "las casas rojas",
        "i did not like the acting",
    ),
    probe="el perro grande ve un gato pequeño",
    make=_make,
    default_sizes=(20000, 1000, 1000),
)
