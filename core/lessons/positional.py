"""The Positional-encoding page's maths: the sinusoid table, its frequencies, the relative-position
rotation, the lecture's worked example and what a loaded model adds to its token embeddings.

PE(pos, 2i) = sin(pos·ω_i), PE(pos, 2i+1) = cos(pos·ω_i), ω_i = 1 / base^(2i/d_model).
Axis letters: T positions, D model width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.inspect.embeddings import model_embeddings
from core.io.checkpoint import Checkpoint
from core.text.inputs import normalized, prepare
from core.model.positional import sinusoidal_encoding

# The worked example of the lecture notes: "I like to code", d_model 4, base 100.
WORKED_X = np.array([[0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.5], [0.3, 0.4, 0.5, 0.6], [0.4, 0.5, 0.6, 0.7]])
WORKED_WORDS = ("I", "like", "to", "code")


def pe_table(length: int, d_model: int, base: float) -> np.ndarray:
    """``core.sinusoidal_encoding`` as float64 numpy (T, D)."""
    return sinusoidal_encoding(length, d_model, base).double().numpy()


def pe_frequency(i: int, d_model: int, base: float) -> float:
    """ω_i = 1 / base^(2i/d_model), the angular speed of the pair (2i, 2i+1)."""
    return 1.0 / base ** (2 * i / d_model)


@dataclass(frozen=True)
class PECurves:
    """Chosen dimensions of the encoding as smooth curves over fractional positions.

    Attributes:
        positions: (P,) sample positions from 0 to length − 1.
        dims: the dimensions drawn.
        values: (len(dims), P) sin or cos of position·ω for each dimension.
        at_token: (P,) True at integer positions (where tokens sit).
    """

    positions: np.ndarray
    dims: list[int]
    values: np.ndarray
    at_token: np.ndarray


def pe_curves(d_model: int, base: float, dims: list[int], length: int, samples_per_pos: int = 8) -> PECurves:
    """Each dimension in ``dims`` sampled ``samples_per_pos`` times per position."""
    pos = np.linspace(0, max(length - 1, 1), max(length - 1, 1) * samples_per_pos + 1)  # (P,)
    values = np.zeros((len(dims), pos.size))
    for row, j in enumerate(dims):
        omega = pe_frequency(j // 2, d_model, base)
        values[row] = np.sin(pos * omega) if j % 2 == 0 else np.cos(pos * omega)
    return PECurves(pos, list(dims), values, np.isclose(pos, np.round(pos)))


def rotation_matrix(k: int, i: int, d_model: int, base: float) -> np.ndarray:
    """The 2×2 matrix R_k that moves the pair (sin ω_i pos, cos ω_i pos) to position pos + k.

    sin(ω(p+k)) = cos(ωk)·sin(ωp) + sin(ωk)·cos(ωp)
    cos(ω(p+k)) = −sin(ωk)·sin(ωp) + cos(ωk)·cos(ωp)
    """
    angle = pe_frequency(i, d_model, base) * k
    return np.array([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]])


@dataclass(frozen=True)
class RotationCheck:
    """PE(pos + k) = R_k · PE(pos) for the pair (2i, 2i+1), at every pos < length.

    Attributes:
        pair: (T, 2) PE(pos) restricted to the pair. rotated: (T, 2) R_k applied to it.
        shifted: (T, 2) PE(pos + k) on the pair. error: (T,) max |rotated − shifted| per position.
    """

    pair: np.ndarray
    rotated: np.ndarray
    shifted: np.ndarray
    error: np.ndarray


def rotation_check(length: int, d_model: int, base: float, k: int, i: int) -> RotationCheck:
    """Check the relative-position property on pair ``i`` for a shift of ``k``.

    Raises:
        ValueError: ``d_model`` has no dimensions 2i and 2i+1.
    """
    if not 0 <= 2 * i + 1 < d_model:
        raise ValueError(f"pair {i} needs dimensions {2 * i} and {2 * i + 1}, but d_model is {d_model}")
    pe = pe_table(length + k, d_model, base)
    pair = pe[:length, 2 * i: 2 * i + 2]  # (T, 2)
    rotated = pair @ rotation_matrix(k, i, d_model, base).T  # (T, 2): R · PE(pos) for every pos
    shifted = pe[k: k + length, 2 * i: 2 * i + 2]  # (T, 2)
    return RotationCheck(pair, rotated, shifted, np.abs(rotated - shifted).max(axis=1))


@dataclass(frozen=True)
class WorkedExample:
    """The notes' 4 × 4 example with base 100: words, embeddings x (4, 4), PE (4, 4) and x + PE."""

    words: tuple[str, ...]
    x: np.ndarray
    pe: np.ndarray
    total: np.ndarray


def worked_example() -> WorkedExample:
    """The lecture notes' example: "I like to code" with d_model 4 and base 100."""
    pe = pe_table(4, 4, 100.0)
    return WorkedExample(WORKED_WORDS, WORKED_X.copy(), pe, WORKED_X + pe)


