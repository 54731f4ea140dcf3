"""What a server knows of a model it never loads: plain facts its worker process reports.

An uploaded model (or one from the models folder) is loaded only in its worker's child process
(:mod:`core.inspect.worker`); the child reports :func:`facts_of` the loaded model as JSON, and the server
rebuilds :class:`ModelFacts` with :meth:`ModelFacts.from_json`, every value type-checked. The facts answer what
the pages ask of a loaded model without one: its kind and shape (:attr:`ModelFacts.config`), an Attnscope
checkpoint's header (:attr:`ModelFacts.info`: config, tokenizers, task, metrics, training record: rebuilt with
every check reading the file makes, :func:`core.io.checkpoint.info_from_header`) and its parameters per block.
Nothing in them is a module, a tensor or a file handle.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from core.io.checkpoint import Checkpoint, CheckpointInfo, header_entries, info_from_header
from core.io.pretrained.load import PretrainedModel
from core.model.contract import ARCHITECTURE_KINDS, FamilySpec
from core.model.families.seq2seq import Seq2SeqModel
from core.text.tokenizer import Tokenizer

OWN = "attnscope"  # the family of an Attnscope checkpoint


@dataclass(frozen=True)
class SpecFacts(FamilySpec):
    """A model's shape, as the pages read a config: its kind, heads, width, layers and positions (the contract's
    questions answered by :class:`~core.model.contract.FamilySpec` from these fields)."""

    architecture: str
    n_heads: int
    d_model: int
    n_encoder_layers: int
    n_decoder_layers: int
    max_len: int





@dataclass(frozen=True)
class ModelFacts:
    """What the server needs to know about a model it does not load itself.

    Attributes:
        architecture: ``encoder``, ``decoder`` or ``encoder-decoder``. max_len: its positions.
        parameters: how many parameters it has (for the cost of a request).
        path: the file or folder it was loaded from. family: :data:`OWN` for an Attnscope checkpoint, else the
            pretrained family (``bert``, ``llama``, ``marian`` …). name: its display name.
        spec: its shape (None only for facts made without a model).
        text_seq2seq: a pretrained text encoder-decoder (Marian, BART, T5): the Lesson follows it.
        parameter_counts: an Attnscope checkpoint's parameters per top-level block, as (block, count) pairs.
        header: an Attnscope checkpoint's header entries (:func:`core.io.checkpoint.header_entries`), as pairs.
    """

    architecture: str
    max_len: int
    parameters: int
    path: str = ""
    family: str = OWN
    name: str = ""
    spec: SpecFacts | None = None
    text_seq2seq: bool = False
    parameter_counts: tuple[tuple[str, int], ...] = ()
    header: tuple[tuple[str, str], ...] = ()

    @property
    def pretrained(self) -> bool:
        """Whether the model is a pretrained one (not an Attnscope checkpoint)."""
        return self.family != OWN

    @cached_property
    def info(self) -> CheckpointInfo | None:
        """An Attnscope checkpoint's header (None for a pretrained model).

        Raises:
            CheckpointError: entries that fail the checks reading the file makes.
        """
        return info_from_header(self.path, dict(self.header)) if self.family == OWN and self.header else None

    @property
    def config(self) -> Any:
        """What the pages read as the model's config: a checkpoint's :class:`~core.config.ModelConfig`, else
        its :class:`SpecFacts`."""
        return self.info.config if self.info is not None else self.spec

    @property
    def source_tokenizer(self) -> Tokenizer | None:
        """An Attnscope checkpoint's encoder tokenizer, if any."""
        return None if self.info is None else self.info.tokenizers.get("source")

    @property
    def target_tokenizer(self) -> Tokenizer | None:
        """An Attnscope checkpoint's decoder tokenizer, if any."""
        return None if self.info is None else self.info.tokenizers.get("target")

    def to_json(self) -> dict[str, Any]:
        """The facts as JSON values (what the child sends)."""
        return asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> ModelFacts:
        """The facts a child sent, every field's type checked.

        Raises:
            ValueError: a field missing or of the wrong type.
        """
        if not isinstance(value, dict) or set(value) - {f.name for f in fields(cls)}:
            raise ValueError("the model's facts are malformed")
        try:
            spec = value.get("spec")
            facts = cls(
                _typed(value["architecture"], str), _typed(value["max_len"], int), _typed(value["parameters"], int),
                _typed(value.get("path", ""), str), _typed(value.get("family", OWN), str),
                _typed(value.get("name", ""), str),
                None if spec is None else SpecFacts(*(_typed(spec[f.name], t) for f, t in
                                                      zip(fields(SpecFacts), (str, int, int, int, int, int)))),
                _typed(value.get("text_seq2seq", False), bool),
                tuple((_typed(k, str), _typed(n, int)) for k, n in value.get("parameter_counts", ())),
                tuple((_typed(k, str), _typed(v, str)) for k, v in value.get("header", ())))
        except (KeyError, TypeError, ValueError):
            raise ValueError("the model's facts are malformed") from None
        if facts.architecture not in ARCHITECTURE_KINDS:
            raise ValueError("the model's facts are malformed")
        return facts


def _typed(value: Any, kind: type) -> Any:
    """``value`` when it is a ``kind`` (a bool is no int here), else TypeError."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(kind.__name__)
    return value


def facts_of(loaded: Checkpoint | PretrainedModel, parameters: int) -> ModelFacts:
    """The facts of a loaded model with ``parameters`` parameters (the child's side)."""
    config = loaded.config
    spec = SpecFacts(config.architecture, int(config.n_heads), int(config.d_model),
                     int(getattr(config, "n_encoder_layers", 0) if config.has_encoder else 0),
                     int(getattr(config, "n_decoder_layers", 0) if config.has_decoder else 0),
                     int(getattr(config, "max_len", 0)))
    if isinstance(loaded, PretrainedModel):
        return ModelFacts(config.architecture, spec.max_len, parameters, str(loaded.path), loaded.family, loaded.name,
                          spec, isinstance(loaded.model, Seq2SeqModel))
    counts = tuple(loaded.model.parameter_counts().items())
    return ModelFacts(config.architecture, spec.max_len, parameters, str(loaded.info.path), OWN,
                      Path(loaded.info.path).stem, spec, False, counts, tuple(header_entries(loaded.info).items()))

