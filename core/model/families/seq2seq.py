"""One encoder-decoder on the model contract for Marian, BART/mBART and T5, with every map.

The model shares one token embedding between encoder, decoder and (tied) output head. Each stack
adds its positions (:mod:`~core.model.families.marian` sinusoids, :mod:`~core.model.families.bart`
learned table, or :mod:`~core.model.families.t5` relative bias on the scores) and runs
:class:`~core.model.families.seq2seq_layers.Seq2SeqLayer` s. ``encode``/``decode``/``lm_head``/
``next_token_logits`` are what :mod:`core.generate.decode` drives, as for our own Transformer.

Glossary: B batch, S source length, T target length, L layers, H heads, D model width, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from core.model.contract import AttentionControls, ModelOutput, check_ids, stack_head_mask
from core.model.families.bart import LearnedPositions
from core.model.families.grouped import HeadCall, embedding, padded_loss, stacked_output
from core.model.families.marian import SinusoidalPositions
from core.model.families.seq2seq_layers import Seq2SeqConfig, Seq2SeqLayer, make_norm
from core.model.families.t5 import RelativeBias
from core.model.kv_cache import KVCache, decoding_step
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site


class Stack(nn.Module):
    """The encoder (``decoder=False``) or the decoder: positions, layers, optional norms."""

    def __init__(self, c: Seq2SeqConfig, decoder: bool) -> None:
        super().__init__()
        self.embed_scale = c.embed_scale
        self.positions = None
        self.relative = None
        if c.positions == "sinusoidal":
            self.positions = SinusoidalPositions(c.d_model)
        elif c.positions == "learned":
            self.positions = LearnedPositions(c.max_len, c.d_model)
        else:
            self.relative = RelativeBias(c.relative_buckets, c.relative_max_distance, c.n_heads, not decoder)
        self.embedding_norm = make_norm(c) if c.embedding_norm else None
        self.layers = nn.ModuleList(Seq2SeqLayer(c, cross=decoder) for _ in range(
            c.n_decoder_layers if decoder else c.n_encoder_layers))
        self.final_norm = make_norm(c) if c.final_norm else None

    def forward(self, x: Tensor, self_mask: Tensor | None, memory: Tensor | None, memory_mask: Tensor | None,
                call: HeadCall, heads: tuple[Tensor | None, Tensor | None],
                cache: KVCache | None = None, start: int = 0) -> tuple[Tensor, list, list]:
        """Run the stack over embedded tokens ``x`` (B, T, D) at positions start … start + T − 1 (``start`` > 0
        only with a decoder ``cache`` holding the earlier ones); returns (hidden, self results, cross results)."""
        length, device = x.size(1), x.device
        x = x * self.embed_scale
        if self.positions is not None:
            x = x + self.positions(start, length, device)  # (B, T, D)
        bias = None if self.relative is None else self.relative(start, length, start + length, device)  # (1, H, T, Tk)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        put(call, "embed", x)
        self_results, cross_results = [], []
        for i, layer in enumerate(self.layers):
            layer_heads = tuple(None if h is None else h[i] for h in heads)
            x, self_result, cross_result = layer(x, self_mask, bias, memory, memory_mask, at_layer(call, i),
                                                 layer_heads, None if cache is None else cache.layers[i])
            self_results.append(self_result)
            cross_results.append(cross_result)
        return put(call, "final", x if self.final_norm is None else self.final_norm(x)), self_results, cross_results


class Seq2SeqModel(nn.Module):
    """A Marian, BART/mBART or T5 encoder-decoder; ``forward`` matches :class:`~core.model.transformer.Transformer`'s."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = c = config
        self.embed = embedding(c.vocab_size, c.d_model)
        self.encoder = Stack(c, decoder=False)
        self.decoder = Stack(c, decoder=True)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tied_head:
            self.head.weight = self.embed.weight
        if c.logits_bias:
            self.register_buffer("logits_bias", torch.zeros(c.vocab_size))

    def _head_mask(self, controls: AttentionControls, kind: str) -> Tensor | None:
        return stack_head_mask(controls, self.config, kind)

    def _ids(self, ids: Tensor, start: int = 0) -> Tensor:
        check_ids(ids, self.config.max_len - start, self.config.vocab_size)
        return self.embed(ids)  # (B, T, D)

    def encode(self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               need_scores: bool = False, key_mask: Tensor | None = None,
               recorder: Recorder | None = None) -> tuple[Tensor, Tensor | None, list]:
        """Run the encoder over ``src`` (B, S).

        Args:
            key_mask: (B, S) bool, False on padding; default: the ids equal to ``pad_id``.
            recorder: collects the pass's trace (:mod:`core.model.trace`) under ``encoder.…``.

        Returns:
            memory (B, S, D), the source key mask (B, 1, S) or None (no padding, or padding off),
            and per-layer results.
        """
        real = src != self.config.pad_id if key_mask is None else key_mask  # (B, S)
        memory_mask = real[:, None, :] if controls.padding and not bool(real.all()) else None  # (B, 1, S)
        call = HeadCall(controls.temperature, controls.hard, need_weights or need_scores,
                        site=stack_site(recorder, "encoder"))
        self_mask = None if memory_mask is None else memory_mask[:, None]  # (B, 1, 1, S)
        heads = (self._head_mask(controls, "encoder"), None)
        memory, results, _ = self.encoder(self._ids(src), self_mask, None, None, call, heads)
        return memory, memory_mask, results

    def decode(self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
               controls: AttentionControls = AttentionControls(), need_weights: bool = False,
               need_scores: bool = False, key_mask: Tensor | None = None,
               cache: KVCache | None = None, recorder: Recorder | None = None) -> tuple[Tensor, list, list]:
        """Run the decoder over ``tgt`` (B, T) attending to ``memory`` (B, S, D) (``recorder``: the trace).

        Decoder keys are masked only by look-ahead and ``key_mask`` (B, T), never by the pad id:
        Marian's and T5's decoders start from it. With a ``cache`` (causal only, no ``key_mask``),
        ``tgt`` holds just the positions after those the cache has seen, and the result covers just them.

        Returns:
            hidden states (B, T, D), per-layer self-attention and cross-attention results.
        """
        if memory is None:
            raise ValueError("an encoder-decoder's decoder needs the encoder's memory")
        if cache is not None and (not controls.causal or key_mask is not None):
            raise ValueError("a KV cache needs the causal mask and no decoder key mask")
        start, length = (0 if cache is None else cache.length), tgt.size(1)
        if cache is not None:
            cache.extend_ids(tgt)
        mask = None
        if controls.causal and not (start > 0 and length == 1):  # one new query may see every key
            mask = torch.ones(length, start + length, dtype=torch.bool, device=tgt.device).tril(start)  # (T, Tk)
        if key_mask is not None and controls.padding:
            keys = key_mask[:, None, None, :]  # (B, 1, 1, T)
            mask = keys if mask is None else mask & keys
        call = HeadCall(controls.temperature, controls.hard, need_weights or need_scores,
                        site=stack_site(recorder, "decoder"))
        cross_mask = None if memory_mask is None else memory_mask[:, None]  # (B, 1, 1, S)
        heads = (self._head_mask(controls, "decoder"), self._head_mask(controls, "cross"))
        return self.decoder(self._ids(tgt, start), mask, memory, cross_mask, call, heads, cache, start)

    def unembed(self, resid: Tensor) -> Tensor:
        """Logits (…, V) of a decoder residual stream (…, D): the decoder's final norm (when there is one), then
        :meth:`lm_head`."""
        norm = self.decoder.final_norm
        return self.lm_head(resid if norm is None else norm(resid))

    def lm_head(self, hidden: Tensor) -> Tensor:
        """Next-token logits (…, V) of decoder states (…, D)."""
        logits = self.head(hidden * self.config.logits_scale if self.config.logits_scale != 1.0 else hidden)
        return logits + self.logits_bias if self.config.logits_bias else logits

    def next_token_logits(self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
                          controls: AttentionControls = AttentionControls(), cache: KVCache | None = None) -> Tensor:
        """Scores (B, V) for the token after ``tgt`` (B, T): one decoding step.

        Pass the same :meth:`kv_cache` with the growing ``tgt`` at every step of one decoding call: only
        the ids it has not seen run. Without the causal mask the cache is left unused and the whole prefix runs.
        """
        return decoding_step(self, tgt, memory, memory_mask, controls, cache)

    def kv_cache(self) -> KVCache:
        """A fresh key/value cache for ONE decoding call (never stored on the model)."""
        return KVCache(self.config.n_decoder_layers)

    def forward(self, src: Tensor | None = None, tgt: Tensor | None = None, targets: Tensor | None = None, *,
                controls: AttentionControls = AttentionControls(), return_attention: bool = False,
                return_scores: bool = False, key_mask: Tensor | None = None,
                record: list[str] | None = None) -> ModelOutput:
        """Logits (B, T, V) of ``tgt`` given ``src``; maps per kind (L, B, H, Tq, Tk) on request.

        Args:
            targets: (B, T) next-token ids (pad positions ignored) for a mean cross-entropy ``loss``.
            key_mask: (B, S) bool, False on the source's padding.
            record: the trace's parts to keep (:mod:`core.model.trace`).
        """
        if src is None or tgt is None:
            raise ValueError("an encoder-decoder needs src and tgt ids")
        need = {"need_weights": return_attention, "need_scores": return_scores}
        recorder = recorder_of(record)
        memory, memory_mask, encoder = self.encode(src, controls, **need, key_mask=key_mask, recorder=recorder)
        hidden, decoder, cross = self.decode(tgt, memory, memory_mask, controls, **need, recorder=recorder)
        logits = self.lm_head(hidden)  # (B, T, V)
        loss = None if targets is None else padded_loss(logits, targets, self.config.pad_id)
        return stacked_output(logits, {"encoder": encoder, "decoder": decoder, "cross": cross}, return_attention,
                              return_scores, recorder, loss)
