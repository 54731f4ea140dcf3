"""The Transformer of "Attention Is All You Need", returning every head's attention on request.

Glossary: B batch, S source length, T target length, L layers, H heads,
D model width, V vocabulary, C classes. Attention maps are (L, B, H, Tq, Tk):
row = query (the token attending), column = key (the token attended to).

Three architectures share the parts: ``encoder-decoder`` (translation-style),
``encoder`` (a classifier: per-token class scores max-pooled over the sentence,
as the lecture's TransformerClassifier) and ``decoder`` (a causal language model).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from core.config import ModelConfig
from core.model.kv_cache import KVCache, decoding_step, positions_from
from core.model.layers import DecoderLayer, EncoderLayer, LayerCall, LayerResults, stack_maps
from core.model.masks import combine_masks, padding_mask, subsequent_mask
from core.model.positional import make_positional
from core.model.contract import AttentionControls, ModelOutput, stack_head_mask
from core.model.trace import Recorder, at_layer, put, recorder_of, stack_site


class Transformer(nn.Module):
    """Encoder-decoder, encoder-only or decoder-only Transformer built from a :class:`ModelConfig`."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        c, pre = config, config.norm == "pre"
        self.positional = make_positional(c.positional, c.max_len, c.d_model, c.pe_base)
        self.embed_dropout = nn.Dropout(c.dropout)
        if c.has_encoder:
            self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
            self.encoder_layers = nn.ModuleList(
                EncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, pre, c.score) for _ in range(c.n_encoder_layers)
            )
            self.encoder_norm = nn.LayerNorm(c.d_model) if c.has_final_norm else nn.Identity()
        if c.has_decoder:
            cross = c.architecture == "encoder-decoder"
            self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
            self.decoder_layers = nn.ModuleList(
                DecoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, pre, c.score, cross)
                for _ in range(c.n_decoder_layers)
            )
            self.decoder_norm = nn.LayerNorm(c.d_model) if c.has_final_norm else nn.Identity()
            self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size, bias=c.output_bias)
            if c.tie_embeddings:
                self.lm_head.weight = self.tgt_embed.weight
        else:
            self.classifier = nn.Linear(c.d_model, c.n_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        """Xavier-uniform matrices, as the Annotated Transformer: keeps the √D-scaled embeddings
        near unit size so the positional encoding is not drowned out."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.xavier_uniform_(module.weight)

    # -- building blocks -------------------------------------------------------------
    def _embed(self, ids: Tensor, table: nn.Embedding, start: int = 0, cache: KVCache | None = None) -> Tensor:
        """Embeddings (B, T, D) of ids at positions start … start + T − 1 (a cache keeps the positions' table)."""
        self._check_ids(ids, table.num_embeddings, start)
        x = table(ids) * math.sqrt(self.config.d_model)  # (B, T, D), scaled as in the paper
        if cache is None:
            x = positions_from(self.positional, x, start)
        else:
            x = cache.add_positions(self.positional, x, start, self.config.max_len)
        return self.embed_dropout(x) if self.training else x

    def _check_ids(self, ids: Tensor, vocab: int, start: int = 0) -> None:
        if ids.dim() != 2 or ids.size(0) == 0 or ids.size(1) == 0:
            raise ValueError(f"token ids must be (batch, length >= 1), got shape {tuple(ids.shape)}")
        if start + ids.size(1) > self.config.max_len:
            raise ValueError(f"sequence of {start + ids.size(1)} tokens exceeds max_len {self.config.max_len}")
        if ids.dtype != torch.long:
            raise ValueError(f"token ids must be int64 in [0, {vocab})")
        if torch.compiler.is_compiling():  # reading the range back would break the graph
            return
        bounds = torch.aminmax(ids)  # one pass for both ends
        if int(bounds.min) < 0 or int(bounds.max) >= vocab:
            raise ValueError(f"token ids must be int64 in [0, {vocab})")

    def _head_mask(self, controls: AttentionControls, kind: str) -> Tensor | None:
        return stack_head_mask(controls, self.config, kind)

    def encode(
        self, src: Tensor, controls: AttentionControls = AttentionControls(), need_weights: bool = False,
        need_scores: bool = False, key_mask: Tensor | None = None, recorder: Recorder | None = None,
    ) -> tuple[Tensor, Tensor | None, list]:
        """Run the encoder.

        Args:
            key_mask: (B, S) bool, False on padding; default: the ids equal to ``pad_id``.
            recorder: collects the pass's trace (:mod:`core.model.trace`) under ``encoder.…``.

        Returns:
            memory (B, S, D), the source key mask (B, 1, S) or None, and per-layer results.
        """
        keys = padding_mask(src, self.config.pad_id) if key_mask is None else key_mask[:, None, :]  # (B, 1, S)
        src_mask = _unless_all(keys) if controls.padding else None
        call = LayerCall(controls.temperature, controls.hard, need_weights, need_scores, stack_site(recorder, "encoder"))
        head_mask = self._head_mask(controls, "encoder")
        batch, length = src.shape
        x = put(call, "embed", self._embed(src, self.src_embed))
        results = LayerResults(len(self.encoder_layers), (batch, self.config.n_heads, length, length)
                               if need_weights else None, src.device)
        for i, layer in enumerate(self.encoder_layers):
            x, result = layer(x, src_mask, at_layer(call, i), None if head_mask is None else head_mask[i],
                              results.slot(i))
            results.append(result)
        return put(call, "final", self.encoder_norm(x)), src_mask, results

    def decode(
        self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
        controls: AttentionControls = AttentionControls(), need_weights: bool = False, need_scores: bool = False,
        cache: KVCache | None = None, key_mask: Tensor | None = None, recorder: Recorder | None = None,
    ) -> tuple[Tensor, list, list]:
        """Run the decoder over ``tgt`` (B, T), attending to ``memory`` when there is an encoder.

        With a ``cache`` (incremental decoding, causal only), ``tgt`` holds just the positions
        after those the cache has seen, and the result covers just them. ``key_mask`` (B, T), False
        on padding, replaces the ``pad_id`` test (not with a cache).

        Returns:
            hidden states (B, T, D), per-layer self-attention and cross-attention results.
        """
        if cache is not None and not controls.causal:
            raise ValueError("a KV cache needs the causal mask: without it earlier positions see later ones")
        start = 0 if cache is None else cache.length
        call = LayerCall(controls.temperature, controls.hard, need_weights, need_scores, stack_site(recorder, "decoder"))
        x = put(call, "embed", self._embed(tgt, self.tgt_embed, start, cache))  # (B, T, D)
        ids = tgt if cache is None else cache.extend_ids(tgt)  # (B, start + T): every key position
        keys = padding_mask(ids, self.config.pad_id) if key_mask is None else key_mask[:, None, :]  # (B, 1, Tk)
        pad = _unless_all(keys) if controls.padding else None
        one_new = start > 0 and tgt.size(1) == 1  # a single new query may see every key: no look-ahead mask
        causal = subsequent_mask(ids.size(1), tgt.device)[start:] if controls.causal and not one_new else None
        self_mask = combine_masks(causal, pad)  # (T, Tk), (B, 1, Tk) or (B, T, Tk)
        self_heads, cross_heads = self._head_mask(controls, "decoder"), self._head_mask(controls, "cross")
        (batch, length), n, heads = tgt.shape, len(self.decoder_layers), self.config.n_heads
        self_results = LayerResults(n, (batch, heads, length, ids.size(1)) if need_weights else None, tgt.device)
        cross_results = LayerResults(n, (batch, heads, length, memory.size(1))
                                     if need_weights and memory is not None else None, tgt.device)
        for i, layer in enumerate(self.decoder_layers):
            heads = (None if self_heads is None else self_heads[i], None if cross_heads is None else cross_heads[i])
            x, self_result, cross_result = layer(x, self_mask, memory, memory_mask, at_layer(call, i), heads,
                                                 (self_results.slot(i), cross_results.slot(i)),
                                                 None if cache is None else cache.layers[i])
            self_results.append(self_result)
            cross_results.append(cross_result)
        return put(call, "final", self.decoder_norm(x)), self_results, cross_results

    # -- the one forward -------------------------------------------------------------
    def forward(
        self,
        src: Tensor | None = None,
        tgt: Tensor | None = None,
        targets: Tensor | None = None,
        *,
        controls: AttentionControls = AttentionControls(),
        return_attention: bool = False,
        return_scores: bool = False,
        key_mask: Tensor | None = None,
        record: list[str] | None = None,
    ) -> ModelOutput:
        """Predict, and optionally return every layer's and head's attention.

        Args:
            src: (B, S) source ids (``encoder-decoder`` and ``encoder``).
            tgt: (B, T) decoder input ids, starting with ``<bos>`` (``encoder-decoder``, ``decoder``).
            targets: (B, T) next-token ids (pad positions ignored), or (B,) class ids for ``encoder``.
            controls: per-call masks, temperature, hard attention and head knock-outs.
            return_attention: also return weights per kind (explicit softmax path).
            return_scores: also return the pre-softmax scores (implies the explicit path).
            key_mask: (B, S) bool, False on padding of the first stack's input (``src``, or ``tgt`` for
                a decoder-only model); default: the ids equal to ``pad_id``.
            record: the trace's parts to keep (:mod:`core.model.trace`), in ``ModelOutput.trace``.
        """
        c, per_kind = self.config, {}
        recorder = recorder_of(record)
        need = {"need_weights": return_attention, "need_scores": return_scores}
        memory = memory_mask = None
        if c.has_encoder:
            if src is None:
                raise ValueError(f"architecture {c.architecture!r} needs src ids")
            memory, memory_mask, per_kind["encoder"] = self.encode(src, controls, **need, key_mask=key_mask,
                                                                   recorder=recorder)
        if c.has_decoder:
            if tgt is None:
                raise ValueError(f"architecture {c.architecture!r} needs tgt ids")
            own_mask = key_mask if not c.has_encoder else None
            hidden, per_kind["decoder"], cross = self.decode(tgt, memory, memory_mask, controls, **need,
                                                             key_mask=own_mask, recorder=recorder)
            if c.architecture == "encoder-decoder":
                per_kind["cross"] = cross
            logits = self.lm_head(hidden)  # (B, T, V)
        else:
            logits = self._classify(memory, src != c.pad_id if key_mask is None else key_mask)  # (B, C)
        loss = None
        if targets is not None:
            flat = logits.reshape(-1, logits.size(-1)).float()
            loss = F.cross_entropy(flat, targets.reshape(-1), ignore_index=c.pad_id if c.has_decoder else -100)
        return ModelOutput(
            logits=logits,
            loss=loss,
            attention={k: stack_maps(v, "weights") for k, v in per_kind.items()} if return_attention else None,
            scores={k: stack_maps(v, "scores") for k, v in per_kind.items()} if return_scores else None,
            trace=None if recorder is None else recorder.trace,
        )

    def _classify(self, memory: Tensor, real_tokens: Tensor) -> Tensor:
        """Per-token class scores, max-pooled over the real (non-pad) tokens (B, S)."""
        token_logits = self.classifier(memory).float()  # (B, S, C)
        real = real_tokens.unsqueeze(-1)  # (B, S, 1)
        pooled = token_logits.masked_fill(~real, torch.finfo(token_logits.dtype).min).amax(dim=1)  # (B, C)
        return torch.where(real.any(dim=1), pooled, torch.zeros_like(pooled))

    def next_token_logits(
        self, tgt: Tensor, memory: Tensor | None = None, memory_mask: Tensor | None = None,
        controls: AttentionControls = AttentionControls(), cache: KVCache | None = None,
    ) -> Tensor:
        """Scores (B, V) for the token after ``tgt`` (B, T): one decoding step.

        Pass the same :meth:`kv_cache` with the growing ``tgt`` at every step of one decoding
        call: only the ids it has not seen run through the decoder. Without the causal mask the
        cache cannot be exact, so it is left unused and the whole prefix runs.
        """
        return decoding_step(self, tgt, memory, memory_mask, controls, cache)

    def kv_cache(self) -> KVCache:
        """A fresh key/value cache for ONE decoding call (never stored on the model)."""
        return KVCache(len(self.decoder_layers))

    def unembed(self, resid: Tensor) -> Tensor:
        """Logits (…, V) of a decoder residual stream (…, D): the stack's final norm, then the output layer."""
        return self.lm_head(self.decoder_norm(resid))

    def parameter_counts(self) -> dict[str, int]:
        """Parameters per top-level block (embeddings, encoder, decoder, heads), tied weights counted once."""
        counts: dict[str, int] = {}
        for name, param in self.named_parameters():  # yields a tied parameter once
            block = name.split(".")[0]
            counts[block] = counts.get(block, 0) + param.numel()
        return counts


def _unless_all(mask: Tensor) -> Tensor | None:
    """None when ``mask`` allows everything (no padding): the kernels then skip masking. Under
    ``torch.compile`` the mask is kept: reading it back would break the graph for the same numbers."""
    if torch.compiler.is_compiling():
        return mask
    return None if bool(mask.all()) else mask
