"""One sentence followed through a single-stack model (decoder-only or encoder-only), read from its trace.

:func:`trace_stack` fills the same :class:`~core.lessons.walkthrough.LessonTrace` the encoder-decoder stages
draw, for any model on the contract whose architecture is ``decoder`` (SmolLM2, GPT-2, Llama …) or ``encoder``
(MiniLM, BERT …), from one forward pass's trace (:mod:`core.model.trace`): the stack's input, layer 0's queries,
keys, values, mask, bias and scale, its sublayers' outputs and residual streams, and the stack's output. Nothing
here knows a family: how the model departs from the paper is read from the trace itself (a pre-norm layer's
``resid_mid`` is ``embed + attn_out``; a post-norm one's is normalised) and from its config's and parameters'
names (rotary or learned positions, a gated FFN, RMSNorm); a final norm, from the stack's output against its last
layer's residual stream.

A decoder-only model's prompt is the "source" of the layer-0 stages (its rows are the prompt's tokens, the causal
mask hides the future); the model then continues the prompt greedily, and the output stages read every row of
prompt + continuation. An encoder-only model ends with what it offers: a sentence vector (pooled as the model
says), masked-token predictions or class probabilities.

Axis letters: S prompt (or sentence) length, T prompt + continuation, D model width, H heads, dk head width,
V vocabulary. Rows are queries, columns keys.
"""

from __future__ import annotations

import logging

import numpy as np
import torch
from torch import Tensor

from core.generate.decode import greedy
from core.inspect.heads import pool
from core.inspect.subject import as_subject, maps_on_demand, Subject
from core.io.checkpoint import Checkpoint
from core.io.pretrained.load import PretrainedModel
from core.lessons.walkthrough import as_numpy, head_trace, HeadTrace, LessonTrace
from core.text.inputs import normalized, prepare, tokenize

log = logging.getLogger(__name__)

CONTINUATION = 8  # tokens a decoder-only model adds to the prompt in the Lesson
TRACED = ("{s}.embed", "{s}.0.*", "{s}.final")  # what one pass records: the stack's input, layer 0, its output


def _facts(subject: Subject) -> dict:
    """How the model departs from the paper, from its config's fields and its parameters' names (no family)."""
    spec, model = subject.spec, subject.model
    names = [name for name, _ in model.named_parameters()]
    kinds = {type(m).__name__.lower() for m in model.modules()}
    positions = getattr(spec, "positions", None)
    if positions not in ("learned", "rotary", "sinusoidal", "relative", "none"):
        positions = "rotary" if hasattr(spec, "rope_base") and not getattr(spec, "positional", None) else (
            getattr(spec, "positional", None) or "learned")
    activation = str(getattr(spec, "activation", "relu"))
    return dict(positions=positions, activation=activation, gated=any("gate" in n for n in names),
                norm_type="rmsnorm" if any("rmsnorm" in k for k in kinds) else "layernorm",
                projection_bias=any(n.endswith("bias") and ("q_proj" in n or "qkv" in n or "query" in n)
                                    for n in names),
                d_ff=int(getattr(spec, "d_ff", 0) or getattr(spec, "intermediate_size", 0)))


def _head(traced: dict[str, Tensor], kind: str, head: int, kv: int, rows: int, causal: bool) -> HeadTrace:
    """Layer 0's ``head`` of ``kind`` over its first ``rows`` positions, from the trace's q, k, v, mask, bias and
    scale (the key/value head ``kv`` for grouped heads); with no recorded mask, a decoder's is the causal one."""
    q = traced[f"{kind}.0.q"][0, head, :rows]  # (Tq, dk)
    k, v = (traced[f"{kind}.0.{p}"][0, kv, :rows] for p in "kv")  # (Tk, dk)
    shape = (1, traced[f"{kind}.0.q"].size(1), traced[f"{kind}.0.q"].size(2), traced[f"{kind}.0.k"].size(2))
    recorded = traced.get(f"{kind}.0.mask")
    if recorded is not None:
        mask = torch.broadcast_to(recorded, shape)[0, head, :rows, :rows].bool()  # (Tq, Tk)
    else:
        mask = torch.ones(rows, rows, dtype=torch.bool, device=q.device)
        mask = mask.tril() if causal else mask
    bias = traced.get(f"{kind}.0.bias")
    if bias is not None:
        bias = torch.broadcast_to(bias, shape)[0, head, :rows, :rows]  # (Tq, Tk)
    scale = traced.get(f"{kind}.0.scale")
    return head_trace(q.float(), k.float(), v.float(), mask, None if scale is None else float(scale), bias)


