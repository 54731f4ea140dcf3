"""Sentiment task: label short generated reviews "negative" or "positive".

A review praises or criticises a subject ("the plot was really boring", "i loved
the food"); a negation ("not", "never", "did not", "not ... at all") flips its
polarity, so "not bad" is positive. About half the training reviews are negated.
The "negation" extra test set holds negated reviews of ``HELD_OUT_PAIRS``
(subject, adjective-or-verb) combinations that are never negated in train or
validation (they do appear there un-negated).

What people type first is often a single word or a short phrase ("boring", "very good",
"not bad", "boring movie", "i loved it"): :func:`short_phrases` lists every such phrase of the
grammar, and all of them are in the training split except the adjective-noun phrases of
``SHORT_HELD_OUT`` ("dull plot"), which form the "short" extra test set. Inputs are lower-cased
(:func:`core.tasks.base.lower_case`).
"""

from __future__ import annotations

import itertools
import random

from core.tasks.base import Example, Task, TaskData, lower_case
from core.tasks.pools import draw_pools, held_out_pairs

LABELS = ("negative", "positive")
SUBJECTS = tuple(
    f"the {noun}"
    for noun in "movie film plot acting food service music book ending story hotel staff show game "
    "soundtrack dialogue script meal room cast".split()
)
POSITIVE = tuple("good great excellent wonderful amazing fun brilliant lovely enjoyable superb".split())
NEGATIVE = tuple("bad terrible awful boring horrible dull poor disappointing bland weak".split())
# verb -> (past tense, polarity: True for positive)
VERBS = {
    "like": ("liked", True),
    "love": ("loved", True),
    "enjoy": ("enjoyed", True),
    "hate": ("hated", False),
}
INTENSIFIERS = ("really", "very", "extremely", "so")
NEGATIONS = ("not", "never")
PREFIXES = ("", "", "i think", "honestly", "overall")
NEGATION_SIZE = 300
HELD_OUT_PAIRS = held_out_pairs(SUBJECTS, POSITIVE + NEGATIVE + tuple(VERBS))

NOUNS = tuple(subject.split()[1] for subject in SUBJECTS)
SHORT_HELD_OUT = held_out_pairs(NOUNS, POSITIVE + NEGATIVE, one_in=5)

_POLARITY = dict.fromkeys(POSITIVE, True) | dict.fromkeys(NEGATIVE, False)
_POLARITY |= {form: positive for verb, (past, positive) in VERBS.items() for form in (verb, past)}


def label_of(text: str) -> str:
    """The label the grammar gives ``text``: its adjective or verb's polarity, flipped by a negation.

    Raises:
        ValueError: when ``text`` has no adjective or verb from the grammar.
    """
    words = text.split()
    polarities = [_POLARITY[word] for word in words if word in _POLARITY]
    if not polarities:
        raise ValueError(f"no sentiment word in {text!r}")
    negated = any(word in NEGATIONS for word in words)
    return LABELS[polarities[0] != negated]


def _maybe(rng: random.Random, words: tuple[str, ...]) -> str:
    return rng.choice(words) if rng.random() < 0.5 else ""


def tagged_review(rng: random.Random) -> tuple[str, bool, tuple[str, str] | None]:
    """A random review, whether it is negated, and its (subject, adjective-or-verb) pair.

    The pair is ``None`` for subject-less fragments such as "not bad".
    """
    negated = rng.random() < 0.5
    kind = rng.random()
    if kind < 0.15:
        adjective = rng.choice(POSITIVE + NEGATIVE)
        if negated:
            words = rng.choice([["not", _maybe(rng, INTENSIFIERS), adjective], ["not", adjective, "at all"]])
        else:
            words = [_maybe(rng, INTENSIFIERS), adjective]
        return " ".join(w for w in words if w), negated, None
    subject = rng.choice(SUBJECTS)
    if kind < 0.35:
        verb = rng.choice(tuple(VERBS))
        past = VERBS[verb][0]
        if negated:
            middle = rng.choice(
                [
                    ["did", "not", verb, subject],
                    ["did", "not", verb, subject, "at", "all"],
                    ["never", past, subject],
                ]
            )
        else:
            middle = [_maybe(rng, ("really",)), past, subject]
        words, predicate = ["i", *middle], verb
    else:
        predicate = rng.choice(POSITIVE + NEGATIVE)
        copula = rng.choice(("was", "is"))
        if negated:
            middle = rng.choice(
                [
                    ["not", _maybe(rng, INTENSIFIERS), predicate],
                    ["not", predicate, "at", "all"],
                    ["never", predicate],
                ]
            )
        else:
            middle = [_maybe(rng, INTENSIFIERS), predicate]
        words = [subject, copula, *middle]
    text = " ".join(w for w in [rng.choice(PREFIXES), *words] if w)
    return text, negated, (subject, predicate)


