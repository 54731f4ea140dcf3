"""One clip of speech followed through a Whisper model, stage by stage, read from its trace.

:func:`trace_speech` is the Lesson's track for a speech encoder-decoder: the audio becomes the log-mel
spectrogram the encoder reads (:mod:`core.audio`), the decoder transcribes it greedily from the model's own
prompt, and one forward pass over the transcript records (:mod:`core.model.trace`) the encoder's input after its
convolutional stem and positions, layer 0's self-attention over the frames, the decoder's layer-0 masked
self-attention and every layer's cross-attention queries and keys, from which the alignment of each text token
with the audio is computed (:func:`core.inspect.maps.from_trace`, the same softmax as the model's). Nothing here
knows the family's classes: sizes, prompt and alignment heads come from the config's fields.

The encoder always reads 1,500 frames (30 s, silence after the clip); the arrays keep the frames the clip
fills (``frames``), their rows computed over all 1,500 keys as the model does, so a cropped row may sum to less
than 1.

Axis letters: M mel bins, C spectrogram columns (10 ms), F frames (20 ms), T decoder rows, D model width,
H heads, dk head width, L decoder layers. Rows are queries, columns keys.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch

from core.audio.decode import load_audio
from core.audio.mel import frame_labels, frames_filled, log_mel
from core.generate.decode import greedy
from core.inspect.maps import from_trace
from core.inspect.speech import prompt
from core.io.pretrained.load import PretrainedModel
from core.lessons.walkthrough import as_numpy, head_trace, HeadTrace

log = logging.getLogger(__name__)

MAX_SECONDS = 8.0  # the Lesson's clips are short: 8 s = 400 frames
MAX_NEW_TOKENS = 48
CANDIDATES = 5  # the most likely next tokens kept per decoder row


@dataclass(frozen=True)
class SpeechTrace:
    """Every stage of one clip through a Whisper model.

    Attributes:
        seconds: the clip's length; samples: how many 16 kHz samples it has.
        features: float32 (M, 2F) the log-mel spectrogram of the frames the clip fills (10 ms columns).
        frames: F, how many 20 ms encoder frames the clip fills; n_frames: how many the encoder reads (1,500).
        frame_labels: (F,) each frame's start time (``0.02 s``).
        embedded: float32 (F, D) the encoder's input: GELU(conv2(GELU(conv1(mel)))) + positions.
        encoder_head: :class:`HeadTrace` of encoder layer 0, ``head``, over the clip's frames; its ``weights``
            are the model's own (softmax over all ``n_frames`` keys), cropped to F × F.
        encoder_mass: (F,) the weight each clip frame's query row puts on the clip's frames (the rest: silence).
        memory: float32 (F, D) the encoder's output (final LayerNorm included).
        target_ids / target_tokens: the decoder's input rows (prompt + transcript); generated_tokens: what each row predicts.
        prompt_tokens: how many rows read the prompt (``<|startoftranscript|>`` …).
        decoder_head: :class:`HeadTrace` of decoder layer 0 masked self-attention, ``head``.
        cross: float32 (L, H, T, F) every decoder layer's cross-attention over the clip's frames.
        alignment_heads: the checkpoint's (layer, head) pairs that follow the speech in time (0-based).
        candidates: per decoder row, the ``CANDIDATES`` likeliest next tokens as (token, probability).
        output_text: the transcript.
    """

    seconds: float
    samples: int
    features: np.ndarray
    frames: int
    n_frames: int
    frame_labels: tuple[str, ...]
    embedded: np.ndarray
    encoder_head: HeadTrace
    encoder_mass: np.ndarray
    memory: np.ndarray
    target_ids: tuple[int, ...]
    target_tokens: tuple[str, ...]
    generated_tokens: tuple[str, ...]
    prompt_tokens: int
    decoder_head: HeadTrace
    cross: np.ndarray
    alignment_heads: tuple[tuple[int, int], ...]
    candidates: tuple[tuple[tuple[str, float], ...], ...]
    output_text: str
    head: int
    n_heads: int
    d_model: int
    d_k: int
    d_ff: int
    n_mels: int
    n_encoder_layers: int
    n_decoder_layers: int
    vocab_size: int

    @property
    def alignment(self) -> np.ndarray:
        """(T, F) the mean of the alignment heads' cross-attention (of the last layer's heads when none is named)."""
        if self.alignment_heads:
            return np.stack([self.cross[l, h] for l, h in self.alignment_heads]).mean(0)
        return self.cross[-1].mean(0)


def _record(layers: int) -> list[str]:
    """What the forward pass over the transcript keeps: the encoder's input, layer 0's attention and output,
    the decoder's layer-0 self-attention, every layer's cross-attention q, k and scale."""
    return ["encoder.embed", "encoder.0.q", "encoder.0.k", "encoder.0.v", "encoder.0.scale", "encoder.final",
            "decoder.0.q", "decoder.0.k", "decoder.0.v", "decoder.0.scale", "decoder.0.mask",
            *(f"cross.{layer}.{part}" for layer in range(layers) for part in ("q", "k", "scale"))]


def _encoder_head(traced: dict[str, torch.Tensor], head: int, frames: int) -> tuple[HeadTrace, np.ndarray]:
    """Layer 0's ``head`` over all frames (as the model computes it), cropped to the clip's ``frames``."""
    q, k, v = (traced[f"encoder.0.{p}"][0, head].float() for p in "qkv")  # (1500, dk) each
    full = head_trace(q, k, v, torch.ones(q.size(0), k.size(0), dtype=torch.bool),
                      float(traced["encoder.0.scale"]))
    crop = (slice(0, frames), slice(0, frames))
    shown = HeadTrace(full.q[:frames], full.k[:frames], full.v[:frames], full.dot[crop], full.scaled[crop],
                      full.mask[crop], full.weights[crop], full.output[:frames], full.scale)
    return shown, full.weights[:frames, :frames].sum(-1)


def _decoder_head(traced: dict[str, torch.Tensor], head: int, rows: int) -> HeadTrace:
    """Decoder layer 0's masked ``head`` over its ``rows`` rows (the causal mask when none was recorded)."""
    q, k, v = (traced[f"decoder.0.{p}"][0, head, :rows].float() for p in "qkv")  # (T, dk) each
    recorded = traced.get("decoder.0.mask")
    mask = (torch.ones(rows, rows, dtype=torch.bool).tril() if recorded is None
            else torch.broadcast_to(recorded, (1, 1, rows, rows))[0, 0].bool())
    return head_trace(q, k, v, mask, float(traced["decoder.0.scale"]))


