"""The Research page's views in a notebook: the logit lens, the head-importance sweep, the head types and a diff of
two models, each as the page's own Plotly grid (Jupyter and VS Code draw a figure inline, offline).

    from attnscope import research
    research.lens("assets/checkpoints/lm.safetensors", "the cat sat")     # stages × positions
    research.sweep(model, "the cat sat")                                   # layers × heads per kind
    research.head_types(model, "the cat sat")                              # sink, previous-token, induction
    research.diff(snapshot_a, snapshot_b, "the cat sat")                   # Jensen–Shannon per head

``model`` is a checkpoint or a Hugging Face folder or ``.gguf`` path, or a model already loaded; it is loaded once
per call. Every number comes from core's single-run definitions (:func:`core.logit_lens`, :func:`core.head_sweep`,
:mod:`core.head_types`), which the grids draw unchanged, each with its measure on the colour bar.
"""

from __future__ import annotations

import os
from typing import Any

from attnscope.cli import checkout

checkout()

from app.charts import research as charts  # noqa: E402  (the checkout is on the path first)
from core import (  # noqa: E402
    explain, head_sweep, head_types as types, induction_probe, is_pretrained, KIND_LABELS, load_checkpoint,
    load_pretrained, logit_lens,
)


def _loaded(model: Any) -> Any:
    """``model`` itself, or the model at the path it names (an Attnscope checkpoint or a pretrained one)."""
    if isinstance(model, (str, os.PathLike)):
        return load_pretrained(model) if is_pretrained(model) else load_checkpoint(model)
    return model


def _kind(exp, kind: str | None) -> str:
    """``kind``, checked against the explanation, or its first self-attention kind (a decoder's, else the encoder's)."""
    if kind is None:
        return "decoder" if "decoder" in exp.kinds else exp.kinds[0]
    if kind not in exp.kinds:
        raise ValueError(f"this model has no {kind!r} attention; it has {', '.join(exp.kinds)}")
    return kind


def lens(model: Any, text: str, *, top_k: int = 5) -> Any:
    """The logit lens of ``text``: after each layer, the token each position would predict and the probability of
    the model's final choice (a decoder or an encoder-decoder; an encoder raises ValueError)."""
    return charts.lens_grid(logit_lens(_loaded(model), text, top_k=top_k))


def sweep(model: Any, text: str, *, kind: str | None = None, target: str | None = None) -> Any:
    """Every head of ``kind`` (default: the decoder's, else the first) knocked out alone: the change in the
    log-probability of the model's own prediction (or of ``target``), as one layers × heads grid."""
    measured = head_sweep(_loaded(model), text, target=target)
    kind = kind or ("decoder" if "decoder" in measured.change else next(iter(measured.change)))
    if kind not in measured.change:
        raise ValueError(f"the sweep has no {kind!r} heads; it has {', '.join(measured.change)}")
    return charts.sweep_grid(measured.change[kind], KIND_LABELS[kind])


def head_types(model: Any, text: str, *, kind: str | None = None, seed: int = 0,
               repeat: int | None = None) -> dict[str, Any]:
    """The three head-type grids: ``sink`` and ``previous`` on ``text`` (for ``kind``), and ``induction`` on a
    random sequence of ``repeat`` tokens (default: 20, or fewer where the model reads fewer) drawn with ``seed``,
    repeated twice."""
    loaded = _loaded(model)
    exp = explain(loaded, text)
    maps = exp.attention[_kind(exp, kind)]
    if repeat is None:
        repeat = min(20, max(2, (loaded.config.max_len - 2) // 2))
    probe = induction_probe(loaded, repeat=repeat, seed=seed)
    return {"sink": charts.head_type_grid(types.sink_share(maps), "sink"),
            "previous": charts.head_type_grid(types.previous_token_score(maps), "previous"),
            "induction": charts.head_type_grid(probe.score, "induction", suffix=f" · {probe.kind}")}


def diff(first: Any, second: Any, text: str, *, kind: str | None = None) -> Any:
    """How far each head of ``second`` attends from ``first``'s on ``text`` (two models that read it alike: two
    snapshots of a run, or a base model and its fine-tune): the Jensen–Shannon divergence in bits per head.

    Raises:
        ValueError: the models differ in layers or heads, or read the text into different tokens.
    """
    a, b = explain(_loaded(first), text), explain(_loaded(second), text)
    kind = _kind(a, kind)
    return charts.divergence_grid(types.map_divergence(a.attention[kind], b.attention[kind]), KIND_LABELS[kind])