def sentence(rng: random.Random) -> str:
    """A random review from the grammar."""
    return tagged_review(rng)[0]


def short_phrases() -> dict[str, tuple[str, str] | None]:
    """Every single word and short phrase of the grammar -> its (noun, adjective) pair or None.

    Single adjectives, intensified ("very boring") and negated ("not boring") ones, adjective +
    noun ("boring movie", "the boring movie") and "i loved it"-style verb phrases.
    """
    adjectives = POSITIVE + NEGATIVE
    phrases: dict[str, tuple[str, str] | None] = {}
    for adjective in adjectives:
        phrases[adjective] = None
        phrases[f"not {adjective}"] = None
        for intensifier in INTENSIFIERS:
            phrases[f"{intensifier} {adjective}"] = None
        for noun in NOUNS:
            phrases[f"{adjective} {noun}"] = phrases[f"the {adjective} {noun}"] = (noun, adjective)
    for verb, (past, _) in VERBS.items():
        for text in (f"i {past} it", f"{past} it", f"i {verb} it", f"i did not {verb} it", f"i really {past} it"):
            phrases[text] = None
    return phrases


SHORT_PHRASES = short_phrases()


def _make(rng: random.Random, n: int) -> list[Example]:
    texts = [sentence(rng) for _ in range(n)]
    return [Example(text, label_of(text)) for text in texts]


def _draw(rng: random.Random) -> tuple[tuple[str, str], Example]:
    text, negated, pair = tagged_review(rng)
    label = label_of(text)
    if text in SHORT_PHRASES:  # dealt separately (see _split)
        return (label, "short"), Example(text, label)
    return (label, "negation" if negated and pair in HELD_OUT_PAIRS else "regular"), Example(text, label)


def _halves(size: int) -> tuple[int, int]:
    """How many negative and positive examples a split of ``size`` holds."""
    return size // 2, size - size // 2


def _split(rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    """Draw class-balanced train/validation/test splits plus the balanced "negation" extra test set."""
    groups = [("regular", size) for size in sizes] + [("negation", NEGATION_SIZE)]
    wanted: dict[tuple[str, str], int] = {}
    for group, size in groups:
        for label, count in zip(LABELS, _halves(size), strict=True):
            wanted[label, group] = wanted.get((label, group), 0) + count
    pools = draw_pools(_draw, rng, wanted, max_draws=100 * sum(wanted.values()))
    queues = {key: iter(pool) for key, pool in pools.items()}
    splits = []
    for group, size in groups:
        split = [
            example
            for label, count in zip(LABELS, _halves(size), strict=True)
            for example in itertools.islice(queues[label, group], count)
        ]
        rng.shuffle(split)
        splits.append(split)
    train, validation, test, negation = splits
    short = [Example(text, label_of(text)) for text, pair in SHORT_PHRASES.items() if pair not in SHORT_HELD_OUT]
    held_out = [Example(text, label_of(text)) for text, pair in SHORT_PHRASES.items() if pair in SHORT_HELD_OUT]
    train = [*short, *train][: len(train)]  # every short phrase is trained on (at the default sizes)
    rng.shuffle(train)
    return TaskData(train, validation, test, extra_tests={"negation": negation, "short": held_out})


TASK = Task(
    name="sentiment",
    description=(
        "Classify a short review, phrase or single word as positive or negative; the 'negation' test set "
        "negates subject-adjective combinations never negated in training, the 'short' one holds "
        "adjective-noun phrases never seen in training."
    ),
    architecture="encoder",
    tokenizer_kind="word",
    metric="accuracy",
    examples=(
        "the movie was really great",
        "the plot is not good at all",
        "i did not like the acting",
        "boring",
        "not bad",
        "honestly the ending was never boring",
    ),
    probe="the plot is not good at all",
    probe_target="negative",
    labels=LABELS,
    make=_make,
    default_sizes=(8000, 500, 500),
    split=_split,
    normalize=lower_case,
)