def _layer0(subject: Subject, traced: dict[str, Tensor], kind: str, head: int, rows: int, eps: float) -> dict:
    """The layer-0 stages (embeddings → FFN) over the first ``rows`` positions, all read from the trace."""
    spec, groups = subject.spec, subject.head_groups or tuple(range(subject.spec.n_heads))
    if f"{kind}.0.softcap" in traced:
        raise ValueError("The Lesson follows softmax(q·k / √d_k): this model caps its scores (tanh), which the "
                         "stages do not show.")
    traces = [_head(traced, kind, h, groups[h], rows, kind == "decoder") for h in range(spec.n_heads)]
    x = traced[f"{kind}.embed"][0, :rows].float()  # (S, D)
    attention_out = traced[f"{kind}.0.attn_out"][0, :rows].float()  # (S, D)
    resid_mid = traced[f"{kind}.0.resid_mid"][0, :rows].float()  # (S, D)
    residual1 = x + attention_out  # (S, D)
    pre = bool(torch.allclose(resid_mid, residual1, atol=1e-4, rtol=1e-4))  # pre-norm: the sum is not normalised
    centred = residual1 - residual1.mean(-1, keepdim=True)
    hat = centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps)  # (S, D) before γ and b
    return dict(embedded=as_numpy(x), token_embedding=None, positional=None, encoder_head=traces[head],
                encoder_heads=np.stack([t.weights for t in traces]),  # (H, S, S)
                heads_concat=np.concatenate([t.output for t in traces], axis=-1),  # (S, H·dk)
                qkv_weight=None, q_bias=None, out_bias=None, attention_out=as_numpy(attention_out),
                residual1=as_numpy(residual1), norm_hat1=None if pre else as_numpy(hat), norm_gain1=None,
                norm_shift1=None, add_norm1=as_numpy(resid_mid), ffn_hidden=None,
                ffn_out=as_numpy(traced[f"{kind}.0.ffn_out"][0, :rows]),
                layer_out=as_numpy(traced[f"{kind}.0.resid_out"][0, :rows]), norm="pre" if pre else "post")


def _final_norm(subject: Subject, traced: dict[str, Tensor], stack: str) -> bool:
    """Whether the stack ends with a norm: its output differs from its last layer's residual stream."""
    last = traced[f"{stack}.{subject.spec.n_layers(stack) - 1}.resid_out"]
    return not torch.allclose(traced[f"{stack}.final"], last)


def _record(subject: Subject, stack: str) -> list[str]:
    return [p.format(s=stack) for p in TRACED] + [f"{stack}.{subject.spec.n_layers(stack) - 1}.resid_out"]


def _common(subject: Subject, head: int) -> dict:
    spec = subject.spec
    if not 0 <= head < spec.n_heads:
        raise ValueError(f"head must be in 0..{spec.n_heads - 1}, got {head}")
    facts = _facts(subject)
    return dict(head=head, d_model=int(spec.d_model), d_k=int(spec.head_dim), n_heads=int(spec.n_heads),
                d_ff=facts.pop("d_ff"), family=str(getattr(spec, "family", "") or "pretrained"),
                source_vocab_size=int(getattr(spec, "vocab_size", 0) or getattr(spec, "tgt_vocab_size", 0)),
                embed_scale=1.0, **facts)


def _tokens(subject: Subject, text: str, tokenizer, prefix: tuple[int, ...]) -> tuple[list[int], tuple[str, ...]]:
    """The ids the model reads for ``text`` (``prefix`` first) and what was done to the text."""
    item = normalized(prepare(text), subject.task)
    tokenize(item, tokenizer, max(subject.token_limit - len(prefix) - CONTINUATION, 1), subject.limit_reason)
    ids = [*prefix, *item.encoding.ids]
    if not ids:
        raise ValueError("Type some text: the input has no tokens.")
    return ids, tuple(item.notes)


def _vocab(tokenizer, size: int) -> tuple[str, ...]:
    known = min(tokenizer.vocab_size, size)
    return tuple(tokenizer.token_strings(list(range(known)))) + tuple(f"<id {i}>" for i in range(known, size))


