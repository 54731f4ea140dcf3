"""Whisper: the paper's encoder-decoder on audio, returning every head's attention; its configuration
(sizes, special token ids and decoding constants of one checkpoint) and the model it builds.

The encoder reads an 80-bin log-mel spectrogram (B, 80, 3000) of a 30 s window: two 1-D
convolutions with GELU (the second of stride 2: 3,000 spectrogram columns → 1,500 frames of
20 ms), sinusoidal positions, pre-norm blocks and a final LayerNorm. The decoder embeds the
tokens with learned positions and runs pre-norm blocks of masked self-attention,
cross-attention into the 1,500 frames and a GELU feed-forward network; a final LayerNorm,
then the logits against the token embedding (tied output).

Glossary: B batch, M mel bins, F frames, T tokens, L layers, H heads, dk head width,
D model width, V vocabulary. Rows are queries, columns keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.model.contract import KINDS, AttentionControls, ModelOutput, check_ids, check_positive, stack_head_mask
from core.model.families.grouped import HeadCall, grouped_attention, padded_loss, stacked_output
from core.model.kv_cache import AttentionCache, KVCache
from core.model.masks import combine_masks, padding_mask, subsequent_mask
from core.model.trace import Recorder, at_layer, of_kind, put, recorder_of, stack_site


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


class WhisperAttention(nn.Module):
    """Multi-head attention in CTranslate2's layout: self-attention projects Q, K, V with one
    (D → 3D) matrix; cross-attention projects Q from the decoder and K, V (D → 2D) from the frames."""

    def __init__(self, d_model: int, n_heads: int, cross: bool = False) -> None:
        super().__init__()
        self.n_heads, self.cross = n_heads, cross
        if cross:
            self.query, self.kv = nn.Linear(d_model, d_model), nn.Linear(d_model, 2 * d_model)
        else:
            self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def _heads(self, x: Tensor) -> Tensor:
        batch, length, width = x.shape
        return x.view(batch, length, self.n_heads, width // self.n_heads).transpose(1, 2)  # (B, H, T, dk)

    def _frames_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values (B, H, F, dk) of the frames (B, F, D). A memory broadcast over the beams of
        one source (batch stride 0, as beam search passes it) is projected once, then copied per beam."""
        if memory.size(0) > 1 and memory.stride(0) == 0:
            k, v = self._frames_kv(memory[:1])  # (1, H, F, dk) each
            return tuple(t.expand(memory.size(0), -1, -1, -1).contiguous() for t in (k, v))
        k, v = self.kv(memory).chunk(2, dim=-1)  # (B, F, D) each
        return self._heads(k), self._heads(v)

    def forward(self, x: Tensor, memory: Tensor | None, mask: Tensor | None, call: HeadCall,
                head_mask: Tensor | None, cache: AttentionCache | None):
        if self.cross:
            q = self._heads(self.query(x))  # (B, H, Tq, dk)
            stored = None if cache is None else cache.fixed()
            if stored is None:
                k, v = self._frames_kv(memory)  # (B, H, F, dk) each
                if cache is not None:
                    cache.store(k, v)
            else:
                k, v = stored
        else:
            q, k, v = (self._heads(t) for t in self.qkv(x).chunk(3, dim=-1))  # (B, H, T, dk) each
            if cache is not None:
                k, v = cache.append(k, v)  # (B, H, Tk, dk): every position so far
        result = grouped_attention(q, k, v, mask, call, head_mask)
        return self.out(result.output), result  # (B, Tq, D)


class FeedForward(nn.Module):
    """up, GELU, down."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.gelu(self.up(x)))  # (B, T, D)


class EncoderBlock(nn.Module):
    """Pre-norm: x + attention(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, c: WhisperConfig) -> None:
        super().__init__()
        self.attn_norm, self.attn = nn.LayerNorm(c.d_model, eps=c.norm_eps), WhisperAttention(c.d_model, c.n_heads)
        self.ffn_norm, self.ffn = nn.LayerNorm(c.d_model, eps=c.norm_eps), FeedForward(c.d_model, c.d_ff)

    def forward(self, x: Tensor, call: HeadCall, head_mask: Tensor | None):
        attended, result = self.attn(self.attn_norm(x), None, None, call, head_mask, None)
        x = put(call, "resid_mid", x + put(call, "attn_out", attended))  # (B, F, D)
        return put(call, "resid_out", x + put(call, "ffn_out", self.ffn(self.ffn_norm(x)))), result


