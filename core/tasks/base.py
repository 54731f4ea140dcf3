"""The shape every built-in task shares: examples, splits and a description.

A task generates its own data from a seed (nothing is downloaded) and splits it
into train / validation / test with no overlap. The trainer and the app only see
this interface.
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal

Architecture = Literal["encoder-decoder", "encoder", "decoder"]
TokenizerKind = Literal["char", "word", "bpe"]
Metric = Literal["exact_match", "accuracy", "perplexity"]


def lower_case(text: str) -> str:
    """Lower-case letter by letter (letters whose lower case is longer, such as "İ", stay as
    typed, so the result has the input's length) and straighten typographic apostrophes."""
    return "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text).replace("\u2019", "'")


def nearest_known(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` known words closest in spelling to an unknown ``word`` (best first), for
    "did you mean ...?" hints: ``nearest_known("kats", vocabulary)`` -> ``["cats", "hats", ...]``."""
    return difflib.get_close_matches(word.lower(), sorted(set(known)), n=n, cutoff=0.6)


@dataclass(frozen=True)
class Example:
    """One input/output pair.

    Attributes:
        source: the input text (for a language model, the whole text).
        target: the expected output text; for a classifier, the label name;
            for a language model, the empty string.
    """

    source: str
    target: str


@dataclass(frozen=True)
class TaskData:
    """The splits of one task; no source appears in two of train/validation/test.

    Attributes:
        train, validation, test: the three disjoint splits.
        extra_tests: named extra held-out sets (e.g. ``"negation"`` for sentiment),
            disjoint from train and validation.
    """

    train: list[Example]
    validation: list[Example]
    test: list[Example]
    extra_tests: dict[str, list[Example]] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A built-in classroom task.

    Attributes:
        name: short identifier (``"reverse"``), used in checkpoints and the CLI.
        description: one sentence for the app's checkpoint picker.
        architecture: which Transformer variant learns it.
        tokenizer_kind: the tokenizer it is meant to be trained with.
        metric: how the test split is scored.
        examples: a few ready-made inputs for the app.
        probe: the fixed input whose attention is recorded during training.
        probe_target: the correct output for ``probe`` (the label for a classifier,
            ``""`` for a language model); sequence probes are run teacher-forced on it.
        labels: class names, for classification tasks only.
        make: ``make(rng, n) -> list[Example]`` draws ``n`` random examples;
            use :meth:`generate` rather than calling it directly.
        default_sizes: (train, validation, test) sizes used by :meth:`generate`.
        normalize: ``normalize(text) -> text`` applied to what a user types before it is
            tokenized (e.g. lower-casing for translation); it keeps the text's length, so
            character offsets still point into what was typed. Use :meth:`normalize_input`.
        trained_lengths: ``(shortest, longest)`` input length (in tokens) the generator draws,
            for tasks whose inputs vary in length; the app can warn outside this range.
        out_of_range: ``out_of_range(text) -> reason or None``: why an input lies outside the domain the
            generator draws from (a date before 1900, an operand over 999), None inside it.
        spelled: ``spelled(word) -> bool`` for a word-level task: the training words kept out of the
            vocabulary and read letter by letter (names, numbers), so the model learns to copy any of them
            (:mod:`core.text.spelling`); None: every training word is in the vocabulary.
        scope: one sentence saying what a model of this task is and where its knowledge ends, for the app's
            note beside the output ("" when the description says it all).
    """

    name: str
    description: str
    architecture: Architecture
    tokenizer_kind: TokenizerKind
    metric: Metric
    examples: tuple[str, ...]
    probe: str
    make: Callable[[random.Random, int], list[Example]]
    labels: tuple[str, ...] | None = None
    default_sizes: tuple[int, int, int] = (8000, 500, 500)
    split: Callable[[random.Random, tuple[int, int, int]], TaskData] | None = None
    probe_target: str = ""
    normalize: Callable[[str], str] | None = None
    trained_lengths: tuple[int, int] | None = None
    out_of_range: Callable[[str], str | None] | None = None
    spelled: Callable[[str], bool] | None = None
    scope: str = ""

    def normalize_input(self, text: str) -> tuple[str, bool]:
        """``(text as the model expects it, whether that differs from what was typed)``.

        ``TASKS["translation"].normalize_input("I have cats")`` -> ``("i have cats", True)``;
        the result always has the same length as ``text``.
        """
        if self.normalize is None:
            return text, False
        normalized = self.normalize(text)
        if len(normalized) != len(text):
            raise ValueError(f"task {self.name!r} normalisation changed the text's length")
        return normalized, normalized != text

    @property
    def probe_example(self) -> Example:
        """The probe as an :class:`Example`."""
        return Example(self.probe, self.probe_target)

    def generate(self, seed: int = 0, sizes: tuple[int, int, int] | None = None) -> TaskData:
        """Draw the three disjoint splits deterministically from ``seed``."""
        sizes = sizes or self.default_sizes
        rng = random.Random(seed)
        if self.split is not None:
            return self.split(rng, sizes)
        return disjoint_split(self.make, rng, sizes)


def disjoint_split(
    make: Callable[[random.Random, int], list[Example]],
    rng: random.Random,
    sizes: tuple[int, int, int],
    max_rounds: int = 50,
) -> TaskData:
    """Draw unique examples (by source) and deal them into three disjoint splits.

    Raises:
        ValueError: when the generator cannot produce enough distinct sources.
    """
    wanted = sum(sizes)
    seen: dict[str, Example] = {}
    for _ in range(max_rounds):
        for example in make(rng, wanted):
            seen.setdefault(example.source, example)
        if len(seen) >= wanted:
            break
    if len(seen) < wanted:
        raise ValueError(f"only {len(seen)} distinct examples available, {wanted} requested")
    pool = list(seen.values())[:wanted]
    n_train, n_val, _ = sizes
    return TaskData(
        train=pool[:n_train],
        validation=pool[n_train : n_train + n_val],
        test=pool[n_train + n_val :],
    )