@dataclass(frozen=True)
class ModelEncoding:
    """What one checkpoint feeds its first layer for a short text.

    Attributes:
        tokens: the text's tokens (at most max_len). embeddings: (T, D) embedding rows × √d_model.
        positional: (T, D) what the positional module adds. kind: "sinusoidal" | "learned" | "none".
        table: "source" or "target", the embedding table used. notes: sentences for the reader.
    """

    tokens: list[str]
    embeddings: np.ndarray
    positional: np.ndarray
    kind: str
    table: str
    notes: tuple[str, ...]

    @property
    def total(self) -> np.ndarray:
        """(T, D) the first layer's input: embeddings + positional."""
        return self.embeddings + self.positional


def model_encoding(ckpt: Checkpoint, text: str) -> ModelEncoding:
    """Token embeddings (√d_model-scaled), positional encodings and their sum for ``text``.

    An encoder model reads ``text`` with its source tokenizer; a decoder starts from ``<bos>``.

    Raises:
        ValueError: empty text or no recognisable tokens.
    """
    config = ckpt.config
    if not text.strip():
        raise ValueError("type a short text first")
    item = normalized(prepare(text), ckpt.info.task)  # the task's convention (lower case), as Explore applies it
    table = "source" if config.has_encoder else "target"
    tokenizer = ckpt.source_tokenizer if config.has_encoder else ckpt.target_tokenizer
    encoding = tokenizer.encode(item.work, add_bos=not config.has_encoder)
    if not encoding.ids:
        raise ValueError("the text has no recognisable tokens")
    ids, tokens, notes = encoding.ids, list(encoding.tokens), list(item.notes)
    if len(ids) > config.max_len:
        notes.append(f"Only the first {config.max_len} tokens are shown (the model's max_len).")
        ids, tokens = ids[: config.max_len], tokens[: config.max_len]
    emb = model_embeddings(ckpt)
    weights = emb.source if table == "source" else emb.target
    embeddings = (weights[ids] * np.float32(emb.scale)).astype(np.float64)  # (T, D), scaled in float32 as forward
    positional = emb.positional[: len(ids)].astype(np.float64)  # (T, D)
    if config.positional == "none":
        notes.append("This model has no positional encoding: it adds nothing, so it sees the tokens as a set.")
    unknown = sum(t == "<unk>" for t in tokens)
    if unknown:
        notes.append(f"{unknown} token(s) are unknown to this model's tokenizer and shown as <unk>.")
    return ModelEncoding(tokens, embeddings, positional, config.positional, table, tuple(notes))


def wavelength_range(d_model: int, base: float) -> tuple[float, float]:
    """(shortest, longest) wavelength in positions: 2π for pair 0 and 2π·base^((d−2)/d) for the last
    pair i = d/2 − 1 (its exponent is 2i/d = (d − 2)/d, never 1)."""
    last = d_model // 2 - 1
    return 2 * math.pi, 2 * math.pi / pe_frequency(last, d_model, base)


# The notes' hand-computed x + PE for "I like to code", exactly as printed (two decimals, some cut).
LECTURE_PRINTED = np.array([[0.1, 1.2, 0.3, 1.4], [1.041, 0.84, 0.41, 1.49], [1.209, -0.016, 0.52, 1.59],
                            [0.541, -0.489, 0.895, 1.655]])


@dataclass(frozen=True)
class LectureComparison:
    """The notes' printed x + PE beside the same sum computed with base 100 and with base 10000.

    Attributes:
        printed: (4, 4) the notes' numbers. base100 / base10000: (4, 4) x + PE with that base.
        matches: (4, 4) str per cell: "both", "100", "10000" or "neither" (within the printed
            precision, 0.011), saying which base the notes used for that cell.
    """

    printed: np.ndarray
    base100: np.ndarray
    base10000: np.ndarray
    matches: np.ndarray


def lecture_comparison(tolerance: float = 0.011) -> LectureComparison:
    """Which base each printed cell of the notes' worked example agrees with.

    Pair 0 (columns 0, 1) does not depend on the base. In pair 1 the notes' formula says 10000 and
    rows 1–2 follow it (sin 0.01 ≈ 0.01), but row 3 uses 100 (sin 0.3 ≈ 0.296), the base of their code.
    """
    b100, b10000 = WORKED_X + pe_table(4, 4, 100.0), WORKED_X + pe_table(4, 4, 10000.0)
    near100 = np.abs(b100 - LECTURE_PRINTED) <= tolerance
    near10000 = np.abs(b10000 - LECTURE_PRINTED) <= tolerance
    matches = np.where(near100 & near10000, "both",
                       np.where(near100, "100", np.where(near10000, "10000", "neither")))
    return LectureComparison(LECTURE_PRINTED.copy(), b100, b10000, matches)
