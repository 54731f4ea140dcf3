"""One sentence followed through a pretrained encoder-decoder (Marian, BART/mBART, T5), stage by stage.

:func:`trace_seq2seq` fills the same :class:`~core.lessons.walkthrough.LessonTrace` as
:func:`~core.lessons.walkthrough.trace_translation` does for our own model, recomputed from the
family's own weights (:class:`~core.model.families.seq2seq.Seq2SeqModel`), so the Lesson's stages
draw any encoder-decoder the app can load. Where a family departs from the paper the trace says how
(``positions``, ``norm``, ``norm_type``, ``projection_bias``, ``gated``…): pre-norm layers compute
x + Sublayer(Norm(x)); T5 adds a learned bias per relative distance to the unscaled scores instead
of adding positions to the embeddings; BART adds a learned position table and normalises the sum.

Axis letters: S source length, T decoder length, D model width, H heads, dk head width, F FFN width,
V vocabulary. Rows are queries, columns keys.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

from core.generate.decode import greedy
from core.inspect.facts import ModelFacts
from core.inspect.subject import as_subject, maps_on_demand
from core.io.checkpoint import Checkpoint
from core.io.pretrained.load import PretrainedModel
from core.lessons.walkthrough import LessonTrace, as_numpy, head_trace, trace_translation
from core.lessons.walkthrough_stack import trace_stack
from core.model.families.seq2seq import Seq2SeqModel, Stack
from core.model.families.seq2seq_layers import Attention, RMSNorm
from core.model.masks import subsequent_mask
from core.text.inputs import normalized, prepare, tokenize

GENERATION_LIMIT = 64  # tokens the Lesson's translation may run to


def _split(x: Tensor, attn: Attention) -> Tensor:
    return x.view(x.size(0), attn.n_heads, attn.head_dim).transpose(0, 1)  # (H, T, dk)


def _embedded(stack: Stack, embed: nn.Embedding, ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(token embedding × scale, what is added for the positions (zeros for T5), stack input) of ``ids``
    (T,), each (T, D): the stack input is their sum, normalised by BART's ``layernorm_embedding``."""
    scaled = embed(ids) * stack.embed_scale  # (T, D)
    added = torch.zeros_like(scaled) if stack.positions is None else stack.positions(0, ids.size(0), ids.device)
    x = scaled + added
    return scaled, added, (x if stack.embedding_norm is None else stack.embedding_norm(x))


def _bias(stack: Stack, length: int, head: int, device: torch.device) -> Tensor | None:
    """T5's relative-position bias (T, T) of ``head`` for the stack's self-attention, else None."""
    return None if stack.relative is None else stack.relative(0, length, length, device)[0, head]