class DecoderBlock(nn.Module):
    """Pre-norm: masked self-attention, cross-attention into the frames, FFN, each added to the stream."""

    def __init__(self, c: WhisperConfig) -> None:
        super().__init__()
        self.self_norm, self.self_attn = nn.LayerNorm(c.d_model, eps=c.norm_eps), WhisperAttention(c.d_model, c.n_heads)
        self.cross_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.cross_attn = WhisperAttention(c.d_model, c.n_heads, cross=True)
        self.ffn_norm, self.ffn = nn.LayerNorm(c.d_model, eps=c.norm_eps), FeedForward(c.d_model, c.d_ff)

    def forward(self, x, memory, self_mask, call, heads, cache):
        self_cache, cross_cache = (None, None) if cache is None else cache
        attended, self_result = self.self_attn(self.self_norm(x), None, self_mask, call, heads[0], self_cache)
        x = put(call, "resid_mid", x + put(call, "attn_out", attended))  # (B, T, D)
        cross = of_kind(call, "cross")
        attended, cross_result = self.cross_attn(self.cross_norm(x), memory, None, cross, heads[1], cross_cache)
        x = put(cross, "resid_mid", x + put(cross, "attn_out", attended))
        return put(call, "resid_out", x + put(call, "ffn_out", self.ffn(self.ffn_norm(x)))), self_result, cross_result


