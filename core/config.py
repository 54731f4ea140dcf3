"""`ModelConfig`: the frozen, validated description of a Transformer.

It goes into every checkpoint as JSON and is the only thing needed to rebuild
the model's modules before its weights are loaded.

:data:`LIMITS` bounds every numeric field of every ``ModelConfig`` (whoever builds it); what a
checkpoint file may make us allocate is bounded in ``core/budget.py``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

#: ``<bos>`` in every Attnscope tokenizer (``core.text.tokenizer.BOS_ID`` is the same id).
BOS_ID = 1

ARCHITECTURES = ("encoder-decoder", "encoder", "decoder")
NORMS = ("post", "pre")
POSITIONALS = ("sinusoidal", "learned", "none")
SCORES = ("scaled_dot", "dot", "general", "additive")

#: Inclusive bounds on every numeric field of any ModelConfig (generous: the paper's big
#: model, BERT and Llama vocabularies fit; nothing a 64-bit index or a GPU cannot hold).
LIMITS: dict[str, tuple[float, float]] = {
    "src_vocab_size": (0, 262_144), "tgt_vocab_size": (0, 262_144), "n_classes": (0, 10_000),
    "n_encoder_layers": (0, 48), "n_decoder_layers": (0, 48), "d_model": (1, 8_192),
    "n_heads": (1, 128), "d_ff": (1, 32_768), "max_len": (1, 16_384), "pad_id": (0, 262_143),
    "pe_base": (1.0, 1e9), "dropout": (0.0, 1.0),
}


@dataclass(frozen=True)
class ModelConfig:
    """Everything that shapes a model's modules.

    Attributes:
        architecture: ``"encoder-decoder"`` (the paper's translator), ``"encoder"``
            (a classifier, as the lecture's TransformerClassifier) or ``"decoder"``
            (a causal language model).
        src_vocab_size: encoder input vocabulary (encoder-decoder and encoder).
        tgt_vocab_size: decoder vocabulary (encoder-decoder and decoder).
        n_encoder_layers: encoder depth (ignored by ``"decoder"``).
        n_decoder_layers: decoder depth (ignored by ``"encoder"``).
        d_model: model width; must be divisible by ``n_heads``.
        n_heads: attention heads per layer; each head has width d_model / n_heads.
        d_ff: hidden width of the position-wise feed-forward network.
        dropout: dropout probability in [0, 1).
        max_len: longest sequence the model accepts (tokens, specials included).
        n_classes: number of classes (``"encoder"`` only, at least 2).
        norm: ``"post"`` (Add & Norm after each sublayer, as in the paper) or
            ``"pre"`` (LayerNorm before each sublayer, as in the Annotated Transformer).
        positional: ``"sinusoidal"`` (the paper), ``"learned"`` or ``"none"``.
        pe_base: the base of the sinusoidal encoding (10000 in the paper).
        score: the attention score function: ``"scaled_dot"`` (the paper),
            ``"dot"``, ``"general"`` (Luong) or ``"additive"`` (Bahdanau).
        tie_embeddings: share the decoder's input embedding with its output projection.
        output_bias: the output projection adds a bias (off, as in the paper; on for models
            imported from code that used ``nn.Linear``'s default, such as PyTorch's tutorials).
        pad_id: the padding token id (0 in every Attnscope tokenizer).
        final_norm: a LayerNorm after the last layer of each stack. None (the default) follows
            ``norm``: pre-norm needs one (its residual stream is never normalised otherwise), the
            paper's post-norm has none (each layer already ends with Add & Norm). True reproduces
            PyTorch's ``nn.Transformer``, which adds one in both placements; configs saved before
            this field existed had one and load as True.
    """

    architecture: str = "encoder-decoder"
    src_vocab_size: int = 0
    tgt_vocab_size: int = 0
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.1
    max_len: int = 64
    n_classes: int = 0
    norm: str = "post"
    positional: str = "sinusoidal"
    pe_base: float = 10000.0
    score: str = "scaled_dot"
    tie_embeddings: bool = False
    output_bias: bool = False
    pad_id: int = 0
    final_norm: bool | None = None

    def __post_init__(self) -> None:
        _check_types(self)
        _check_choice("architecture", self.architecture, ARCHITECTURES)
        _check_choice("norm", self.norm, NORMS)
        _check_choice("positional", self.positional, POSITIONALS)
        _check_choice("score", self.score, SCORES)
        _check_limits(self)
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        if self.has_encoder:
            _check_at_least("src_vocab_size", self.src_vocab_size, 5)
            _check_at_least("n_encoder_layers", self.n_encoder_layers, 1)
        if self.has_decoder:
            _check_at_least("tgt_vocab_size", self.tgt_vocab_size, 5)
            _check_at_least("n_decoder_layers", self.n_decoder_layers, 1)
        if self.architecture == "encoder":
            _check_at_least("n_classes", self.n_classes, 2)
        if self.tie_embeddings and not self.has_decoder:
            raise ValueError("tie_embeddings needs a decoder (architecture 'encoder' has none)")
        vocab = self.tgt_vocab_size if self.has_decoder else self.src_vocab_size
        if not 0 <= self.pad_id < vocab:
            raise ValueError(f"pad_id must be a valid token id below {vocab}, got {self.pad_id}")

    @property
    def has_encoder(self) -> bool:
        """Whether the model has an encoder stack."""
        return self.architecture in ("encoder-decoder", "encoder")

    @property
    def has_decoder(self) -> bool:
        """Whether the model has a decoder stack."""
        return self.architecture in ("encoder-decoder", "decoder")

    @property
    def head_dim(self) -> int:
        """Width of one head: d_k = d_v = d_model / n_heads."""
        return self.d_model // self.n_heads

    @property
    def attention_kinds(self) -> tuple[str, ...]:
        """The attention kinds this architecture has, in reading order."""
        return {
            "encoder-decoder": ("encoder", "decoder", "cross"),
            "encoder": ("encoder",),
            "decoder": ("decoder",),
        }[self.architecture]

    def n_layers(self, kind: str) -> int:
        """Number of layers producing attention of ``kind``."""
        return self.n_encoder_layers if kind == "encoder" else self.n_decoder_layers

    @property
    def never_generated(self) -> tuple[int, ...]:
        """Ids decoding must not produce: ``<pad>`` and ``<bos>`` (Attnscope's tokenizers put ``<bos>`` at id
        :data:`BOS_ID`, ``core.text.tokenizer``'s own)."""
        return (self.pad_id, BOS_ID)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict of every field."""
        return asdict(self)

    def to_json(self) -> str:
        """JSON text with sorted keys (stable, diff-friendly)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelConfig":
        """Build from a dict, rejecting unknown keys.

        Raises:
            ValueError: unknown keys, wrong types or invalid values.
        """
        if not isinstance(data, dict):
            raise ValueError(f"model config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config field(s): {', '.join(unknown)}")
        return cls(**{"final_norm": True, **data})  # saved before final_norm existed: stacks ended with one

    @property
    def has_final_norm(self) -> bool:
        """Whether each stack ends with a LayerNorm (see ``final_norm``)."""
        return self.norm == "pre" if self.final_norm is None else self.final_norm

    @classmethod
    def from_json(cls, text: str) -> "ModelConfig":
        """Parse :meth:`to_json` output.

        Raises:
            ValueError: malformed JSON or an invalid config.
        """
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as error:  # JSONDecodeError, over-long integers, deep nesting
            raise ValueError(f"model config is not valid JSON: {str(error)[:200]}") from None
        return cls.from_dict(data)


def _check_types(config: ModelConfig) -> None:
    for field in fields(config):
        value = getattr(config, field.name)
        expected = {"str": str, "int": int, "float": (int, float), "bool": bool,
                    "bool | None": (bool, type(None))}[field.type]
        # bool is an int subclass: refuse True where a count is meant, and vice versa.
        wrong_bool = isinstance(value, bool) and not field.type.startswith("bool")
        if wrong_bool or not isinstance(value, expected):
            raise ValueError(f"{field.name} must be of type {field.type}, got {_show(value)}")


def _check_limits(config: ModelConfig) -> None:
    for name, (low, high) in LIMITS.items():
        value = getattr(config, name)
        if name == "dropout":
            ok, text = low <= value < high, "in [0, 1)"
        elif name == "pe_base":
            ok, text = low < value <= high, f"greater than 1 and at most {high:g}"
        else:
            ok, text = low <= value <= high, f"at least {low}" if value < low else f"at most {high:,}"
        if not ok:  # NaN fails every comparison
            raise ValueError(f"{name} must be {text}, got {_show(value)}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {_show(value)}")


def _check_at_least(name: str, value: int, minimum: int) -> None:
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")


def _show(value: Any) -> str:
    """``repr(value)`` cut short: configs may come from untrusted files."""
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"