def trace_decoder_only(subject: Subject, text: str, head: int) -> LessonTrace:
    """:func:`trace_stack` for a decoder-only model: the prompt, then its greedy continuation."""
    tok = subject.target_tokenizer
    ids, notes = _tokens(subject, text, tok, subject.input_prefix)
    prompt = torch.tensor([ids], device=subject.device)  # (1, S)
    record = _record(subject, "decoder")
    with torch.inference_mode():
        gen = greedy(subject.model, None, prompt, eos_id=subject.eos_id, max_new_tokens=CONTINUATION, record=record)
    traced, rows = gen.output.trace, len(ids)
    every = gen.ids[0].tolist()
    logits = gen.output.logits[0].float()  # (T, V): row t predicted every[t + 1]
    eps = float(getattr(subject.spec, "norm_eps", 1e-5))
    layer0 = _layer0(subject, traced, "decoder", head, rows, eps)
    decoder_head = _head(traced, "decoder", head, (subject.head_groups or range(subject.spec.n_heads))[head],
                         len(every) - 1, True)
    empty = np.zeros((len(every) - 1, 0), np.float32)
    return LessonTrace(
        source_tokens=tuple(tok.token_strings(ids)), target_tokens=tuple(tok.token_strings(every[:-1])),
        generated_tokens=tuple(tok.token_strings(logits.argmax(-1).tolist())),
        output_text=tok.decode(every[len(subject.input_prefix):]), memory=as_numpy(traced["decoder.final"][0, :rows]),
        decoder_head=decoder_head, cross_weights=empty, cross_heads=np.zeros((subject.spec.n_heads, *empty.shape),
                                                                                np.float32),
        probabilities=as_numpy(logits.softmax(-1)), target_vocab=_vocab(tok, logits.size(-1)),
        output_bias=False, notes=notes, n_encoder_layers=0, n_decoder_layers=subject.spec.n_layers("decoder"),
        kind="decoder", final_norm=_final_norm(subject, traced, "decoder"), **layer0, **_common(subject, head))


def trace_encoder_only(subject: Subject, text: str, head: int) -> LessonTrace:
    """:func:`trace_stack` for an encoder-only model: the sentence, and what the model's head makes of it."""
    tok = subject.source_tokenizer
    ids, notes = _tokens(subject, text, tok, ())
    src = torch.tensor([ids], device=subject.device)  # (1, S)
    with torch.inference_mode():
        out = subject.model(src, record=_record(subject, "encoder"))
    traced, rows = out.trace, len(ids)
    eps = float(getattr(subject.spec, "norm_eps", 1e-12))
    layer0 = _layer0(subject, traced, "encoder", head, rows, eps)
    final = traced["encoder.final"][0].float()  # (S, D)
    pooled, probabilities, vocab = None, np.zeros((0, 0), np.float32), ()
    if subject.head == "hidden":
        pooled = as_numpy(pool(subject, final[None], torch.ones(1, rows, dtype=torch.bool))[0])  # (D,)
    elif subject.head == "masked_lm":
        probabilities = as_numpy(out.logits[0].float().softmax(-1))  # (S, V)
        vocab = _vocab(tok, probabilities.shape[-1])
    elif subject.head == "classes":
        probabilities = as_numpy(out.logits.float().softmax(-1))  # (1, C)
        vocab = subject.labels
    log.debug("encoder-only lesson: %d tokens, head %s", rows, subject.head)
    empty = np.zeros((0, rows), np.float32)
    return LessonTrace(
        source_tokens=tuple(tok.token_strings(ids)), target_tokens=(), generated_tokens=(), output_text="",
        memory=as_numpy(final), decoder_head=layer0["encoder_head"], cross_weights=empty,
        cross_heads=np.zeros((subject.spec.n_heads, *empty.shape), np.float32), probabilities=probabilities,
        target_vocab=tuple(vocab), output_bias=False, notes=notes, n_encoder_layers=subject.spec.n_layers("encoder"),
        n_decoder_layers=0, kind="encoder", final_norm=_final_norm(subject, traced, "encoder"), use=subject.head, pooled=pooled, **layer0, **_common(subject, head))


def trace_stack(model: Checkpoint | PretrainedModel, text: str, head: int = 0) -> LessonTrace:
    """Follow ``text`` through a decoder-only or encoder-only model, every stage read from its trace.

    Args:
        model: a loaded model whose architecture is ``decoder`` or ``encoder``.
        text: the prompt or sentence. head: which head to follow step by step (0-based).

    Raises:
        ValueError: another architecture, a head out of range, scores the stages cannot show, or text the model
            cannot read.
    """
    subject = as_subject(model)
    kind = subject.spec.architecture
    if not maps_on_demand(subject.spec):
        raise ValueError("The Lesson follows scaled dot-product attention; this model's scores are another function.")
    if kind == "decoder":
        return trace_decoder_only(subject, text, head)
    if kind == "encoder":
        return trace_encoder_only(subject, text, head)
    raise ValueError(f"trace_stack follows a decoder-only or encoder-only model, not a {kind} one.")
