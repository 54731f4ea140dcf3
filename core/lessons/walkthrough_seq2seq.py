"""One sentence followed through a pretrained encoder-decoder (Marian, BART/mBART, T5), stage by stage.

:func:`trace_seq2seq` fills the same :class:`~core.lessons.walkthrough.LessonTrace` as
:func:`~core.lessons.walkthrough.trace_translation` does for our own model, read from one forward pass's trace
(:mod:`core.model.trace`: each stack's input, layer 0's q, k, v, mask, relative bias and scale, its sublayers'
outputs and residual streams, each stack's output), so the Lesson's stages draw any encoder-decoder the app can
load without knowing its family. Where a model departs from the paper the trace and the config's fields say how:
a pre-norm layer's ``resid_mid`` is ``embed + attn_out`` (x + Sublayer(Norm(x))); T5 records a learned bias per
relative distance added to its unscaled scores (``scale`` 1) instead of adding positions to the embeddings; BART
adds a learned position table and normalises the sum (``embedding_norm``).

Axis letters: S source length, T decoder length, D model width, H heads, dk head width, F FFN width,
V vocabulary. Rows are queries, columns keys.
"""

from __future__ import annotations

import torch

from core.generate.decode import greedy
from core.inspect.facts import ModelFacts
from core.inspect.subject import as_subject, maps_on_demand
from core.io.checkpoint import Checkpoint
from core.io.pretrained.load import PretrainedModel
from core.lessons.walkthrough import as_numpy, LessonTrace, trace_translation
from core.lessons.walkthrough_stack import (final_norm_of, head_from_trace, layer0_from_trace, model_facts,
                                            record_for, trace_stack, vocab_strings)
from core.text.inputs import normalized, prepare, tokenize

GENERATION_LIMIT = 64  # tokens the Lesson's translation may run to
POSITIONS = {"sinusoidal": "marian", "learned": "learned", "relative": "relative"}  # config → the Lesson's names


def _config_facts(config) -> dict:
    """What the family's config says where it departs from the paper (its fields, no family class)."""
    return dict(family=str(getattr(config, "family", "pretrained")),
                positions=POSITIONS.get(getattr(config, "positions", ""), "none"),
                embedding_norm=bool(getattr(config, "embedding_norm", False)),
                projection_bias=bool(getattr(config, "bias", True)), output_bias=bool(getattr(config, "logits_bias",
                                                                                               False)),
                embed_scale=float(getattr(config, "embed_scale", 1.0)),
                logits_scale=float(getattr(config, "logits_scale", 1.0)))


def trace_seq2seq(pretrained: PretrainedModel, text: str, head: int = 0) -> LessonTrace:
    """Follow ``text`` through a pretrained Marian, BART/mBART or T5 model, greedy-decoding its output.

    Args:
        pretrained: a loaded Hugging Face encoder-decoder folder (:func:`core.load_pretrained`).
        text: the source sentence. head: which head to follow step by step (0-based).

    Raises:
        ValueError: another kind of model (speech, encoder- or decoder-only), a head out of range, or
            text the model cannot read.
    """
    subject = as_subject(pretrained)
    c = subject.spec
    if c.architecture != "encoder-decoder" or subject.head != "text":
        raise ValueError(f"The lesson follows a text encoder-decoder; {pretrained.name} is a "
                         f"{pretrained.family} {c.architecture} model.")
    if not 0 <= head < c.n_heads:
        raise ValueError(f"head must be in 0..{c.n_heads - 1}, got {head}")
    item = normalized(prepare(text), None)
    tokenize(item, subject.source_tokenizer, subject.token_limit)
    ids = item.encoding.ids
    src = torch.tensor([ids], device=subject.device)  # (1, S)
    prefix = torch.tensor([list(subject.decoder_start)], device=subject.device)  # (1, 1 or 2)
    with torch.inference_mode():
        gen = greedy(subject.model, src, prefix, eos_id=subject.eos_id,
                     max_new_tokens=min(c.max_len, GENERATION_LIMIT))
        traced = subject.model(src, gen.ids[:, :-1], record=record_for(subject, "encoder") + record_for(subject, "decoder")).trace
    out_ids = gen.ids[0].tolist()
    eps = float(getattr(c, "norm_eps", 1e-6))
    groups = subject.head_groups or tuple(range(c.n_heads))
    encoder = layer0_from_trace(subject, traced, "encoder", head, len(ids), eps)
    decoder_head = head_from_trace(traced, "decoder", head, groups[head], len(out_ids) - 1, True)
    facts = model_facts(subject)
    src_tok, tgt_tok = subject.source_tokenizer, subject.target_tokenizer
    vocab_size = int(gen.output.logits.size(-1))  # T5 keeps rows past its tokenizer's vocabulary
    return LessonTrace(
        source_tokens=tuple(src_tok.token_strings(ids)), target_tokens=tuple(tgt_tok.token_strings(out_ids[:-1])),
        generated_tokens=tuple(tgt_tok.token_strings(out_ids[1:])), output_text=tgt_tok.decode(out_ids),
        head=head, d_model=int(c.d_model), n_heads=int(c.n_heads), d_ff=facts["d_ff"],
        memory=as_numpy(traced["encoder.final"][0]), decoder_head=decoder_head,
        cross_weights=as_numpy(gen.output.attention["cross"][-1, 0, head]),  # (T, S)
        cross_heads=as_numpy(gen.output.attention["cross"][-1, 0]),  # (H, T, S)
        probabilities=as_numpy(gen.output.logits[0].float().softmax(-1)),  # (T, V)
        target_vocab=vocab_strings(tgt_tok, vocab_size), final_norm=final_norm_of(subject, traced, "encoder"),
        notes=tuple(item.notes), norm_type=facts["norm_type"], activation=facts["activation"], gated=facts["gated"],
        n_encoder_layers=c.n_layers("encoder"), n_decoder_layers=c.n_layers("decoder"),
        source_vocab_size=int(getattr(c, "vocab_size", vocab_size)), **_config_facts(c), **encoder,
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
        return model.head == "text"  # a text encoder-decoder (a speech model's head is "speech")
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
