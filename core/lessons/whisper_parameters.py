"""Where a real encoder-decoder's parameters are: Whisper's parts counted on the loaded model, beside the
same parts of the paper's base model (from its formulas).

Whisper (Radford et al., 2022) is the paper's encoder-decoder with a convolutional front end instead of a
source embedding, sinusoidal positions on the encoder and learned ones on the decoder, pre-norm layers (a
final LayerNorm after each stack), GELU in the feed-forward networks and no bias on the key projections.
The CTranslate2 files store each key projection fused with the query and value ones, its bias as zeros:
those zeros are not Whisper parameters, so every count here leaves them out (the reference
implementation, ``transformers``' Whisper, has no such bias either).

Paper's base model (Vaswani et al., 2017, Table 3): N = 6, D = 512, d_ff = 2048, h = 8, one embedding
matrix of a ~37,000-token vocabulary shared by the source, the target and the output projection.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from core.model.families.whisper import WhisperAttention, WhisperConfig, WhisperModel

PAPER_BASE = {"layers": 6, "d_model": 512, "d_ff": 2048, "heads": 8, "vocab": 37000}
PAPER_REPORTED = 65_000_000  # Table 3's "params × 10⁶" for the base model


@dataclass(frozen=True)
class PartCount:
    """One part of the model: its name, Whisper's count (loaded model), the paper base model's (None:
    the paper's model has no such part) and the zero key biases the file carries there (not counted)."""

    part: str
    whisper: int
    paper: int | None
    zero_key_biases: int = 0


@dataclass(frozen=True)
class WhisperParameters:
    """Every part of a loaded Whisper model, the total, the largest stored key bias (0 when the file's
    key biases are the zeros Whisper's layout implies) and the model's configuration (its sizes)."""

    parts: tuple[PartCount, ...]
    total: int
    paper_total: int
    largest_key_bias: float
    config: WhisperConfig


def _paper_layers(d: int, f: int) -> tuple[int, int]:
    """The paper's (encoder layer, decoder layer) counts: attention 4(D²+D), FFN 2·D·d_ff + d_ff + D,
    LayerNorm 2D (two per encoder layer, three per decoder layer)."""
    attention, ffn = 4 * (d * d + d), 2 * d * f + f + d
    return attention + ffn + 2 * 2 * d, 2 * attention + ffn + 3 * 2 * d


def _key_bias(attention: WhisperAttention) -> Tensor:
    """The stored bias of the key projection, (D,): the middle third of the fused Q, K, V bias, or the
    first half of the cross-attention's fused K, V bias."""
    if attention.cross:
        return attention.kv.bias[: attention.kv.out_features // 2]
    third = attention.qkv.out_features // 3
    return attention.qkv.bias[third: 2 * third]


def _count(*modules: nn.Module | nn.Parameter) -> tuple[int, int]:
    """(Whisper parameters, zero key biases left out) of the modules or parameters: sum(p.numel())
    less each attention sublayer's stored key bias."""
    stored = biases = 0
    for item in modules:
        if isinstance(item, nn.Parameter):
            stored += item.numel()
            continue
        stored += sum(p.numel() for p in item.parameters())
        biases += sum(_key_bias(m).numel() for m in item.modules() if isinstance(m, WhisperAttention))
    return stored - biases, biases


def whisper_parameters(model: WhisperModel) -> WhisperParameters:
    """Whisper's parameters part by part, counted on ``model``, beside the paper's base model.

    The output projection is tied to the token embedding (counted once); the encoder's sinusoidal
    position table is stored as a parameter (it is in the file) though training never changes it.
    """
    d, f, n = PAPER_BASE["d_model"], PAPER_BASE["d_ff"], PAPER_BASE["layers"]
    paper_encoder, paper_decoder = _paper_layers(d, f)
    paper_embedding = PAPER_BASE["vocab"] * d
    rows = [
        ("token embedding (also the output projection)", (model.embed,), paper_embedding),
        ("conv front end (2 × Conv1d)", (model.conv1, model.conv2), None),
        ("encoder positions (sinusoidal table)", (model.encoder_positions,), 0),
        ("decoder positions (learned)", (model.decoder_positions,), 0),
        ("one encoder layer", (model.encoder_layers[0],), paper_encoder),
        ("all encoder layers", tuple(model.encoder_layers), n * paper_encoder),
        ("one decoder layer", (model.decoder_layers[0],), paper_decoder),
        ("all decoder layers", tuple(model.decoder_layers), n * paper_decoder),
        ("final LayerNorms (encoder, decoder)", (model.encoder_norm, model.decoder_norm), 0),
    ]
    parts = []
    for name, modules, paper in rows:
        count, zeros = _count(*modules)
        parts.append(PartCount(name, count, paper, zeros))
    counted = [p for p in parts if not p.part.startswith("one ")]
    largest = max(float(_key_bias(m).detach().abs().max()) for m in model.modules() if isinstance(m, WhisperAttention))
    return WhisperParameters(tuple(parts), sum(p.whisper for p in counted), sum(p.paper or 0 for p in counted),
                             largest, model.config)
