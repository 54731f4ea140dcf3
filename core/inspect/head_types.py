"""Head types every interpretability course shows, each an (L, H) score, and how far two models' maps differ.

* **Sink share**: the mean weight a head's queries put on the first position (attention sinks park there).
* **Previous-token score**: the mean weight query i puts on key i − 1.
* **Induction score**: on a random token sequence repeated twice (seeded, from ordinary words of the model's
  vocabulary), the mean weight a token of the second copy puts on the token that followed its first occurrence
  (key i − n + 1): the pattern an induction head copies from.
* **Coreference score** (encoders): the weight a pronoun puts on its antecedent in a sentence given with both.
* **Map divergence**: per head, the Jensen–Shannon divergence (bits, 0–1) between two models' maps of one
  input, averaged over the rows both give weight to.

Scores read maps in the Explanation orientation (L, H, Tq, Tk), arrays or on-demand maps (one head at a time).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from core.inspect.subject import Subject, as_subject

#: Ordinary English words whose tokens the induction sequence is drawn from (any tokenizer reads them).
WORDS = ("time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government number night point "
         "home water room mother area money story fact month lot right study book eye job word business issue "
         "side kind head house service friend father power hour game line end member law car city name team").split()


@dataclass(frozen=True)
class InductionProbe:
    """The repeated random sequence an induction score was measured on.

    Attributes:
        seed: the generator's seed. tokens: the token strings (prefix, then the n tokens twice).
        repeat: n, the length of one copy. first: the position of the first copy's first token.
        score: float32 (L, H) the induction score of every head of the probed kind. kind: that kind.
    """

    seed: int
    tokens: tuple[str, ...]
    repeat: int
    first: int
    score: np.ndarray
    kind: str


def _per_head(maps, measure) -> np.ndarray:
    """float32 (L, H): ``measure`` of each head's float64 (Tq, Tk) map."""
    layers, heads = maps.shape[:2]
    return np.array([[measure(np.asarray(maps[l, h], np.float64)) for h in range(heads)] for l in range(layers)],
                    dtype=np.float32)


def _live(matrix: np.ndarray) -> np.ndarray:
    return matrix.sum(-1) > 1e-12  # rows that attend somewhere


def sink_share(maps) -> np.ndarray:
    """(L, H): the mean weight on position 0 over the rows that attend somewhere."""
    return _per_head(maps, lambda m: float(m[_live(m), 0].mean()) if _live(m).any() else 0.0)


def previous_token_score(maps) -> np.ndarray:
    """(L, H): the mean weight query i puts on key i − 1, over i ≥ 1 (self-attention)."""
    def measure(m: np.ndarray) -> float:
        rows = np.arange(1, min(m.shape))
        return float(m[rows, rows - 1].mean()) if len(rows) else 0.0
    return _per_head(maps, measure)


def induction_score(maps, first: int, repeat: int) -> np.ndarray:
    """(L, H): on a sequence whose positions ``first`` … ``first + n − 1`` repeat at ``first + n`` …, the mean weight
    a second-copy token at i puts on key i − n + 1 (the token after its first occurrence)."""
    def measure(m: np.ndarray) -> float:
        rows = np.arange(first + repeat, first + 2 * repeat)
        return float(m[rows, rows - repeat + 1].mean())
    return _per_head(maps, measure)


def coreference_score(maps, pronoun: int, antecedent: int) -> np.ndarray:
    """(L, H): the weight the token at ``pronoun`` puts on the token at ``antecedent``."""
    return _per_head(maps, lambda m: float(m[pronoun, antecedent]))


def map_divergence(first, second) -> np.ndarray:
    """(L, H): per head, the Jensen–Shannon divergence in bits of two models' maps of the same input, averaged
    over the rows where both attend somewhere.

    Raises:
        ValueError: maps of different shapes (the models differ in layers or heads, or read the input differently).
    """
    if tuple(first.shape) != tuple(second.shape):
        raise ValueError(f"the two models' maps differ in shape ({tuple(first.shape)} vs {tuple(second.shape)}): "
                         "a diff needs the same layers, heads and tokens")
    layers, heads = first.shape[:2]
    out = np.zeros((layers, heads), np.float32)
    for l in range(layers):
        for h in range(heads):
            p, q = np.asarray(first[l, h], np.float64), np.asarray(second[l, h], np.float64)
            live = _live(p) & _live(q)
            if live.any():
                out[l, h] = float(_js_bits(p[live], q[live]).mean())
    return out


def _js_bits(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(R,): the Jensen–Shannon divergence in bits between the rows of p and q (R, K), each summing to 1."""
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(np.where(a > 0, a, 1.0) / np.where(m > 0, m, 1.0)), 0.0).sum(-1)
    return np.clip((kl(p) + kl(q)) / 2, 0.0, 1.0)


def induction_probe(model: Subject | str | os.PathLike, repeat: int = 20, seed: int = 0) -> InductionProbe:
    """Run ``model`` on ``repeat`` random ordinary tokens (seeded) twice over and score every head of its first
    self-attention kind (a decoder's masked self-attention, else the encoder's).

    Raises:
        ValueError: ``repeat`` below 2, or more tokens than the model reads.
    """
    if repeat < 2:
        raise ValueError(f"repeat must be at least 2, got {repeat}")
    subject = as_subject(model)
    decoder = subject.spec.architecture == "decoder"
    tok = subject.target_tokenizer if decoder else subject.source_tokenizer
    pool_ = sorted({i for word in WORDS for i in tok.encode(" " + word).ids} - set(getattr(tok, "special_ids", ())))
    generator = np.random.default_rng(seed)
    drawn = [int(i) for i in generator.choice(pool_, size=repeat, replace=len(pool_) < repeat)]
    prefix = list(subject.input_prefix) if decoder else []
    ids = prefix + drawn + drawn
    if len(ids) > subject.spec.max_len:
        raise ValueError(f"{len(ids)} tokens exceed the model's {subject.spec.max_len} positions")
    kind = "decoder" if decoder else "encoder"
    with torch.inference_mode():
        batch = torch.tensor([ids])
        if decoder:
            out = subject.model(tgt=batch, return_attention=True)
        elif subject.spec.has_decoder:  # an encoder-decoder: the encoder reads the sequence, the decoder only starts
            out = subject.model(batch, torch.tensor([list(subject.decoder_start)]), return_attention=True)
        else:
            out = subject.model(batch, return_attention=True)
    maps = out.attention[kind][:, 0].float().numpy()  # (L, H, T, T)
    return InductionProbe(seed, tuple(tok.token_strings(ids)), repeat, len(prefix),
                          induction_score(maps, len(prefix), repeat), kind)
