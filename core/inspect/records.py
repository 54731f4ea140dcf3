"""`Explanation`: the pure-data record the app consumes (numpy arrays and strings, no tensors).

Orientation: each attention array is float32 (L, H, Tq, Tk) with row = query
(the token attending) and column = key (the token attended to). A long input's maps are an
:class:`~core.inspect.maps.OnDemandMaps` (plain arrays of the pass's queries and keys) that computes
exactly the layers, heads and rows it is indexed with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.inspect.maps import OnDemandMaps

KIND_LABELS = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Cross-attention (decoder → encoder)",
}


@dataclass(frozen=True)
class Prediction:
    """What the model predicts for the input.

    Attributes:
        kind: ``"text"`` (generated output), ``"class"`` (classifier), ``"next_token"`` (language
            model), ``"embedding"`` (a sentence encoder), ``"fill"`` (a masked language model's
            fill-ins) or ``"tokens"`` (a label per token).
        text: the generated text (``"text"``), the winning label (``"class"``), the most likely next
            token followed by any generated continuation (``"next_token"``), the input with every mask
            filled in (``"fill"``) or ``token/LABEL`` pairs (``"tokens"``).
        labels: class names, candidate next tokens or fill-ins (most likely first), or one label per token.
        probabilities: float32 (len(labels),) their probabilities.
        finished: for generation, whether ``<eos>`` was produced within the length limit.
        vector: for ``"embedding"``, the float32 (D,) sentence embedding (unit length).
    """

    kind: str
    text: str
    labels: tuple[str, ...] = ()
    probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    finished: bool = True
    vector: np.ndarray | None = None


@dataclass(frozen=True)
class Explanation:
    """Everything the app shows about one input, as plain data.

    Attributes:
        text: the input exactly as received.
        task: the checkpoint's task name (or None).
        architecture: ``encoder-decoder``, ``encoder`` or ``decoder``.
        source_tokens / source_offsets: encoder tokens and their (start, end) character
            spans in ``text`` (empty for a decoder-only model).
        target_tokens / target_offsets: the decoder's input tokens (``<bos>`` then the
            output so far; for a language model the input text itself). Offsets index
            ``text`` for input tokens and are (0, 0) for generated or special tokens.
        generated_tokens: for each decoder row, the token the model produced there.
        prediction: see :class:`Prediction`.
        attention: kind → float32 (L, H, Tq, Tk): an array, or :class:`OnDemandMaps` for a long input
            (index it: ``attention[kind][layer, head]``).
        scores: kind → float32 (L, H, Tq, Tk) pre-softmax scores, when asked for (on demand likewise).
        options: the options used (JSON-friendly).
        notes: plain-language remarks (truncation, unknown tokens, …).
        truncated: whether the input was cut to fit ``max_len``.
        head_groups: kind → for each head, the key/value head it shares (grouped-query
            attention in Llama-family models); empty when every head has its own.
        token_probabilities: float32, one per decoder row: the probability the model gave the token
            produced there (``generated_tokens``); a faint one is a token the model was unsure of.
        unknown_words: the input words the model reads as its unknown token, each with the nearest
            words it knows; when any is present the output rests on a guess.
        features: for speech, the float32 (mel bins, columns) log-mel spectrogram the encoder
            read, two columns per source frame shown (else None).
        alignment_heads: for speech, the (layer, head) cross-attention heads the checkpoint
            names as following the audio in time (0-based).
    """

    text: str
    task: str | None
    architecture: str
    source_tokens: tuple[str, ...]
    source_offsets: tuple[tuple[int, int], ...]
    target_tokens: tuple[str, ...]
    target_offsets: tuple[tuple[int, int], ...]
    generated_tokens: tuple[str, ...]
    prediction: Prediction
    attention: dict[str, np.ndarray | OnDemandMaps]
    scores: dict[str, np.ndarray | OnDemandMaps] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    truncated: bool = False
    head_groups: dict[str, tuple[int, ...]] = field(default_factory=dict)
    token_probabilities: np.ndarray | None = None
    unknown_words: tuple[tuple[str, tuple[str, ...]], ...] = ()
    features: np.ndarray | None = None
    alignment_heads: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if len(self.source_tokens) != len(self.source_offsets):
            raise ValueError("source_tokens and source_offsets differ in length")
        if len(self.target_tokens) != len(self.target_offsets):
            raise ValueError("target_tokens and target_offsets differ in length")
        if self.generated_tokens and len(self.generated_tokens) != len(self.target_tokens):
            raise ValueError("generated_tokens must give one token per decoder row")
        for name, maps in (("attention", self.attention), ("scores", self.scores or {})):
            for kind, array in maps.items():
                self._check_map(name, kind, array)
        if self.token_probabilities is not None and self.token_probabilities.shape != (len(self.generated_tokens),):
            raise ValueError("token_probabilities must give one probability per generated token")
        for kind, groups in self.head_groups.items():
            if kind not in self.attention or len(groups) != self.attention[kind].shape[1]:
                raise ValueError(f"head_groups[{kind!r}] must name one key/value head per {kind} head")
        self._check_speech()

    def _check_speech(self) -> None:
        if self.features is not None:
            if not isinstance(self.features, np.ndarray) or self.features.dtype != np.float32 \
                    or self.features.ndim != 2 or self.features.shape[1] != 2 * len(self.source_tokens):
                raise ValueError("features must be a float32 (mel bins, 2 × source frames) array")
            if not np.isfinite(self.features).all():
                raise ValueError("features contain non-finite values")
        if self.alignment_heads:
            layers, heads = self.attention["cross"].shape[:2] if "cross" in self.attention else (0, 0)
            if any(not (0 <= layer < layers and 0 <= head < heads) for layer, head in self.alignment_heads):
                raise ValueError("alignment_heads must name cross-attention heads of the maps")

    def _check_map(self, name: str, kind: str, array: np.ndarray | OnDemandMaps) -> None:
        on_demand = isinstance(array, OnDemandMaps)  # its queries and keys were checked finite when built
        if not on_demand and (not isinstance(array, np.ndarray) or array.dtype != np.float32 or array.ndim != 4):
            raise ValueError(f"{name}[{kind!r}] must be a float32 array (L, H, Tq, Tk)")
        queries, keys = self.axis_tokens(kind)
        if array.shape[2:] != (len(queries), len(keys)):
            raise ValueError(
                f"{name}[{kind!r}] has shape {array.shape}, expected (L, H, {len(queries)}, {len(keys)})"
            )
        if name == "attention" and not on_demand and not np.isfinite(array).all():
            raise ValueError(f"attention[{kind!r}] contains non-finite values")

    @property
    def on_demand(self) -> bool:
        """Whether the maps are computed when indexed (a long input) rather than held whole."""
        return any(isinstance(maps, OnDemandMaps) for maps in self.attention.values())

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds present, in reading order."""
        return tuple(k for k in KIND_LABELS if k in self.attention)

    def axis_tokens(self, kind: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) labelling the rows and columns of ``kind``'s maps."""
        return axis_tokens(kind, self.source_tokens, self.target_tokens)

    def row_labels(self, kind: str) -> tuple[str, ...]:
        """What each row of ``kind``'s maps does: decoder and cross-attention rows of a generating
        model read "after ‹input› → predicts ‹output›" (``generated_tokens[t]`` is what row t
        produced); other rows are their query tokens."""
        queries, _ = self.axis_tokens(kind)
        if kind in ("decoder", "cross") and len(self.generated_tokens) == len(queries):
            return tuple(row_labels(queries, self.generated_tokens))
        return tuple(queries)

    def shape(self, kind: str) -> tuple[int, int]:
        """(layers, heads) of ``kind``."""
        layers, heads = self.attention[kind].shape[:2]
        return int(layers), int(heads)


