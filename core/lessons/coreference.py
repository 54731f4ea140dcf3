"""What a real encoder measurably does with the notes' "it" example: which heads link a word to
another, and at which rank among all heads. Pages state these measured ranks instead of a claim.

Attention weights show where information flows in one layer; they are not an explanation of the
model's decision (a head may attend to "animal" without the output depending on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from core.inspect.analysis import head_finder


@dataclass(frozen=True)
class HeadLink:
    """One head whose strongest link from the query word lands on the target word.

    Attributes:
        rank: 1-based place among all heads in :func:`core.analysis.head_finder`'s ranking.
        layer, head: 0-based indices (shown on screen as layer + 1, head + 1).
        weight: the query's attention weight on the target in that head.
    """

    rank: int
    layer: int
    head: int
    weight: float

    @property
    def name(self) -> str:
        """"layer 4 head 2": numbered from 1, as everywhere on screen."""
        return f"layer {self.layer + 1} head {self.head + 1}"


@dataclass(frozen=True)
class LinkReport:
    """Every head of an encoder ranked from ``word``, and the ones that land on ``target``.

    Attributes:
        word, target: the two words. n_heads: heads ranked (layers × heads).
        links: heads whose strongest link is ``word`` → ``target``, best rank first.
        top: (rank, layer, head, key word, weight) of the first ``top_n`` heads of the ranking.
    """

    word: str
    target: str
    n_heads: int
    links: tuple[HeadLink, ...]
    top: tuple[tuple[int, int, int, str, float], ...]

    def links_in_top(self, n: int) -> tuple[HeadLink, ...]:
        """The linking heads that rank in the first ``n``."""
        return tuple(link for link in self.links if link.rank <= n)


def links_from_ranking(ranked: Sequence[dict[str, Any]], tokens: Sequence[str], word: str, target: str,
                       top_n: int = 8) -> LinkReport:
    """A :func:`core.analysis.head_finder` ranking read as a :class:`LinkReport` for ``word`` → ``target``."""
    links = tuple(HeadLink(rank, r["layer"], r["head"], r["weight"]) for rank, r in enumerate(ranked, 1)
                  if r["key"] is not None and tokens[r["key"]] == target)
    top = tuple((rank, r["layer"], r["head"], tokens[r["key"]] if r["key"] is not None else "", r["weight"])
                for rank, r in enumerate(ranked[:top_n], 1))
    return LinkReport(word, target, len(ranked), links, top)


def head_links(maps: np.ndarray, tokens: Sequence[str], word: str, target: str, top_n: int = 8) -> LinkReport:
    """Rank every head of ``maps`` (L, H, T, T) from the first ``word`` token and report the heads
    whose strongest link lands on ``target`` (first and last tokens, [CLS]/[SEP], left out).

    Raises:
        ValueError: ``word`` or ``target`` is not among ``tokens``.
    """
    for needed in (word, target):
        if needed not in tokens:
            raise ValueError(f"“{needed}” is not one of the tokens {list(tokens)}")
    ranked = head_finder(maps, list(tokens).index(word), ignore=[0, len(tokens) - 1])
    return links_from_ranking(ranked, tokens, word, target, top_n)
