"""How well the coverage flag (:mod:`core.inspect.coverage`) finds the words a translation left out.

The held-out sentences are the translation task's test split (noun-adjective pairs and names never seen in
training). Each is used twice:

* *full*: as it is. When the model's output equals the reference, no word is missing: every word is a
  negative.
* *dropped phrase*: with a prepositional phrase the model cannot translate added before its end ("i see the
  dog" -> "i see the dog with my mother", a preposition the grammar lacks + one of its noun phrases). When the
  output equals the reference of the sentence WITHOUT the phrase, the model silently dropped it: the phrase's
  words are the positives (missing from the output), the sentence's own words the negatives.

Sentences whose output is neither (a wrong translation, a phrase partly copied) are left out and counted:
which of their words are missing is not known. :func:`choose_threshold` picks the flag's threshold on one
seed's sentences (the largest F1 with precision ≥ 0.5: under it a word is missing in most cases);
:func:`measure` scores a threshold on another seed's.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.inspect.coverage import word_coverage
from core.inspect.explainer import explain_batch
from core.io.checkpoint import Checkpoint
from core.tasks import Example, get_task
from core.tasks.phrases import noun_phrase, random_np
from core.tasks.translation import LECTURE_EXAMPLES

log = logging.getLogger(__name__)

#: Prepositions the shipped grammar never writes before a noun phrase: the model has not learnt them.
DROPPED_PREPOSITIONS = ("with", "for", "from", "about", "by", "of")
BATCH = 32  # sentences explained together (padding rows and columns count 0 in the coverage)


@dataclass(frozen=True)
class Case:
    """One held-out sentence: ``source`` typed, ``expected`` the output that makes its labels known, and the
    character span of the words that output leaves out (``(0, 0)``: none)."""

    source: str
    expected: str
    missing_span: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Labelled:
    """The coverage of every word of the decidable cases, and whether each is missing from the output."""

    coverage: np.ndarray  # (W,) float
    missing: np.ndarray  # (W,) bool
    sentences: int  # decidable sentences
    left_out: int  # sentences whose output was neither expected one


@dataclass(frozen=True)
class FlagScore:
    """Precision and recall of "coverage < threshold" against the missing words."""

    threshold: float
    precision: float
    recall: float
    words: int
    missing_words: int
    sentences: int
    left_out: int


def cases(seed: int, n: int) -> list[Case]:
    """``n`` held-out sentences of the translation task (seed ``seed``), each as a full case and as a
    dropped-phrase case."""
    task = get_task("translation")
    rng = random.Random(seed)
    test = task.generate(seed, (len(LECTURE_EXAMPLES), 1, n)).test[:n]
    out: list[Case] = []
    for example in test:
        out.append(Case(example.source, example.target))
        out.append(_with_phrase(rng, example))
    return out


def _with_phrase(rng: random.Random, example: Example) -> Case:
    """The example with "PREPOSITION NOUN-PHRASE" before its final punctuation; expected: its own reference."""
    phrase = random_np(rng, rng.choice(("p", "l", "t")), bare=False)
    words = f"{rng.choice(DROPPED_PREPOSITIONS)} {noun_phrase(phrase)[0]}"
    body = example.source.rstrip("?.")
    start = len(body) + 1
    return Case(f"{body} {words}{example.source[len(body):]}", example.target, (start, start + len(words)))


def label(model: Checkpoint, items: Sequence[Case]) -> Labelled:
    """Explain every case (greedy, in padded batches) and label the words of those whose output is the expected one."""
    coverage: list[float] = []
    missing: list[bool] = []
    left_out = 0
    explanations = [e for i in range(0, len(items), BATCH)
                    for e in explain_batch(model, [case.source for case in items[i:i + BATCH]])]
    for case, explanation in zip(items, explanations):
        if explanation.prediction.text != case.expected:
            left_out += 1
            continue
        low, high = case.missing_span
        for word in word_coverage(explanation):
            coverage.append(word.coverage)
            missing.append(low <= word.start < high)
    log.info("coverage check: %d decidable sentences, %d left out", len(items) - left_out, left_out)
    return Labelled(np.asarray(coverage, np.float64), np.asarray(missing, bool), len(items) - left_out, left_out)


def score(labelled: Labelled, threshold: float) -> FlagScore:
    """Precision and recall of the flag at ``threshold`` (precision 1.0 when nothing is flagged)."""
    flagged = labelled.coverage < threshold
    hits = int((flagged & labelled.missing).sum())
    precision = hits / int(flagged.sum()) if flagged.any() else 1.0
    recall = hits / int(labelled.missing.sum()) if labelled.missing.any() else 1.0
    return FlagScore(threshold, precision, recall, len(labelled.missing), int(labelled.missing.sum()),
                     labelled.sentences, labelled.left_out)


def choose_threshold(labelled: Labelled, grid: Sequence[float] = tuple(np.arange(2, 100) / 100)) -> float:
    """The threshold of ``grid`` with the largest F1 among those whose precision is at least 0.5."""
    best, best_f1 = float(grid[0]), -1.0
    for threshold in grid:
        result = score(labelled, float(threshold))
        if result.precision < 0.5 or result.precision + result.recall == 0:
            continue
        f1 = 2 * result.precision * result.recall / (result.precision + result.recall)
        if f1 > best_f1:
            best, best_f1 = round(float(threshold), 2), f1
    return best


def measure(model: Checkpoint, threshold: float, seed: int = 2, n: int = 150) -> FlagScore:
    """The flag's precision and recall at ``threshold`` on ``n`` held-out sentences of ``seed``."""
    return score(label(model, cases(seed, n)), threshold)