def _encoder_layer0(model: Seq2SeqModel, src: Tensor, head: int) -> dict:
    """Embeddings and encoder layer 0, step by step, for ``src`` (S,)."""
    stack, layer = model.encoder, model.encoder.layers[0]
    attn, length = layer.self_attn, src.size(0)
    scaled, added, x = _embedded(stack, model.embed, src)  # (S, D)
    biases = None if stack.relative is None else stack.relative(0, length, length, src.device)[0]  # (H, S, S)
    inp = layer.self_norm(x) if layer.pre_norm else x
    q, k, v = (_split(p(inp), attn) for p in (attn.q, attn.k, attn.v))  # (H, S, dk)
    mask = torch.ones(length, length, dtype=torch.bool, device=src.device)  # one sentence: no padding
    traces = [head_trace(q[h], k[h], v[h], mask, attn.scale, None if biases is None else biases[h])
              for h in range(attn.n_heads)]
    concat = torch.cat([torch.from_numpy(t.output) for t in traces], dim=-1)  # (S, H·dk)
    attention_out = attn.o(concat)  # (S, D)
    residual1 = x + attention_out  # (S, D)
    add_norm1 = residual1 if layer.pre_norm else layer.self_norm(residual1)
    norm = layer.self_norm
    centred = residual1 if isinstance(norm, RMSNorm) else residual1 - residual1.mean(-1, keepdim=True)
    hat = centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + norm.eps)  # (S, D) before γ (and b)
    ffn = layer.ffn
    ffn_in = layer.ffn_norm(add_norm1) if layer.pre_norm else add_norm1
    hidden = ffn.activation(ffn.up(ffn_in)) if ffn.gate is None else ffn.activation(ffn.gate(ffn_in)) * ffn.up(ffn_in)
    ffn_out = ffn.down(hidden)  # (S, D)
    layer_out = add_norm1 + ffn_out if layer.pre_norm else layer.ffn_norm(add_norm1 + ffn_out)
    weight = torch.cat([attn.q.weight, attn.k.weight, attn.v.weight]).T  # (D, 3·H·dk) = [W^Q | W^K | W^V]
    zeros = torch.zeros(attn.head_dim)
    shift = getattr(norm, "bias", None)
    return dict(token_embedding=as_numpy(scaled), positional=as_numpy(added), embedded=as_numpy(x),
                encoder_head=traces[head], heads_concat=as_numpy(concat), qkv_weight=as_numpy(weight),
                encoder_heads=np.stack([t.weights for t in traces]),  # (H, S, S)
                q_bias=as_numpy(zeros if attn.q.bias is None else _split(attn.q.bias[None], attn)[head, 0]),
                out_bias=as_numpy(torch.zeros(attn.o.out_features) if attn.o.bias is None else attn.o.bias),
                residual1=as_numpy(residual1), norm_hat1=None if layer.pre_norm else as_numpy(hat),
                norm_gain1=as_numpy(norm.weight), norm_shift1=as_numpy(torch.zeros_like(norm.weight) if shift is None
                                                                  else shift),
                attention_out=as_numpy(attention_out), add_norm1=as_numpy(add_norm1), ffn_hidden=as_numpy(hidden),
                ffn_out=as_numpy(ffn_out), layer_out=as_numpy(layer_out))


def _decoder_layer0_head(model: Seq2SeqModel, tgt: Tensor, head: int):
    """Masked self-attention of decoder layer 0, ``head``, recomputed for ``tgt`` (T,)."""
    stack, layer = model.decoder, model.decoder.layers[0]
    attn, length = layer.self_attn, tgt.size(0)
    _, _, x = _embedded(stack, model.embed, tgt)  # (T, D)
    inp = layer.self_norm(x) if layer.pre_norm else x
    q, k, v = (_split(p(inp), attn)[head] for p in (attn.q, attn.k, attn.v))  # (T, dk)
    bias = None if stack.relative is None else stack.relative(0, length, length, tgt.device)[0, head]  # (T, T)
    return head_trace(q, k, v, subsequent_mask(length, tgt.device), attn.scale, bias)


def _positions(model: Seq2SeqModel) -> str:
    c = model.config
    return {"sinusoidal": "marian", "learned": "learned", "relative": "relative"}[c.positions]