def _candidates(logits: torch.Tensor, tokenizer, banned: tuple[int, ...]) -> tuple[tuple[tuple[str, float], ...], ...]:
    """Per row of ``logits`` (T, V), the likeliest next tokens with their probabilities, among the ids decoding
    may produce (``banned``: the special tokens it never writes, ruled out as greedy decoding rules them out)."""
    logits = logits.float().clone()
    logits[..., list(banned)] = float("-inf")
    top = logits.softmax(-1).topk(CANDIDATES, dim=-1)
    return tuple(tuple(zip(tokenizer.token_strings(ids.tolist()), map(float, p.tolist())))
                 for ids, p in zip(top.indices, top.values))


def trace_speech(model: PretrainedModel, audio: bytes, head: int = 0) -> SpeechTrace:
    """Follow the ``audio`` clip (WAV, FLAC or OGG bytes, at most ``MAX_SECONDS``) through a Whisper model.

    Args:
        model: a loaded speech model (``model.head == "speech"``: Whisper).
        audio: the clip's bytes. head: which head to follow in detail (0-based).

    Raises:
        ValueError: not a speech model, a head out of range, or audio that cannot be read (one line).
    """
    c = model.config
    if getattr(model, "head", None) != "speech" or getattr(c, "modality", "text") != "audio":
        raise ValueError(f"The speech lesson follows a Whisper model; {model.name} is a {model.family} model.")
    if not 0 <= head < c.n_heads:
        raise ValueError(f"head must be in 0..{c.n_heads - 1}, got {head}")
    clip = load_audio(audio, max_seconds=MAX_SECONDS)
    device = next(model.model.parameters()).device
    features = torch.from_numpy(log_mel(clip.samples, c.n_mels))[None].to(device)  # (1, M, 3000)
    start = prompt(model, "transcribe", "en")  # the Lesson's clips are English
    with torch.inference_mode():
        gen = greedy(model.model, features, torch.tensor([start], device=device), eos_id=c.eot_id,
                     max_new_tokens=MAX_NEW_TOKENS)
        ids = gen.ids[:, :-1]  # (1, T): every row that predicts a token
        out = model.model(features, ids, record=_record(c.n_decoder_layers))
    traced, frames, rows = out.trace, frames_filled(clip.seconds, c.n_frames), ids.size(1)
    encoder_head, mass = _encoder_head(traced, head, frames)
    cross = from_trace(traced, "cross", c.n_decoder_layers, 0, tuple(range(c.n_heads)), 1.0, False)
    every = gen.ids[0].tolist()
    tok = model.tokenizer
    log.debug("speech lesson: %.2f s, %d frames, %d decoder rows", clip.seconds, frames, rows)
    return SpeechTrace(
        seconds=float(clip.seconds), samples=int(clip.samples.size),
        features=np.ascontiguousarray(features[0, :, : 2 * frames].cpu().numpy()), frames=frames,
        n_frames=int(c.n_frames), frame_labels=frame_labels(frames),
        embedded=as_numpy(traced["encoder.embed"][0, :frames]), encoder_head=encoder_head, encoder_mass=mass,
        memory=as_numpy(traced["encoder.final"][0, :frames]),
        target_ids=tuple(every[:-1]), target_tokens=tuple(tok.token_strings(every[:-1])), generated_tokens=tuple(tok.token_strings(every[1:])),
        prompt_tokens=len(start), decoder_head=_decoder_head(traced, head, rows),
        cross=np.ascontiguousarray(np.asarray(cross)[..., :frames], dtype=np.float32),  # (L, H, T, F)
        alignment_heads=tuple(tuple(p) for p in c.alignment_heads),
        candidates=_candidates(out.logits[0], tok, tuple(getattr(c, "never_generated", ()))), output_text=tok.decode(every).strip(), head=head,
        n_heads=int(c.n_heads), d_model=int(c.d_model), d_k=int(c.d_model // c.n_heads), d_ff=int(c.d_ff), n_mels=int(c.n_mels),
        n_encoder_layers=int(c.n_encoder_layers), n_decoder_layers=int(c.n_decoder_layers),
        vocab_size=int(out.logits.size(-1)),
    )

