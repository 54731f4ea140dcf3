"""Whisper's configuration: sizes, special token ids and decoding constants of one checkpoint
(read by ``core.io.pretrained.ct2_whisper``, satisfying :class:`~core.model.contract.ModelSpec`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from core.model.contract import KINDS, check_positive


@dataclass(frozen=True)
class WhisperConfig:
    """Sizes, special ids and decoding constants of a Whisper checkpoint (``asdict`` round trip).

    Attributes:
        eot_id: ``<|endoftext|>`` (ends the output; also pads a batch). sot_id: ``<|startoftranscript|>``.
        no_timestamps_id: ``<|notimestamps|>``. transcribe_id / translate_id: the task tokens
            (None in an English-only model). languages: (code, token id) pairs (empty when English-only).
        suppress_ids: ids the checkpoint never lets decoding produce. alignment_heads: (layer,
            head) pairs of cross-attention that follow the speech in time (0-based).
    """

    vocab_size: int
    d_model: int
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    d_ff: int
    eot_id: int
    sot_id: int
    no_timestamps_id: int
    n_mels: int = 80
    n_frames: int = 1500
    max_len: int = 448
    norm_eps: float = 1e-5
    transcribe_id: int | None = None
    translate_id: int | None = None
    languages: tuple[tuple[str, int], ...] = ()
    suppress_ids: tuple[int, ...] = ()
    alignment_heads: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_encoder_layers", "n_decoder_layers", "n_heads", "d_ff", "n_mels",
                     "n_frames", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        ids = [self.eot_id, self.sot_id, self.no_timestamps_id, *self.suppress_ids, *(i for _, i in self.languages),
               *(i for i in (self.transcribe_id, self.translate_id) if i is not None)]
        if any(not 0 <= i < self.vocab_size for i in ids):
            raise ValueError(f"a special token id is outside the vocabulary of {self.vocab_size}")
        if any(not (0 <= layer < self.n_decoder_layers and 0 <= head < self.n_heads)
               for layer, head in self.alignment_heads):
            raise ValueError("an alignment head is outside the decoder's layers and heads")
        check_positive(self, "norm_eps")

    architecture = "encoder-decoder"
    modality = "audio"  # what the encoder reads (a text model's spec has no such field: text)
    attention_kinds = KINDS
    has_encoder = True
    has_decoder = True

    @property
    def pad_id(self) -> int:
        """Whisper pads a batch with ``<|endoftext|>``."""
        return self.eot_id

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def multilingual(self) -> bool:
        """Whether the model has language and task tokens (English-only ``.en`` models have none)."""
        return self.translate_id is not None

    @property
    def never_generated(self) -> tuple[int, ...]:
        """The checkpoint's suppressed ids and every special token after ``<|endoftext|>`` (start,
        languages, tasks, timestamps): decoding produces text then ``<|endoftext|>``."""
        return tuple(sorted(set(self.suppress_ids) | set(range(self.eot_id + 1, self.vocab_size))))

    def n_layers(self, kind: str) -> int:
        """Layers holding attention of ``kind``."""
        return self.n_encoder_layers if kind == "encoder" else self.n_decoder_layers

    def to_dict(self) -> dict:
        return asdict(self)
