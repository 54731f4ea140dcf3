"""One sentence followed through an encoder-decoder model, with every intermediate number.

:func:`trace_translation` recomputes, step by step and from the model's own weights, what
the Transformer does with one input: tokens → embeddings + positional encoding → Q, K, V of
one head → scores → ÷√d_k → mask → softmax → weighted sum → heads concatenated → Add & Norm
→ FFN → encoder output → decoder masked self-attention → cross-attention → output
distribution → greedy choice. The Lesson page draws these arrays; the tests check that the
step-by-step numbers equal the model's own forward pass.

Axis letters: S source length, T decoder length, D model width, dk head width, F FFN width,
V target vocabulary. Rows are queries, columns keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from core.generate.decode import greedy
from core.inspect.records import row_labels
from core.lessons.cross_reading import last_cross_output
from core.io.checkpoint import Checkpoint
from core.text.inputs import normalized, prepare
from core.text.tokenizer import BOS_ID, EOS_ID
from core.model.attention import attention_weights
from core.model.masks import subsequent_mask


@dataclass(frozen=True)
class HeadTrace:
    """One head of one attention sublayer, every step of softmax(QKᵀ/√d_k)V.

    Attributes:
        q, k, v: float32 (Tq, dk), (Tk, dk), (Tk, dk) this head's projections.
        dot: (Tq, Tk) the raw dot products q·k.
        scaled: (Tq, Tk) ``dot / √d_k`` — what the softmax sees (β = 1).
        mask: bool (Tq, Tk), True = may attend.
        weights: (Tq, Tk) softmax of the masked, scaled scores (rows sum to 1).
        output: (Tq, dk) ``weights @ v``.
        scale: what q·k is multiplied by before the softmax (1/√d_k; 1 in T5, which does not scale).
        position_bias: (Tq, Tk) a learned bias per relative distance added to the scores (T5), else None;
            ``scaled`` then holds ``dot · scale + position_bias``.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dot: np.ndarray
    scaled: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    scale: float | None = None
    position_bias: np.ndarray | None = None