def trace_seq2seq(pretrained: PretrainedModel, text: str, head: int = 0) -> LessonTrace:
    """Follow ``text`` through a pretrained Marian, BART/mBART or T5 model, greedy-decoding its output.

    Args:
        pretrained: a loaded Hugging Face encoder-decoder folder (:func:`core.load_pretrained`).
        text: the source sentence. head: which head to follow step by step (0-based).

    Raises:
        ValueError: another kind of model (speech, encoder- or decoder-only), a head out of range, or
            text the model cannot read.
    """
    model = pretrained.model
    if not isinstance(model, Seq2SeqModel):
        raise ValueError(f"The lesson follows a text encoder-decoder; {pretrained.name} is a "
                         f"{pretrained.family} {model.config.architecture} model.")
    c = model.config
    if not 0 <= head < c.n_heads:
        raise ValueError(f"head must be in 0..{c.n_heads - 1}, got {head}")
    subject = as_subject(pretrained)
    item = normalized(prepare(text), None)
    tokenize(item, subject.source_tokenizer, subject.token_limit)
    ids = item.encoding.ids
    device = subject.device
    src = torch.tensor([ids], device=device)  # (1, S)
    prefix = torch.tensor([list(subject.decoder_start)], device=device)  # (1, 1 or 2)
    with torch.inference_mode():
        gen = greedy(model, src, prefix, eos_id=subject.eos_id, max_new_tokens=min(c.max_len, GENERATION_LIMIT))
        out_ids = gen.ids[0].tolist()
        encoder = _encoder_layer0(model, src[0], head)
        memory, _, _ = model.encode(src)  # (1, S, D)
        decoder_head = _decoder_layer0_head(model, gen.ids[0, :-1], head)
    src_tok, tgt_tok = subject.source_tokenizer, subject.target_tokenizer
    known = tgt_tok.vocab_size
    vocab = tuple(tgt_tok.token_strings(list(range(min(known, c.vocab_size))))) + tuple(
        f"<id {i}>" for i in range(known, c.vocab_size))  # T5 keeps rows past its tokenizer's vocabulary
    return LessonTrace(
        source_tokens=tuple(src_tok.token_strings(ids)), target_tokens=tuple(tgt_tok.token_strings(out_ids[:-1])),
        generated_tokens=tuple(tgt_tok.token_strings(out_ids[1:])), output_text=tgt_tok.decode(out_ids),
        head=head, d_model=c.d_model, d_k=c.d_kv, n_heads=c.n_heads, d_ff=c.d_ff,
        norm="pre" if c.pre_norm else "post", memory=as_numpy(memory[0]), decoder_head=decoder_head,
        cross_weights=as_numpy(gen.output.attention["cross"][-1, 0, head]),  # (T, S)
        cross_heads=as_numpy(gen.output.attention["cross"][-1, 0]),  # (H, T, S)
        probabilities=as_numpy(gen.output.logits[0].float().softmax(-1)),  # (T, V)
        target_vocab=vocab, final_norm=c.final_norm, output_bias=c.logits_bias, notes=tuple(item.notes),
        family=c.family, positions=_positions(model), norm_type="rmsnorm" if c.rms_norm else "layernorm",
        embedding_norm=c.embedding_norm, projection_bias=c.bias, activation=c.activation, gated=c.gated,
        n_encoder_layers=c.n_encoder_layers, n_decoder_layers=c.n_decoder_layers, source_vocab_size=c.vocab_size,
        embed_scale=c.embed_scale, logits_scale=c.logits_scale,
        **encoder,
    )


def lesson_follows(model: Checkpoint | PretrainedModel | ModelFacts) -> bool:
    """Whether the Lesson can follow ``model`` (loaded, or the facts its worker process reported): our
    encoder-decoder with the paper's score, a pretrained text encoder-decoder (Marian, BART/mBART, T5), or any
    decoder-only or encoder-only model whose scores are dot products (its track read from the trace)."""
    if isinstance(model, ModelFacts):
        if model.architecture in ("decoder", "encoder"):
            return True
        return model.text_seq2seq if model.pretrained else model.architecture == "encoder-decoder"
    if model.config.architecture in ("decoder", "encoder"):
        return maps_on_demand(model.config)
    if isinstance(model, PretrainedModel):
        return isinstance(model.model, Seq2SeqModel)
    return model.config.architecture == "encoder-decoder" and model.config.score == "scaled_dot"


def trace_sentence(model: Checkpoint | PretrainedModel, text: str, head: int = 0) -> LessonTrace:
    """:func:`~core.lessons.walkthrough_stack.trace_stack` for a decoder-only or encoder-only model,
    :func:`trace_seq2seq` for a pretrained encoder-decoder, :func:`~core.lessons.walkthrough.trace_translation`
    for our own checkpoint (same arguments and errors)."""
    if model.config.architecture in ("decoder", "encoder"):
        return trace_stack(model, text, head)
    if isinstance(model, PretrainedModel):
        return trace_seq2seq(model, text, head)
    return trace_translation(model, text, head)
