"""Coverage: how much of the output attended to each source word, and the words it seems to have left out.

For an encoder-decoder explanation, a source token's *coverage* is the cross-attention it received summed
over every output row (the row that predicts ``<eos>`` included), in the last layer, averaged over its
heads. Each output row is a distribution over the source, so the coverages add up to the number of output
rows. A word the output translated draws about one row's worth; a word the decoder never looked at draws
next to nothing ("yesterday i went to the market with my mother" -> "ayer yo fui al mercado ." gives
"my" 0.06 and "mother" 0.07 against ≥ 0.4 for every translated word).

A *word* is a run of the typed text without spaces (a name read letter by letter is one word, and so is
"didn't"); its coverage is the mean of its tokens'. Punctuation is not a word. A word under
:data:`COVERAGE_THRESHOLD` is flagged "not translated?"; the threshold was set on held-out sentences with a
dropped phrase (:mod:`core.inspect.coverage_check`, ``python -m core coverage``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from core.inspect.records import Explanation
from core.text.tokenizer import SPECIAL_TOKENS

#: Below this mean coverage a source word is flagged "not translated?" (set by ``python -m core coverage``
#: on the shipped translation model: the largest F1 on seed 1's held-out sentences, precision ≥ 0.5).
COVERAGE_THRESHOLD = 0.26
_WORDLIKE = re.compile(r"\w")
_AFTER_END = (SPECIAL_TOKENS[0], SPECIAL_TOKENS[2])  # <pad>, <eos> as a decoder input: past the output's end


@dataclass(frozen=True)
class WordCoverage:
    """One source word and the output's attention to it.

    Attributes:
        word: the word as typed (``text[start:end]``).
        start, end: its character span in the explanation's text.
        tokens: the indices of its source tokens.
        coverage: the mean over its tokens of each token's summed cross-attention.
    """

    word: str
    start: int
    end: int
    tokens: tuple[int, ...]
    coverage: float


def token_coverage(explanation: Explanation) -> np.ndarray:
    """float32 (S,): each source token's cross-attention summed over the output rows (last layer, mean
    over heads); padding columns count 0, and rows after the output's end (a batch's padding) are left out.

    Raises:
        ValueError: the explanation has no cross-attention (not an encoder-decoder).
    """
    if "cross" not in explanation.attention:
        raise ValueError("coverage needs an encoder-decoder's cross-attention")
    maps = explanation.attention["cross"]
    last = np.asarray(maps[maps.shape[0] - 1], dtype=np.float32)  # (H, Tq, Tk)
    rows = np.array([t not in _AFTER_END for t in explanation.target_tokens])  # (Tq,)
    columns = np.array([t != SPECIAL_TOKENS[0] for t in explanation.source_tokens])  # (Tk,)
    summed = last.mean(axis=0)[rows].sum(axis=0)  # (Tk,)
    return np.where(columns, summed, 0.0).astype(np.float32)


def word_coverage(explanation: Explanation) -> tuple[WordCoverage, ...]:
    """The source's words (runs of the typed text without spaces, punctuation tokens left out) in reading
    order, each with the mean coverage of its tokens."""
    per_token = token_coverage(explanation)
    text = explanation.text
    words: list[WordCoverage] = []
    for match in re.finditer(r"\S+", text):
        tokens = tuple(i for i, (a, b) in enumerate(explanation.source_offsets)
                       if match.start() <= a < match.end() and b > a and _WORDLIKE.search(text[a:b]))
        if tokens:
            start, end = explanation.source_offsets[tokens[0]][0], explanation.source_offsets[tokens[-1]][1]
            words.append(WordCoverage(text[start:end], start, end, tokens,
                                      float(per_token[list(tokens)].mean())))
    return tuple(words)


def untranslated(explanation: Explanation, threshold: float = COVERAGE_THRESHOLD) -> tuple[WordCoverage, ...]:
    """The source words whose coverage is under ``threshold``: the output may have left them out. Empty for a
    model without cross-attention."""
    if "cross" not in explanation.attention:
        return ()
    return tuple(word for word in word_coverage(explanation) if word.coverage < threshold)
