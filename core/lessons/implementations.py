"""The project's own code for each step the Lesson teaches, as the Annotated Transformer sets its code beside its
prose: the function or class of the paper's model (``core/model``) that computes the step, its source as it runs,
and the name the Annotated Transformer gives the same piece where it has one (``attention()``,
``MultiHeadedAttention``, ``SublayerConnection``, …). Pure data: the app shows the source."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.generate.decode import greedy
from core.model.attention import MultiHeadAttention, attention
from core.model.layers import DecoderLayer, FeedForward, SublayerConnection
from core.model.masks import subsequent_mask
from core.model.positional import sinusoidal_encoding
from core.model.transformer import Transformer
from core.text.tokenizer import Tokenizer


@dataclass(frozen=True)
class Implementation:
    """One step's code: its dotted ``name`` in this project, the Annotated Transformer's name for it (None where it
    has none), the ``source`` as it runs (dedented) and where it is: ``path`` from the repository root, first ``line``."""

    name: str
    annotated: str | None
    source: str
    path: str
    line: int


# step → (the code that computes it, the Annotated Transformer's name)
_STEPS: dict[str, tuple[Any, str | None]] = {
    "tokens": (Tokenizer.encode, None),
    "positional_encoding": (sinusoidal_encoding, "PositionalEncoding"),
    "projections": (MultiHeadAttention, "MultiHeadedAttention"),
    "attention": (attention, "attention()"),
    "mask": (subsequent_mask, "subsequent_mask()"),
    "add_norm": (SublayerConnection, "SublayerConnection"),
    "ffn": (FeedForward, "PositionwiseFeedForward"),
    "encoder": (Transformer.encode, "Encoder"),
    "cross": (DecoderLayer, "DecoderLayer"),
    "output": (Transformer.unembed, "Generator"),
    "greedy": (greedy, "greedy_decode()"),
    "next_step": (Transformer.next_token_logits, None),
}
STEPS = tuple(_STEPS)
ROOT = Path(__file__).resolve().parents[2]  # the repository: paths are given from here


@lru_cache(maxsize=None)
def implementation(step: str) -> Implementation:
    """The code of ``step`` (one of :data:`STEPS`).

    Raises:
        KeyError: ``step`` is not one of :data:`STEPS`.
    """
    code, annotated = _STEPS[step]
    code = inspect.unwrap(code)  # a decorated function's own source, not its wrapper's
    lines, line = inspect.getsourcelines(code)
    path = Path(inspect.getsourcefile(code)).resolve().relative_to(ROOT).as_posix()
    return Implementation(f"{code.__module__}.{code.__qualname__}", annotated, textwrap.dedent("".join(lines)), path,
                          line)
