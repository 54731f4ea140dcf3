"""The Lesson's questions: asked before a stage shows its picture, answered by the model's own numbers.

Each function reads a :class:`~core.lessons.walkthrough.LessonTrace` (and the highlighted token ``i`` or decoder row
``t``) and returns a :class:`Question` whose ``answer`` is computed from the trace, never written by hand, with the
numbers and tokens that say why. None where the sentence is too short for the question to mean anything.

Core stays language-neutral: a question is its ``topic``, its ``values`` (numbers and token strings) and its
options (the sentence's tokens, head numbers or option names); the app words it in the reader's language
(``app/i18n/messages/<lang>/lesson-quiz.toml``: ``questions.<topic>.prompt`` and ``.why``, filled from ``values``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.lessons.sampling import sampling_step
from core.lessons.walkthrough import LessonTrace

OFFSETS = {-1: "before", 0: "at", 1: "after"}  # a positional head's offset δ (row i → column i + δ) → its name
SAME = 5e-3  # a probability or weight that moves less than this "stays the same"


@dataclass(frozen=True)
class Question:
    """One question and the model's answer to it, in no language.

    Attributes:
        topic: which question this is (``best_key``, ``beta``, ``positional_head``, ``row_sum``, ``cross_source``,
            ``next_token``, ``temperature``): the app's messages ``questions.<topic>.prompt`` and ``.why``.
        options: what the student may answer: the sentence's tokens (``kind`` "tokens"), candidate tokens
            ("candidates"), head numbers from 1 ("heads") or the names of the choices ("choices":
            ``questions.<topic>.options.<name>``).
        answer: the index into ``options`` of the model's answer.
        values: the numbers and token strings the prompt and the why are filled with (placeholder → value).
        kind: "tokens", "candidates", "heads" or "choices".
    """

    topic: str
    options: tuple[str, ...]
    answer: int
    values: dict[str, object] = field(default_factory=dict)
    kind: str = "choices"

    @property
    def tokens(self) -> bool:
        """The options are the sentence's tokens: the student clicks one."""
        return self.kind == "tokens"


def _softmax(row: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Softmax of ``row`` over its ``visible`` cells (0 elsewhere)."""
    shifted = np.where(visible, row - row[visible].max(), -np.inf)
    weights = np.exp(shifted)
    return weights / weights.sum()


def best_key(trace: LessonTrace, i: int) -> Question:
    """Which key the query of source token ``i`` matches best: the largest q·k of the followed head. ``runner``:
    the next two keys and their q·k ("cats 0.12, have 0.05"; empty under three tokens)."""
    src, dot = trace.source_tokens, trace.encoder_head.dot[i]  # (S,)
    j = int(np.argmax(dot))
    runner = ", ".join(f"{src[n]} {dot[n]:.2f}" for n in np.argsort(-dot)[1:3])
    return Question("best_key", src, j, dict(token=src[i], head=trace.head + 1, i=i, j=j, dot=float(dot[j]),
                                             runner=runner), kind="tokens")


def beta(trace: LessonTrace, i: int) -> Question:
    """What the weights of row ``i`` do when β (the scores' multiplier) doubles."""
    head = trace.encoder_head
    now = _softmax(head.scaled[i], head.mask[i])
    doubled = _softmax(2.0 * head.scaled[i], head.mask[i])
    change = doubled.max() - now.max()
    answer = 0 if change > SAME else 1 if change < -SAME else 2
    return Question("beta", ("sharper", "flatter", "same"), answer,
                    dict(i=i, token=trace.source_tokens[i], before=float(now.max()), after=float(doubled.max())))


def _offset_share(weights: np.ndarray, offset: int) -> float:
    """The mean weight a head (S, S) puts on the key at ``offset`` from each query, over the rows that have one."""
    S = weights.shape[0]
    rows = [i for i in range(S) if 0 <= i + offset < S]
    return float(np.mean([weights[i, i + offset] for i in rows]))


def positional_head(trace: LessonTrace) -> Question | None:
    """Which head of encoder layer 1 looks most by position: the most weight, on average, at one fixed offset
    (the token before, itself or the one after), whatever the word. None under three tokens or without every
    head's weights."""
    heads = trace.encoder_heads  # (H, S, S)
    if heads is None or heads.shape[1] < 3:
        return None
    shares = np.array([[_offset_share(w, d) for d in OFFSETS] for w in heads])  # (H, 3)
    best, offset = np.unravel_index(int(np.argmax(shares)), shares.shape)
    weakest = int(np.argmin(shares.max(axis=1)))
    return Question("positional_head", tuple(str(h + 1) for h in range(len(heads))), int(best),
                    dict(head=int(best) + 1, share=float(shares[best, offset]), where=OFFSETS[list(OFFSETS)[offset]],
                         n_heads=len(heads), weakest=weakest + 1, weakest_share=float(shares[weakest].max())),
                    kind="heads")


def row_sum(trace: LessonTrace, t: int) -> Question:
    """Whether decoder row ``t`` of layer 1's masked self-attention still sums to 1 after the look-ahead mask."""
    weights = trace.decoder_head.weights[t]  # (T,)
    total = float(weights.sum())
    answer = 0 if abs(total - 1.0) < 1e-4 else 1 if total < 1 else 2
    return Question("row_sum", ("one", "less", "more"), answer,
                    dict(hidden=len(weights) - t - 1, token=trace.target_tokens[t], visible=t + 1, total=total))


def cross_source(trace: LessonTrace, t: int) -> Question:
    """Which source token decoder row ``t`` attends to most in the last layer's cross-attention (mean of heads)."""
    src, row = trace.source_tokens, trace.cross_mean[t]  # (S,)
    j = int(np.argmax(row))
    return Question("cross_source", src, j, dict(predicts=trace.generated_tokens[t], after=trace.target_tokens[t],
                                                 weight=float(row[j]), source=src[j]), kind="tokens")


def next_token(trace: LessonTrace, t: int, k: int = 5) -> Question:
    """Which of the ``k`` most likely tokens (offered in alphabetical order) the model predicts at row ``t``."""
    candidates = trace.top_candidates(t, k)
    offered = tuple(sorted(token for token, _ in candidates))
    best, p = candidates[0]
    runner, runner_p = candidates[1] if k > 1 else ("", 0.0)
    return Question("next_token", offered, offered.index(best),
                    dict(after=trace.target_tokens[t], best=best, p=float(p), runner=runner, runner_p=float(runner_p)),
                    kind="candidates")


def temperature(trace: LessonTrace, t: int, value: float = 2.0) -> Question:
    """What the most likely token's probability at row ``t`` does at temperature ``value``."""
    step = sampling_step(trace.probabilities[t], value)
    best = int(np.argmax(step.original))
    before, after = float(step.original[best]), float(step.tempered[best])
    answer = 0 if after - before > SAME else 1 if before - after > SAME else 2
    return Question("temperature", ("more", "less", "same"), answer,
                    dict(value=value, after=trace.target_tokens[t], token=trace.target_vocab[best], before=before,
                         tempered=after))