@dataclass(frozen=True)
class LessonTrace:
    """Every stage of one sentence through layer 0 (and the stack) of a translation model.

    Attributes:
        source_tokens / target_tokens: encoder tokens; decoder inputs (``<bos>`` + output so far).
        generated_tokens: what each decoder row predicts (the greedy choice at that step).
        output_text: the whole greedy translation.
        head: the head followed in detail; d_model, d_k, n_heads, d_ff: the model's sizes.
        norm: ``post`` or ``pre`` (where LayerNorm sits in Add & Norm).
        token_embedding: (S, D) embedding rows × √D. positional: (S, D) the encoding added.
        embedded: (S, D) their sum, the encoder's input.
        encoder_head: :class:`HeadTrace` of encoder layer 0, ``head``.
        qkv_weight: (D, 3D) layer 0's stacked projection [W^Q | W^K | W^V] as one matrix (x @ W).
        q_bias: (dk,) b^Q of ``head`` (q = x W^Q_h + b^Q_h). out_bias: (D,) b^O of the output projection.
        heads_concat: (S, D) all heads' outputs side by side (before W_o).
        attention_out: (S, D) after the output projection W_o (its bias b^O included).
        residual1: (S, D) what the first LayerNorm reads: x + MultiHead(x) (post-norm), or, pre-norm,
            x + MultiHead(LN(x)), which is the first Add & Norm's output itself (not normalised).
        norm_hat1: (S, D) (residual1 − μ)/σ before the gain and shift (post-norm only; rows have mean 0,
            variance 1). norm_gain1 / norm_shift1: (D,) the first LayerNorm's γ and b.
        add_norm1: (S, D) after the first Add & Norm. ffn_hidden: (S, F) after ReLU.
        ffn_out: (S, D) the FFN's output. layer_out: (S, D) after the second Add & Norm.
        memory: (S, D) the encoder's output (every layer, final norm included where the model has one).
        decoder_head: :class:`HeadTrace` of decoder layer 0 masked self-attention, ``head``.
        cross_weights: (T, S) cross-attention of the last decoder layer, ``head``.
        cross_heads: (H, T, S) cross-attention of the last decoder layer, every head.
        final_norm: whether each stack ends with a LayerNorm (inside "encoder output").
        output_bias: whether the output layer adds a bias (P = softmax(h W_out + b)).
        notes: what was done to the text before tokenizing (e.g. lower-cased), as for Explore.
        probabilities: (T, V) the output distribution at every decoder row.
        target_vocab: the token string of every output id.
        family: ``attnscope`` (our own model) or the pretrained family (``marian``, ``bart``, ``mbart``, ``t5``).
        positions: how positions enter: ``sinusoidal`` (added to the embeddings, the paper's interleaved
            layout), ``marian`` (sinusoids, sines then cosines), ``learned`` (a learned table added),
            ``relative`` (T5: a learned bias per relative distance added to the scores) or ``none``.
        norm_type: ``layernorm`` or ``rmsnorm`` (T5: no mean subtracted, no shift).
        embedding_norm: a LayerNorm right after embeddings + positions (BART).
        projection_bias: whether the projections carry biases (T5's do not).
        activation: the FFN's non-linearity; gated: FFN = (act(x W_g) ⊙ x W_1) W_2 (T5 v1.1).
        n_encoder_layers / n_decoder_layers: the stacks' depths. source_vocab_size: rows of the embedding E.
        embed_scale: what the embedding rows are multiplied by (None: √d_model, the paper's).
        logits_scale: what the last decoder vector is multiplied by before the output layer (T5 tied: D^-0.5).
        cross_output: (T, D) the last decoder layer's cross-attention sublayer output (after W^O, before
            Add & Norm), or None where the model's trace does not record it (pretrained families).
        encoder_heads: (H, S, S) the weights of every head of encoder layer 0 (``encoder_head`` is one of them).
        kind: the Lesson's track: ``encoder-decoder``, ``decoder`` (decoder-only: the "source" is the prompt,
            ``encoder_head`` its layer-0 masked head, the decoder rows prompt + continuation, no cross-attention)
            or ``encoder`` (encoder-only: no decoder rows). A single-stack trace
            (:func:`~core.lessons.walkthrough_stack.trace_stack`) leaves None what its trace does not hold:
            ``token_embedding``/``positional`` (only their sum ``embedded``), ``qkv_weight``, ``q_bias``,
            ``out_bias``, ``norm_gain1``/``norm_shift1`` and ``ffn_hidden``.
        use: an encoder-only model's head: ``hidden`` (a sentence vector, ``pooled``), ``masked_lm``
            (``probabilities`` (S, V): each position's token) or ``classes`` (``probabilities`` (1, C)).
        pooled: (D,) an encoder-only ``hidden`` model's sentence vector, pooled as the model says.
    """

    source_tokens: tuple[str, ...]
    target_tokens: tuple[str, ...]
    generated_tokens: tuple[str, ...]
    output_text: str
    head: int
    d_model: int
    d_k: int
    n_heads: int
    d_ff: int
    norm: str
    token_embedding: np.ndarray | None
    positional: np.ndarray | None
    embedded: np.ndarray
    encoder_head: HeadTrace
    qkv_weight: np.ndarray | None
    q_bias: np.ndarray | None
    out_bias: np.ndarray | None
    heads_concat: np.ndarray
    attention_out: np.ndarray
    residual1: np.ndarray
    norm_hat1: np.ndarray | None
    norm_gain1: np.ndarray | None
    norm_shift1: np.ndarray | None
    add_norm1: np.ndarray
    ffn_hidden: np.ndarray | None
    ffn_out: np.ndarray
    layer_out: np.ndarray
    memory: np.ndarray
    decoder_head: HeadTrace
    cross_weights: np.ndarray
    cross_heads: np.ndarray
    probabilities: np.ndarray
    target_vocab: tuple[str, ...]
    final_norm: bool
    output_bias: bool
    notes: tuple[str, ...]
    family: str = "attnscope"
    positions: str = "sinusoidal"
    norm_type: str = "layernorm"
    embedding_norm: bool = False
    projection_bias: bool = True
    activation: str = "relu"
    gated: bool = False
    n_encoder_layers: int = 0
    n_decoder_layers: int = 0
    source_vocab_size: int = 0
    embed_scale: float | None = None
    logits_scale: float = 1.0
    cross_output: np.ndarray | None = None
    encoder_heads: np.ndarray | None = None
    kind: str = "encoder-decoder"
    use: str = ""
    pooled: np.ndarray | None = None

    @property
    def row_labels(self) -> tuple[str, ...]:
        """Decoder rows as "after ‹input› → predicts ‹output›" (row t reads ``target_tokens[t]``)."""
        return tuple(row_labels(self.target_tokens, self.generated_tokens))

    @property
    def cross_mean(self) -> np.ndarray:
        """(T, S) the last layer's cross-attention averaged over heads (rows still sum to 1)."""
        return self.cross_heads.mean(axis=0)

    def cross_peaks(self, row: int) -> list[int]:
        """For decoder ``row``, the source position each head of the last layer attends to most."""
        return [int(np.argmax(head[row])) for head in self.cross_heads]

    def top_candidates(self, row: int, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most likely output tokens at decoder ``row``, with their probabilities."""
        order = np.argsort(-self.probabilities[row], kind="stable")[:k]
        return [(self.target_vocab[i], float(self.probabilities[row, i])) for i in order]


def as_numpy(x: Tensor) -> np.ndarray:
    """A tensor as a float32 numpy array (detached, on the CPU)."""
    return x.detach().float().cpu().numpy().astype(np.float32)


def head_trace(q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float | None = None,
                bias: Tensor | None = None) -> HeadTrace:
    """q (Tq, dk), k/v (Tk, dk), mask bool (Tq, Tk) → every step of one head's attention; ``scale``
    defaults to 1/√d_k, ``bias`` (Tq, Tk) is a relative-position bias added to the scaled scores."""
    dot = q @ k.T  # (Tq, Tk)
    scaled = dot / math.sqrt(q.size(-1)) if scale is None else dot * scale
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    scaled = scaled if bias is None else scaled + bias
    weights = attention_weights(scaled, mask)  # (Tq, Tk), rows sum to 1
    return HeadTrace(*map(as_numpy, (q, k, v, dot, scaled)), mask.cpu().numpy(), as_numpy(weights),
                     as_numpy(weights @ v), scale, None if bias is None else as_numpy(bias))


def _split(x: Tensor, n_heads: int) -> Tensor:
    length, width = x.shape
    return x.view(length, n_heads, width // n_heads).transpose(0, 1)  # (H, T, dk)


#: What the Lesson reads from the model's own forward pass (its trace): each stack's input, after the embedding's
#: scale and the positions. The steps after it are recomputed from the layer's weights one operation at a time,
#: so they are the same bit for bit whatever the thread count (a worker process's pass may split its products
#: otherwise).
LAYER0 = ("encoder.embed", "decoder.embed")


def _add_norm(x: Tensor, sublayer: Tensor, norm: torch.nn.Module, pre_norm: bool) -> Tensor:
    """The residual sum, normalised after (post-norm: LayerNorm(x + Sublayer)) or left as it is (pre-norm, whose
    LayerNorm was applied to the sublayer's input)."""
    return x + sublayer if pre_norm else norm(x + sublayer)


def _encoder_layer0(ckpt: Checkpoint, src: Tensor, head: int, traced: dict[str, Tensor]) -> dict:
    """Embeddings and encoder layer 0 step by step for a batch of one: the stack's input from the forward pass's
    ``traced`` names (:data:`LAYER0`), every step after it (each head's scores, the concatenation, W^O, Add & Norm
    and the LayerNorm's x̂, the FFN) recomputed from the layer's weights."""
    model, cfg = ckpt.model, ckpt.config
    scaled_embedding = model.src_embed(src)[0] * math.sqrt(cfg.d_model)  # (S, D)
    embedded = traced["encoder.embed"][0]  # (S, D): scaled embedding + positions
    layer = model.encoder_layers[0]
    inp = layer.norm1(embedded) if cfg.norm == "pre" else embedded
    q, k, v = (_split(t, cfg.n_heads) for t in layer.self_attn.qkv_proj(inp).chunk(3, dim=-1))  # (H, S, dk)
    mask = torch.ones(src.size(1), src.size(1), dtype=torch.bool)  # one sentence: no padding to hide
    traces = [head_trace(q[h], k[h], v[h], mask) for h in range(cfg.n_heads)]
    concat = torch.cat([torch.from_numpy(t.output) for t in traces], dim=-1)  # (S, D)
    attention_out = layer.self_attn.out_proj(concat)  # (S, D)
    add_norm1 = _add_norm(embedded, attention_out, layer.norm1, cfg.norm == "pre")  # (S, D)
    residual1 = embedded + attention_out  # (S, D) the LayerNorm's input (post-norm); pre-norm: the output
    norm = layer.norm1
    hat = (residual1 - residual1.mean(-1, keepdim=True)) / torch.sqrt(
        residual1.var(-1, unbiased=False, keepdim=True) + norm.eps)  # (S, D) before γ and b
    ffn_in = layer.norm2(add_norm1) if cfg.norm == "pre" else add_norm1
    hidden = torch.relu(layer.ff.linear1(ffn_in))  # (S, F)
    ffn_out = layer.ff.linear2(hidden)  # (S, D)
    return dict(token_embedding=as_numpy(scaled_embedding), positional=as_numpy(embedded - scaled_embedding),
                embedded=as_numpy(embedded), encoder_head=traces[head], heads_concat=as_numpy(concat),
                encoder_heads=np.stack([t.weights for t in traces]),  # (H, S, S)
                qkv_weight=as_numpy(layer.self_attn.qkv_proj.weight.T),  # (D, 3D)
                q_bias=as_numpy(_split(layer.self_attn.qkv_proj.bias[None, : cfg.d_model], cfg.n_heads)[head, 0]),
                out_bias=as_numpy(layer.self_attn.out_proj.bias), residual1=as_numpy(residual1),
                norm_hat1=as_numpy(hat) if cfg.norm == "post" else None, norm_gain1=as_numpy(norm.weight),
                norm_shift1=as_numpy(norm.bias), attention_out=as_numpy(attention_out), add_norm1=as_numpy(add_norm1), ffn_hidden=as_numpy(hidden),
                ffn_out=as_numpy(ffn_out),
                layer_out=as_numpy(_add_norm(add_norm1, ffn_out, layer.norm2, cfg.norm == "pre")))


def _decoder_layer0_head(ckpt: Checkpoint, traced: dict[str, Tensor], head: int) -> HeadTrace:
    """Masked self-attention of decoder layer 0, ``head``, from the decoder's input in the forward pass's trace."""
    cfg, layer = ckpt.config, ckpt.model.decoder_layers[0]
    x = traced["decoder.embed"][0]  # (T, D)
    inp = layer.norm1(x) if cfg.norm == "pre" else x
    q, k, v = (_split(t, cfg.n_heads) for t in layer.self_attn.qkv_proj(inp).chunk(3, dim=-1))  # (H, T, dk)
    return head_trace(q[head], k[head], v[head], subsequent_mask(x.size(0), x.device))


def trace_translation(ckpt: Checkpoint, text: str, head: int = 0) -> LessonTrace:
    """Follow ``text`` through an encoder-decoder checkpoint, greedy-decoding its translation.

    Args:
        ckpt: a loaded ``encoder-decoder`` checkpoint with the paper's scaled dot-product score.
        text: the source sentence.
        head: which head to follow step by step (0-based index into the model's heads).

    Raises:
        ValueError: another architecture or score function, a head out of range, or text the
            model cannot read (as :func:`core.explain`).
    """
    cfg = ckpt.config
    if cfg.architecture != "encoder-decoder" or cfg.score != "scaled_dot":
        raise ValueError("The lesson follows an encoder-decoder model with scaled dot-product attention "
                         f"(this one is {cfg.architecture}, score {cfg.score}).")
    if not 0 <= head < cfg.n_heads:
        raise ValueError(f"head must be in 0..{cfg.n_heads - 1}, got {head}")
    model, device = ckpt.model, next(ckpt.model.parameters()).device
    item = normalized(prepare(text), ckpt.info.task)  # e.g. lower case, as the model was trained (and Explore does)
    ids = ckpt.source_tokenizer.encode(item.work).ids[:cfg.max_len]  # raises ValueError on lone surrogates
    if not ids:
        raise ValueError("Type some text: the input has no tokens.")
    src = torch.tensor([ids], device=device)  # (1, S)
    prefix = torch.full((1, 1), BOS_ID, dtype=torch.long, device=device)
    with torch.inference_mode():
        gen = greedy(model, src, prefix, eos_id=EOS_ID, max_new_tokens=cfg.max_len)
        tgt = gen.ids[:, :-1]  # (1, T) the decoder inputs; row t predicted gen.ids[0, t + 1]
        traced = model(src, tgt, record=list(LAYER0)).trace  # one forward pass, its named intermediates
        encoder = _encoder_layer0(ckpt, src, head, traced)
        memory, memory_mask, _ = model.encode(src)  # (1, S, D)
        decoder_head = _decoder_layer0_head(ckpt, traced, head)
    cross_output = last_cross_output(model, tgt, memory, memory_mask)  # (T, D)
    out_ids = gen.ids[0].tolist()
    src_tok, tgt_tok = ckpt.source_tokenizer, ckpt.target_tokenizer
    return LessonTrace(
        source_tokens=tuple(src_tok.token_strings(ids)), target_tokens=tuple(tgt_tok.token_strings(out_ids[:-1])),
        generated_tokens=tuple(tgt_tok.token_strings(out_ids[1:])), output_text=tgt_tok.decode(out_ids), head=head,
        d_model=cfg.d_model, d_k=cfg.d_model // cfg.n_heads, n_heads=cfg.n_heads, d_ff=cfg.d_ff, norm=cfg.norm,
        memory=as_numpy(memory[0]), decoder_head=decoder_head,
        cross_weights=as_numpy(gen.output.attention["cross"][-1, 0, head]),  # (T, S)
        cross_heads=as_numpy(gen.output.attention["cross"][-1, 0]),  # (H, T, S)
        probabilities=as_numpy(gen.output.logits[0].float().softmax(-1)),  # (T, V)
        target_vocab=tuple(tgt_tok.token_strings(list(range(tgt_tok.vocab_size)))),
        final_norm=cfg.has_final_norm, output_bias=cfg.output_bias, notes=tuple(item.notes),
        positions=cfg.positional, n_encoder_layers=cfg.n_encoder_layers, n_decoder_layers=cfg.n_decoder_layers,
        source_vocab_size=cfg.src_vocab_size, cross_output=cross_output, **encoder,
    )