class WhisperModel(nn.Module):
    """A Whisper checkpoint on the model contract (``encode``, ``decode``, ``lm_head``,
    ``next_token_logits`` with an optional KV cache, ``forward`` with every kind's maps)."""

    def __init__(self, config: WhisperConfig) -> None:
        super().__init__()
        self.config = c = config
        self.conv1 = nn.Conv1d(c.n_mels, c.d_model, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(c.d_model, c.d_model, kernel_size=3, stride=2, padding=1)
        self.encoder_positions = nn.Parameter(torch.zeros(c.n_frames, c.d_model), requires_grad=False)
        self.encoder_layers = nn.ModuleList(EncoderBlock(c) for _ in range(c.n_encoder_layers))
        self.encoder_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        self.decoder_positions = nn.Parameter(torch.zeros(c.max_len, c.d_model))
        self.decoder_layers = nn.ModuleList(DecoderBlock(c) for _ in range(c.n_decoder_layers))
        self.decoder_norm = nn.LayerNorm(c.d_model, eps=c.norm_eps)

    def _head_mask(self, controls: AttentionControls, kind: str) -> Tensor | None:
        return stack_head_mask(controls, self.config, kind)

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               need_scores: bool = False, recorder: Recorder | None = None) -> tuple[Tensor, None, list]:
        """Frames (B, F, D) of log-mel features ``src`` (B, M, 2F); no source mask (every frame is
        real: silence too); per-layer results with maps when asked; ``recorder``: the trace."""
        c = self.config
        if src is None or src.dim() != 3 or tuple(src.shape[1:]) != (c.n_mels, 2 * c.n_frames) \
                or not src.is_floating_point():
            raise ValueError(f"src must be log-mel features (batch, {c.n_mels}, {2 * c.n_frames}), "
                             f"got {None if src is None else tuple(src.shape)}")
        x = F.gelu(self.conv2(F.gelu(self.conv1(src.to(self.conv1.weight.dtype)))))  # (B, D, F)
        call = HeadCall(controls.temperature, controls.hard, need_weights or need_scores,
                        site=stack_site(recorder, "encoder"))
        x = put(call, "embed", x.transpose(1, 2) + self.encoder_positions)  # (B, F, D)
        heads, results = self._head_mask(controls, "encoder"), []
        for i, layer in enumerate(self.encoder_layers):
            x, result = layer(x, at_layer(call, i), None if heads is None else heads[i])
            results.append(result if need_scores else result._replace(scores=None))  # scores only when asked
        return put(call, "final", self.encoder_norm(x)), None, results

    def decode(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None,
               controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               need_scores: bool = False, cache: KVCache | None = None,
               recorder: Recorder | None = None) -> tuple[Tensor, list, list]:
        """Hidden states (B, T, D) of ``tgt`` (B, T) attending to the frames ``memory`` (B, F, D),
        and per-layer self- and cross-attention results. With a ``cache`` (causal only) ``tgt``
        holds just the positions the cache has not seen. ``memory_mask`` is unused (no padding frames)."""
        if cache is not None and not controls.causal:
            raise ValueError("a KV cache needs the causal mask: without it earlier positions see later ones")
        start = 0 if cache is None else cache.length
        check_ids(tgt, self.config.max_len - start, self.config.vocab_size)
        ids = tgt if cache is None else cache.extend_ids(tgt)  # (B, Tk): every key position
        call = HeadCall(controls.temperature, controls.hard, need_weights or need_scores,
                        site=stack_site(recorder, "decoder"))
        x = put(call, "embed", self.embed(tgt) + self.decoder_positions[start: start + tgt.size(1)])  # (B, T, D)
        pad = padding_mask(ids, self.config.pad_id) if controls.padding else None  # (B, 1, Tk)
        pad = None if pad is None or bool(pad.all()) else pad
        causal = subsequent_mask(ids.size(1), tgt.device)[start:] if controls.causal else None  # (T, Tk)
        mask = combine_masks(causal, pad)
        mask = None if mask is None else mask.unsqueeze(-3)  # (B|1, 1, T, Tk)
        self_heads, cross_heads = self._head_mask(controls, "decoder"), self._head_mask(controls, "cross")
        self_results, cross_results = [], []
        for i, layer in enumerate(self.decoder_layers):
            heads = (None if self_heads is None else self_heads[i], None if cross_heads is None else cross_heads[i])
            layer_cache = None if cache is None else cache.layers[i]
            x, self_result, cross_result = layer(x, memory, mask, at_layer(call, i), heads, layer_cache)
            self_results.append(self_result if need_scores else self_result._replace(scores=None))
            cross_results.append(cross_result if need_scores else cross_result._replace(scores=None))
        return put(call, "final", self.decoder_norm(x)), self_results, cross_results

    def unembed(self, resid: Tensor) -> Tensor:
        """Logits (…, V) of a decoder residual stream (…, D): the decoder's final LayerNorm, then :meth:`lm_head`."""
        return self.lm_head(self.decoder_norm(resid))

    def lm_head(self, hidden: Tensor) -> Tensor:
        """Logits (B, T, V) of hidden states (B, T, D): the output is tied to the token embedding."""
        return hidden @ self.embed.weight.t()

    def next_token_logits(self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
                          controls: AttentionControls = AttentionControls(), cache: KVCache | None = None) -> Tensor:
        """Scores (B, V) for the token after ``tgt`` (B, T); with a cache only the unseen ids run."""
        if cache is not None and controls.causal:
            hidden, _, _ = self.decode(tgt[:, cache.length:], memory, memory_mask, controls, cache=cache)
        else:
            hidden, _, _ = self.decode(tgt, memory, memory_mask, controls)
        return self.lm_head(hidden[:, -1])  # (B, V)

    def kv_cache(self) -> KVCache:
        """A fresh key/value cache for ONE decoding call (never stored on the model)."""
        return KVCache(len(self.decoder_layers))

    def forward(self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
                controls: AttentionControls = AttentionControls(), return_attention: bool = False,
                return_scores: bool = False, record: list[str] | None = None) -> ModelOutput:
        """Logits (B, T, V) for ``tgt`` (B, T) given log-mel ``src`` (B, M, 2F); maps under
        ``encoder`` (L, B, H, F, F), ``decoder`` (L, B, H, T, T) and ``cross`` (L, B, H, T, F) on request;
        ``record`` names the trace's parts to keep."""
        if tgt is None:
            raise ValueError("Whisper needs src features and tgt ids")
        need = return_attention or return_scores
        recorder = recorder_of(record)
        memory, _, encoder = self.encode(src, controls, need, return_scores, recorder=recorder)
        hidden, decoder, cross = self.decode(tgt, memory, None, controls, need, return_scores, recorder=recorder)
        logits = self.lm_head(hidden)  # (B, T, V)
        loss = None if targets is None else padded_loss(logits, targets, self.config.pad_id)
        return stacked_output(logits, {"encoder": encoder, "decoder": decoder, "cross": cross}, return_attention,
                              return_scores, recorder, loss)