def axis_tokens(kind: str, source_tokens: Sequence[str],
                target_tokens: Sequence[str]) -> tuple[Sequence[str], Sequence[str]]:
    """(row = query tokens, column = key tokens) of a map of ``kind``: the encoder reads the source,
    the decoder the target, and cross-attention lets target queries attend to source keys.

    Raises:
        ValueError: an unknown kind.
    """
    if kind == "encoder":
        return source_tokens, source_tokens
    if kind == "decoder":
        return target_tokens, target_tokens
    if kind == "cross":
        return target_tokens, source_tokens
    raise ValueError(f"unknown attention kind {kind!r}; expected one of {', '.join(KIND_LABELS)}")

def row_labels(inputs: Sequence[str], predicted: Sequence[str]) -> list[str]:
    """Labels for decoder / cross-attention rows: ``"after ‹el› → predicts ‹gato›"``.

    ``inputs`` are the decoder input tokens of the rows (``Generation.inputs`` as text: ``<bos>``
    first), ``predicted`` what each row predicted (``Generation.predicted`` as text).
    """
    if len(inputs) != len(predicted):
        raise ValueError(f"{len(inputs)} row inputs but {len(predicted)} predictions")
    return [f"after ‹{q}› → predicts ‹{p}›" for q, p in zip(inputs, predicted)]
