"""Size budgets: what loading (or training) one model may cost, checked from its config alone.

* :data:`core.config.LIMITS` bounds every numeric field of every ``ModelConfig``.
* :data:`LOAD_BUDGET` bounds what a checkpoint file may make us allocate; the loader checks it
  before any model or tensor exists (checkpoints may be uploads): at most 50 M parameters,
  ``max_len`` at most 2,048 positions, and at most 1 GiB of activations for one sequence of
  ``max_len`` tokens with every attention map returned (:func:`activation_bytes`), and at most 1 GiB of
  extra tensors (attention snapshots), so that no read or hash of a file that passes runs unbounded.
  :func:`check_budget` raises ``ValueError`` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import ModelConfig

_FLOAT32 = 4  # bytes per weight or activation


@dataclass(frozen=True)
class Budget:
    """What loading one checkpoint may cost: checked from the config before anything is allocated.

    Attributes:
        max_parameters: parameters (tied weights counted once).
        max_len: positions (also sizes the sinusoidal table, which has no stored weight to check).
        max_activation_bytes: activations for one sequence of ``max_len`` tokens with every
            attention map and score returned (:func:`activation_bytes`).
        max_extra_bytes: the extra tensors a checkpoint stores beside its weights (attention snapshots).
    """

    max_parameters: int = 50_000_000
    max_len: int = 2_048
    max_activation_bytes: int = 1 << 30
    max_extra_bytes: int = 1 << 30


#: The budget every checkpoint load is held to unless the caller passes another one.
LOAD_BUDGET = Budget()


def parameter_count(config: ModelConfig) -> int:
    """Exact number of parameters the config builds (tied weights counted once), without building it."""
    c, d = config, config.d_model
    linear = lambda i, o: i * o + o  # noqa: E731 - weight and bias
    score = {"general": c.n_heads * c.head_dim ** 2,
             "additive": c.n_heads * (2 * c.head_dim ** 2 + c.head_dim)}.get(c.score, 0)
    attention = linear(d, 3 * d) + linear(d, d) + score  # cross: (d→d) + (d→2d) has the same count
    block = attention + linear(d, c.d_ff) + linear(c.d_ff, d) + 4 * d  # + two LayerNorms
    total = c.max_len * d if c.positional == "learned" else 0
    final = 2 * d if c.has_final_norm else 0  # the stack's closing LayerNorm
    if c.has_encoder:
        total += c.src_vocab_size * d + c.n_encoder_layers * block + final
    if c.has_decoder:
        cross = attention + 2 * d if c.architecture == "encoder-decoder" else 0
        head = (0 if c.tie_embeddings else d * c.tgt_vocab_size) + (c.tgt_vocab_size if c.output_bias else 0)
        total += c.tgt_vocab_size * d + c.n_decoder_layers * (block + cross) + final + head
    else:
        total += linear(d, c.n_classes)
    return total


def activation_bytes(config: ModelConfig, length: int | None = None) -> int:
    """Estimated peak bytes for one sequence of ``length`` (default ``max_len``) tokens on the
    explicit path: every layer's attention weights and scores kept, one layer's transients, the
    per-token hidden states and outputs, and the sinusoidal table (float64 while built)."""
    c, t = config, config.max_len if length is None else length
    layers = (c.n_encoder_layers if c.has_encoder else 0) + (c.n_decoder_layers if c.has_decoder else 0)
    layers += c.n_decoder_layers if c.architecture == "encoder-decoder" else 0
    square = c.n_heads * t * t  # one layer's (H, Tq, Tk) map
    transient = 3 * square + (3 * t * t * c.d_model if c.score == "additive" else 0)
    outputs = c.tgt_vocab_size if c.has_decoder else c.n_classes
    per_token = t * (8 * c.d_model + c.d_ff + outputs)
    table = 5 * c.max_len * c.d_model if c.positional == "sinusoidal" else 0
    return _FLOAT32 * (2 * layers * square + transient + per_token + table)


def check_budget(config: ModelConfig, budget: Budget = LOAD_BUDGET) -> None:
    """Refuse a config whose positions, parameters or activations exceed ``budget``.

    Raises:
        ValueError: naming the field to reduce and the budget it exceeds.
    """
    if config.max_len > budget.max_len:
        raise ValueError(f"max_len {config.max_len:,} is over the budget of {budget.max_len:,} positions")
    params = parameter_count(config)
    if params > budget.max_parameters:
        raise ValueError(f"{_largest_part(config)} gives {params:,} parameters, over the budget of "
                         f"{budget.max_parameters:,}")
    need = activation_bytes(config)
    if need > budget.max_activation_bytes:
        raise ValueError(f"max_len {config.max_len:,} with n_heads {config.n_heads} needs about "
                         f"{need / 2**20:,.0f} MiB of activations, over the budget of "
                         f"{budget.max_activation_bytes / 2**20:,.0f} MiB")


def _largest_part(config: ModelConfig) -> str:
    """The field whose term dominates the parameter count, as ``"name=value"``."""
    c = config
    layers = max(c.n_encoder_layers if c.has_encoder else 0, c.n_decoder_layers if c.has_decoder else 0)
    vocab = "tgt_vocab_size" if c.has_decoder and c.tgt_vocab_size >= c.src_vocab_size else "src_vocab_size"
    terms = {vocab: getattr(c, vocab) * c.d_model, "d_ff": 2 * layers * c.d_model * c.d_ff,
             "d_model": 6 * layers * c.d_model ** 2}
    if c.positional == "learned":
        terms["max_len"] = c.max_len * c.d_model
    name = max(terms, key=terms.__getitem__)
    return f"{name}={getattr(c, name):,}"
