"""The Lesson's tracks: which stages it walks through for each kind of model, in order.

A track is a tuple of :class:`Stage` (its title, the page that goes deeper, its block of the model map, and its
topic for :func:`core.lessons.stage_notes`). The kind comes from the model's trace
(:attr:`core.lessons.LessonTrace.kind`): an encoder-decoder follows the paper's 18 stages; a decoder-only model
(SmolLM2, GPT-2) has no encoder output and no cross-attention, its one stack's masked self-attention reads the
prompt and its output continues it; an encoder-only model (MiniLM, BERT) ends with what its output is used for.
"""

from __future__ import annotations

from dataclasses import dataclass

from app import routes


@dataclass(frozen=True)
class Stage:
    """One stage of a track: its ``title`` (unique in the track), the page ``route`` that goes deeper, the map's
    ``block`` it lights up and its ``topic`` for :func:`core.lessons.stage_notes` (None: nothing to note)."""

    title: str
    route: str
    block: str
    topic: str | None = None


_HEAD = (Stage("Q, K, V of one head", routes.PLAYGROUND, "self_attention", "projections"),
         Stage("Scores q·k", routes.PLAYGROUND, "self_attention"),
         Stage("÷ √d_k", routes.PLAYGROUND, "self_attention", "scaled"))
_AFTER_MASK = (Stage("Softmax", routes.PLAYGROUND, "self_attention"),
               Stage("Weighted sum of values", routes.PLAYGROUND, "self_attention"),
               Stage("Heads concatenated", routes.ARCHITECTURE, "self_attention"),
               Stage("Add & Norm", routes.ARCHITECTURE, "add_norm", "add_norm"),
               Stage("Feed-forward network", routes.ARCHITECTURE, "ffn", "ffn"))
_DECODING = (Stage("Greedy and beam search", routes.EXPLORE, "decode"),
             Stage("Sampling instead of greedy", routes.EXPLORE, "decode"),
             Stage("Next step", routes.EXPLORE, "decode"))

ENCODER_DECODER = (
    Stage("Tokens", routes.EXPLORE, "tokens"),
    Stage("Embeddings + positional encoding", routes.POSITIONAL, "embeddings", "embeddings"),
    *_HEAD, Stage("Mask", routes.MASKS, "self_attention"), *_AFTER_MASK,
    Stage("Encoder output", routes.EXPLORE, "encoder_output", "encoder_output"),
    Stage("Decoder masked self-attention", routes.MASKS, "masked_self", "masked_self"),
    Stage("Cross-attention", routes.EXPLORE, "cross", "cross"),
    Stage("Output distribution", routes.EXPLORE, "output", "output"), *_DECODING,
)
DECODER_ONLY = (
    Stage("Tokens", routes.SMOLLM, "tokens", "architecture"),
    Stage("Embeddings + positions", routes.POSITIONAL, "embeddings", "embeddings"),
    *_HEAD, Stage("Causal mask", routes.MASKS, "self_attention", "masked_self"), *_AFTER_MASK,
    Stage("Output distribution", routes.EXPLORE, "output", "output"), *_DECODING,
)
ENCODER_ONLY = (
    Stage("Tokens", routes.MINILM, "tokens", "architecture"),
    Stage("Embeddings + positions", routes.POSITIONAL, "embeddings", "embeddings"),
    *_HEAD, Stage("Mask", routes.MASKS, "self_attention"), *_AFTER_MASK,
    Stage("Encoder output", routes.EXPLORE, "encoder_output", "encoder_output"),
    Stage("What the encoder output is used for", routes.MINILM, "use"),
)
TRACKS = {"encoder-decoder": ENCODER_DECODER, "decoder": DECODER_ONLY, "encoder": ENCODER_ONLY}


def track(kind: str) -> tuple[Stage, ...]:
    """The stages of a model of ``kind`` (``encoder-decoder``, ``decoder`` or ``encoder``)."""
    return TRACKS[kind]
