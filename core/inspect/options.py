"""`ExplainOptions`: every option of :func:`core.explain`, validated once, for every model."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch

from core.generate.filters import check_sampling
from core.model.contract import AttentionControls

DECODINGS = ("greedy", "beam", "sample")
MAPS = ("auto", "exact", "on_demand")


@dataclass(frozen=True)
class ExplainOptions:
    """Options of :func:`core.explain` (all optional keyword arguments).

    Attributes:
        decoding: ``greedy``, ``beam`` or ``sample`` (generating models).
        beam_size: beams for ``beam``.
        max_new_tokens: generation limit (default: the model's ``max_len``; at most 256 in any case).
        sample_temperature / top_k / top_p / seed: sampling settings (``sample``).
        continuation: tokens a language model generates after the input (0 = none).
        top_n: how many next-token (or fill-in) candidates are reported.
        temperature: attention inverse temperature β (1.0 = the paper).
        hard: one-hot argmax attention.
        causal: decoder look-ahead mask on (the paper) or off.
        padding: padding mask on or off.
        head_mask: kind → (L, H) nested lists of 1 (keep) / 0 (knock out).
        return_scores: also return pre-softmax scores.
        maps: ``exact`` (the pass materialises every map), ``on_demand`` (the fast pass records queries and keys;
            :class:`~core.inspect.maps.OnDemandMaps` computes what is indexed) or ``auto`` (exact while every map
            fits :data:`~core.inspect.subject.MAP_BUDGET_BYTES`, else on demand where the model allows it).
    """

    decoding: str = "greedy"
    beam_size: int = 4
    max_new_tokens: int | None = None
    sample_temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0
    continuation: int = 0
    top_n: int = 5
    temperature: float = 1.0
    hard: bool = False
    causal: bool = True
    padding: bool = True
    head_mask: dict[str, list[list[float]]] = field(default_factory=dict)
    return_scores: bool = False
    maps: str = "auto"

    def __post_init__(self) -> None:
        if self.maps not in MAPS:
            raise ValueError(f"maps must be one of {', '.join(MAPS)}; got {self.maps!r}")
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}; got {self.decoding!r}")
        for name in ("beam_size", "top_n"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.continuation < 0 or (self.max_new_tokens is not None and self.max_new_tokens < 1):
            raise ValueError("continuation must be >= 0 and max_new_tokens >= 1")
        if self.decoding == "sample":
            check_sampling(self.sample_temperature, self.top_k, self.top_p)

    @classmethod
    def of(cls, options: dict) -> ExplainOptions:
        """Options from keyword arguments, naming any unknown ones.

        Raises:
            ValueError: unknown names or invalid values.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown option(s): {', '.join(unknown)}; expected {', '.join(sorted(known))}")
        return cls(**options)

    def controls(self) -> AttentionControls:
        """The per-call inference controls these options ask for."""
        masks = {k: torch.tensor(v, dtype=torch.float32) for k, v in self.head_mask.items()}
        return AttentionControls(self.causal, self.padding, self.temperature, self.hard, masks)
