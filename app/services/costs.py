"""What one model request costs the server, estimated before it runs (no Streamlit here).

A request's work is the model's parameters × the tokens it reads and writes (:func:`cost`,
:func:`tokens`), which the gate weighs; generation is held to ``DECODE_TOKENS`` new tokens
(:func:`budgeted`). The model is a loaded one (its ``config``), or an uploaded model's
``core.ModelFacts``, which its worker process reports without the server loading it.
"""

from __future__ import annotations

from typing import Any

from core import ModelFacts

DECODE_TOKENS = 256  # new tokens one request may generate (models with a longer max_len are cut here)


def _config(loaded: Any) -> Any:
    """Where ``architecture`` and ``max_len`` are read: a loaded model's config, or a worker's facts."""
    return loaded if isinstance(loaded, ModelFacts) else loaded.config


def budgeted(loaded: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with generation held to ``DECODE_TOKENS`` for models that could go further."""
    if getattr(_config(loaded), "max_len", 0) > DECODE_TOKENS:
        limit = options.get("max_new_tokens") or DECODE_TOKENS
        options = {**options, "max_new_tokens": min(limit, DECODE_TOKENS)}
    return options


def cost(loaded: Any, n_tokens: int) -> float:
    """A request's estimated work: the model's parameters × the tokens it reads and writes."""
    if isinstance(loaded, ModelFacts):
        return float(loaded.parameters) * max(1, n_tokens)
    network = getattr(loaded, "model", loaded)
    return float(sum(p.numel() for p in network.parameters())) * max(1, n_tokens)


def tokens(loaded: Any, text: str, options: dict[str, Any]) -> int:
    """Tokens a run of ``text`` reads and may generate (a rough count before tokenizing)."""
    config = _config(loaded)
    new = 0 if config.architecture == "encoder" else options.get("max_new_tokens") or DECODE_TOKENS
    return len(text) // 2 + 1 + min(new, config.max_len)
