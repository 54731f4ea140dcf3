"""The Lesson's questions: asked before a stage shows its picture, answered by the model's own numbers.

Each function reads a :class:`~core.lessons.walkthrough.LessonTrace` (and the highlighted token ``i`` or decoder row
``t``) and returns a :class:`Question` whose ``answer`` is computed from the trace, never written by hand, with one
sentence saying why. None where the sentence is too short for the question to mean anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.lessons.sampling import sampling_step
from core.lessons.walkthrough import LessonTrace

OFFSETS = {-1: "just before", 0: "at", 1: "just after"}  # a positional head's offset δ: row i → column i + δ
SAME = 5e-3  # a probability or weight that moves less than this "stays the same"


@dataclass(frozen=True)
class Question:
    """One question and the model's answer to it.

    Attributes:
        topic: which question this is (``best_key``, ``beta``, ``positional_head``, ``row_sum``, ``cross_source``,
            ``next_token``, ``temperature``).
        prompt: the question as the student reads it. options: what they may answer (tokens when ``tokens``).
        answer: the index into ``options`` of the model's answer. why: one sentence with the numbers behind it.
        tokens: the options are the sentence's tokens (the student clicks one), else a pick-one choice.
    """

    topic: str
    prompt: str
    options: tuple[str, ...]
    answer: int
    why: str
    tokens: bool = False


def _softmax(row: np.ndarray, visible: np.ndarray) -> np.ndarray:
    """Softmax of ``row`` over its ``visible`` cells (0 elsewhere)."""
    shifted = np.where(visible, row - row[visible].max(), -np.inf)
    weights = np.exp(shifted)
    return weights / weights.sum()


def best_key(trace: LessonTrace, i: int) -> Question:
    """Which key the query of source token ``i`` matches best: the largest q·k of the followed head."""
    src, dot = trace.source_tokens, trace.encoder_head.dot[i]  # (S,)
    j = int(np.argmax(dot))
    runner = ", ".join(f"{src[n]} {dot[n]:.2f}" for n in np.argsort(-dot)[1:3])
    return Question("best_key", f"Which token's key will the query of ‹{src[i]}› match best (the largest q·k, head "
                    f"{trace.head + 1})?", src, j,
                    f"q{i}·k{j} = {dot[j]:.2f} is the largest dot product of row {i}"
                    + (f" (next: {runner})." if runner else "."), tokens=True)


def beta(trace: LessonTrace, i: int) -> Question:
    """What the weights of row ``i`` do when β (the scores' multiplier) doubles."""
    head = trace.encoder_head
    now = _softmax(head.scaled[i], head.mask[i])
    doubled = _softmax(2.0 * head.scaled[i], head.mask[i])
    change = doubled.max() - now.max()
    answer = 0 if change > SAME else 1 if change < -SAME else 2
    return Question("beta", f"What happens to row {i}'s attention weights (‹{trace.source_tokens[i]}›) when β "
                    "doubles, i.e. every score is multiplied by 2?",
                    ("sharper: the largest weight grows", "flatter: the weights even out", "they stay the same"),
                    answer, f"At β = 2 the largest weight of row {i} goes from {now.max():.2f} to {doubled.max():.2f}: "
                    "doubling every score doubles the gaps between them, and the softmax turns wider gaps into a "
                    "sharper row.")


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
    where = OFFSETS[list(OFFSETS)[offset]]
    return Question("positional_head", "Which head of encoder layer 1 is the most positional: it looks at a fixed "
                    "place (the token before, itself or the one after), whatever the word?",
                    tuple(f"head {h + 1}" for h in range(len(heads))), int(best),
                    f"Head {best + 1} puts {shares[best, offset]:.2f} of each row, on average, on the token {where} "
                    f"the query, the most of the {len(heads)} heads; head {weakest + 1} puts at most "
                    f"{shares[weakest].max():.2f} on any one offset.")


def row_sum(trace: LessonTrace, t: int) -> Question:
    """Whether decoder row ``t`` of layer 1's masked self-attention still sums to 1 after the look-ahead mask."""
    weights = trace.decoder_head.weights[t]  # (T,)
    total = float(weights.sum())
    answer = 0 if abs(total - 1.0) < 1e-4 else 1 if total < 1 else 2
    hidden = len(weights) - t - 1
    return Question("row_sum", f"The mask hides the {hidden} later step{'s' if hidden != 1 else ''} from the row "
                    f"that reads ‹{trace.target_tokens[t]}›. Will the row's weights still sum to 1?",
                    ("yes, still 1", "no, less than 1", "no, more than 1"), answer,
                    f"The row's {t + 1} visible weight{'s' if t else ''} sum to {total:.2f}: the hidden scores become "
                    "−∞ before the softmax, so they get e^(−∞) = 0, and the softmax shares the whole mass among the "
                    "steps that may be seen.")


def cross_source(trace: LessonTrace, t: int) -> Question:
    """Which source token decoder row ``t`` attends to most in the last layer's cross-attention (mean of heads)."""
    src, row = trace.source_tokens, trace.cross_mean[t]  # (S,)
    j = int(np.argmax(row))
    return Question("cross_source", f"While it predicts ‹{trace.generated_tokens[t]}› (after "
                    f"‹{trace.target_tokens[t]}›), which source token will the decoder look at most (cross-attention, "
                    "last layer, mean of the heads)?", src, j,
                    f"{row[j]:.2f} of the row's weight goes to ‹{src[j]}›: the keys and values come from the encoder's "
                    "output, and the query from what the decoder is about to write.", tokens=True)


def next_token(trace: LessonTrace, t: int, k: int = 5) -> Question:
    """Which of the ``k`` most likely tokens (offered in alphabetical order) the model predicts at row ``t``."""
    candidates = trace.top_candidates(t, k)
    offered = tuple(sorted(token for token, _ in candidates))
    best, p = candidates[0]
    runner = f"; the next most likely, ‹{candidates[1][0]}›, has {candidates[1][1]:.3f}" if k > 1 else ""
    return Question("next_token", f"After ‹{trace.target_tokens[t]}›, which token will the model give the highest "
                    "probability?", offered, offered.index(best),
                    f"P(‹{best}›) = {p:.2f}{runner}: the linear layer and softmax rank every token of the vocabulary.")


def temperature(trace: LessonTrace, t: int, value: float = 2.0) -> Question:
    """What the most likely token's probability at row ``t`` does at temperature ``value``."""
    step = sampling_step(trace.probabilities[t], value)
    best = int(np.argmax(step.original))
    before, after = float(step.original[best]), float(step.tempered[best])
    answer = 0 if after - before > SAME else 1 if before - after > SAME else 2
    token = trace.target_vocab[best]
    return Question("temperature", f"At temperature {value:g}, will the most likely token after "
                    f"‹{trace.target_tokens[t]}› (‹{token}›) become more or less likely?",
                    ("more likely", "less likely", "about the same"), answer,
                    f"P(‹{token}›) goes from {before:.2f} to {after:.2f}: dividing the logits by {value:g} shrinks the "
                    "gaps between them, so the distribution flattens towards uniform.")
