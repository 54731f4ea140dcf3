"""Where a model's parameters are: each top-level block's count from the config alone, with the
formula that gives it, next to the model's own count.

attention = 4(D² + D) (+ the score function's weights), FFN = 2·D·d_ff + d_ff + D,
LayerNorm = 2D, embedding = V · D.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import ModelConfig


@dataclass(frozen=True)
class BlockCount:
    """One top-level block: its name, the formula, the formula's count, the model's count and share."""

    block: str
    formula: str
    expected: int
    parameters: int = -1  # the model's own count (-1: not measured)
    share: float = 0.0  # of the model's total


def _attention(c: ModelConfig) -> tuple[int, str]:
    h, dk = c.n_heads, c.head_dim
    extra, text = {"scaled_dot": (0, ""), "dot": (0, ""), "general": (h * dk * dk, " + h·d_k²"),
                   "additive": (2 * h * dk * dk + h * dk, " + 2h·d_k² + h·d_k")}[c.score]
    return 4 * c.d_model * c.d_model + 4 * c.d_model + extra, "(4·D² + 4·D" + text + ")"


def expected_parameter_counts(config: ModelConfig) -> list[BlockCount]:
    """Parameters per top-level block from the config alone (tied weights counted once, in ``tgt_embed``).

    Matches ``Transformer.parameter_counts()`` block for block.
    """
    c, d, f = config, config.d_model, config.d_ff
    attn, attn_text = _attention(c)
    ffn = 2 * d * f + f + d
    rows = []
    if c.positional == "learned":
        rows.append(BlockCount("positional", "max_len · D", c.max_len * d))
    if c.has_encoder:
        rows.append(BlockCount("src_embed", "V_src · D", c.src_vocab_size * d))
        rows.append(BlockCount("encoder_layers", f"N_enc · [{attn_text} + (2·D·d_ff + d_ff + D) + 2·2D]",
                               c.n_encoder_layers * (attn + ffn + 4 * d)))
        if c.has_final_norm:
            rows.append(BlockCount("encoder_norm", "2 · D", 2 * d))
    if not c.has_decoder:
        return [*rows, BlockCount("classifier", "D · C + C", d * c.n_classes + c.n_classes)]
    cross = c.architecture == "encoder-decoder"
    rows.append(BlockCount("tgt_embed", "V_tgt · D", c.tgt_vocab_size * d))
    layer = attn * (2 if cross else 1) + ffn + (6 if cross else 4) * d
    attn_part, norms = (f"2·{attn_text}", "3·2D") if cross else (attn_text, "2·2D")
    rows.append(BlockCount("decoder_layers", f"N_dec · [{attn_part} + (2·D·d_ff + d_ff + D) + {norms}]",
                           c.n_decoder_layers * layer))
    if c.has_final_norm:
        rows.append(BlockCount("decoder_norm", "2 · D", 2 * d))
    if not c.tie_embeddings or c.output_bias:
        parts = ([] if c.tie_embeddings else ["D · V_tgt"]) + (["V_tgt"] if c.output_bias else [])
        count = (0 if c.tie_embeddings else d * c.tgt_vocab_size) + (c.tgt_vocab_size if c.output_bias else 0)
        rows.append(BlockCount("lm_head", " + ".join(parts) + ("" if c.output_bias else " (no bias)"), count))
    return rows


def parameter_table(counts: dict[str, int], config: ModelConfig) -> list[BlockCount]:
    """The model's own ``counts`` (``Transformer.parameter_counts()``) next to the formula's, one per block.

    A block the formulas do not know has an empty formula and ``expected`` −1.
    """
    expected = {row.block: row for row in expected_parameter_counts(config)}
    total = max(sum(int(v) for v in counts.values()), 1)
    return [BlockCount(block, expected[block].formula if block in expected else "",
                       expected[block].expected if block in expected else -1, int(n), int(n) / total)
            for block, n in counts.items()]
