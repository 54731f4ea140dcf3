"""`explain(model, text, **options) -> Explanation`: the one pipeline, for every model on the contract.

Text is prepared and tokenized (:mod:`core.text.inputs`), the model runs once with every map (or
generates through :mod:`core.generate`), and the result is pure data. The three paths follow the
architecture (encoder, decoder, encoder-decoder); what an encoder predicts follows its head
(:mod:`core.inspect.heads`). Nothing here knows a model family.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import numpy as np
import torch
from torch import Tensor

from core.generate import decode, stepwise
from core.inspect.batching import Batch, pad_rows, source_batch
from core.inspect.heads import encoder_predictions
from core.inspect.maps import from_trace
from core.inspect.options import ExplainOptions
from core.inspect.records import Explanation, Prediction
from core.inspect.subject import MAP_BUDGET_BYTES, Subject, as_subject, map_bytes, maps_on_demand
from core.io.checkpoint import Checkpoint
from core.io.pretrained.load import PretrainedModel
from core.model.contract import ModelOutput
from core.text.inputs import TextInput, normalized, prepare, tokenize

#: The most tokens one explanation generates, whatever ``max_new_tokens`` or ``continuation`` asks (the app's cap
#: too): a longer request is cut here with a note.
GENERATION_CAP = 256
CAP_NOTE = f"The output was limited to {GENERATION_CAP} new tokens."
Source = Checkpoint | PretrainedModel | Subject | str | os.PathLike
#: Rows of (T, V) logits turned into probabilities at once (a long input's whole softmax would copy them twice).
ROWS_AT_ONCE = 256
#: What the fast pass records for maps on demand: each layer's queries, keys and how its scores are formed.
MAP_RECORD = ("*.q", "*.k", "*.mask", "*.bias", "*.scale", "*.softcap")


def explain(model: Source, text: str, **options) -> Explanation:
    """Run a model on ``text`` and return everything the app shows.

    Args:
        model: a loaded :class:`Checkpoint` or :class:`PretrainedModel`, or a path to a checkpoint,
            a Hugging Face model folder or a ``.gguf`` file.
        text: the user's input.
        **options: see :class:`ExplainOptions`.

    Raises:
        ValueError: empty or whitespace-only text, invalid text (lone surrogates) or options.
        CheckpointError: when ``model`` is a path that cannot be loaded.
    """
    return explain_batch(model, [text], **options)[0]


def explain_batch(model: Source, texts: list[str], **options) -> list[Explanation]:
    """Run several texts as ONE padded batch, one :class:`Explanation` per text.

    Shorter inputs are right-padded, and the padding tokens appear in their explanation (as pad rows
    and columns), so switching the padding mask off shows what the model attends to when padding is
    not hidden. A decoder's ``continuation`` is only available for a single text.

    Raises:
        ValueError: as :func:`explain`, for any of the texts, or an empty list.
    """
    opts = ExplainOptions.of(options)
    if not texts:
        raise ValueError("Give at least one text.")
    if len(texts) > 1 and opts.continuation:
        raise ValueError("continuation needs a single text")
    inputs = [prepare(text) for text in texts]
    subject = as_subject(model)
    if getattr(subject.spec, "modality", "text") != "text":
        raise ValueError("this model reads speech, not text: use explain_speech with an audio file")
    inputs = [normalized(item, subject.task) for item in inputs]
    paths = {"encoder-decoder": _seq2seq, "encoder": _encoder, "decoder": _decoder}
    with torch.inference_mode():
        return paths[subject.spec.architecture](subject, inputs, opts)


def maps_of(output: ModelOutput, kinds: tuple[str, ...], which: str, row: int) -> dict[str, np.ndarray] | None:
    """Row ``row``'s ``attention`` or ``scores`` per kind as float32 (L, H, Tq, Tk), or None."""
    maps = getattr(output, which)
    if maps is None:
        return None
    # one copy at most (none for a batch of one): at 2048 tokens a map set is hundreds of MB
    return {k: np.ascontiguousarray(maps[k][:, row].float().cpu().numpy()) for k in kinds}  # (L, H, Tq, Tk)


def tracedfor(subject: Subject, opts: ExplainOptions, source: int, target: int) -> tuple[str, ...] | None:
    """The trace to record instead of the maps (:data:`MAP_RECORD`), or None for the exact path: as
    ``opts.maps`` says, ``auto`` choosing the exact path while the maps of ``source`` encoder and ``target``
    decoder tokens fit :data:`MAP_BUDGET_BYTES`.

    Raises:
        ValueError: ``on_demand`` for a model whose scores are not dot products of q and k.
    """
    if opts.maps == "exact":
        return None
    possible = maps_on_demand(subject.spec)
    if opts.maps == "on_demand":
        if not possible:
            raise ValueError("this model's scores are not a dot product of queries and keys, so its maps cannot "
                             "be computed on demand: use maps='exact'")
        return MAP_RECORD
    held = map_bytes(subject.spec, source, target) * (2 if opts.return_scores else 1)
    return MAP_RECORD if possible and held > MAP_BUDGET_BYTES else None


def _maps(subject: Subject, opts: ExplainOptions, output: ModelOutput, row: int, scores: bool):
    """Row ``row``'s maps (or scores) per kind: held whole from the exact pass, or on demand from its trace."""
    kinds = subject.spec.attention_kinds
    if output.trace is None:
        return maps_of(output, kinds, "scores" if scores else "attention", row)
    if scores and not opts.return_scores:
        return None
    return {kind: from_trace(output.trace, kind, subject.spec.n_layers(kind), row, subject.head_groups,
                             opts.temperature, opts.hard, scores) for kind in kinds}


def produced_probabilities(subject: Subject, logits: Tensor, produced: list[int]) -> np.ndarray:
    """float32 (T,): the probability the model gave each produced token at its row of ``logits`` (T, V), the
    ids decoding never produces ruled out as when decoding; 0 for padding rows."""
    bias = stepwise.banned_bias(subject.model, logits.size(-1), logits.device)  # (V,)
    ids = torch.tensor(produced[: logits.size(0)], device=logits.device)  # (T,)
    probs = torch.cat([(part.float() + bias).softmax(-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
                       for part, chosen in zip(logits.split(ROWS_AT_ONCE), ids.split(ROWS_AT_ONCE))])  # (T,)
    return torch.where(ids == subject.spec.pad_id, 0.0, probs).cpu().numpy().astype(np.float32)


def record(subject: Subject, item: TextInput, opts: ExplainOptions, output: ModelOutput, row: int,
           **fields_) -> Explanation:
    """The :class:`Explanation` of one row of a run."""
    kinds = subject.spec.attention_kinds
    groups = {kind: subject.head_groups for kind in kinds} if subject.grouped else {}
    return Explanation(
        text=item.text, task=subject.task, architecture=subject.spec.architecture,
        attention=_maps(subject, opts, output, row, False), scores=_maps(subject, opts, output, row, True),
        options=asdict(opts), notes=tuple(item.notes), truncated=item.truncated, head_groups=groups,
        unknown_words=tuple(item.unknown), **fields_,
    )


def generate(subject: Subject, src: Tensor | None, prefix: Tensor, opts: ExplainOptions,
             limit: int, record: tuple[str, ...] | None = None) -> decode.Generation:
    """Decode up to ``limit`` tokens after ``prefix`` as ``opts.decoding`` says (its final pass recording
    ``record`` instead of the maps when given)."""
    common = dict(eos_id=subject.eos_id, max_new_tokens=limit, controls=opts.controls(),
                  return_scores=opts.return_scores, record=record)
    if opts.decoding == "beam":
        return decode.beam_search(subject.model, src, prefix, beam_size=opts.beam_size, **common)
    if opts.decoding == "sample":
        generator = torch.Generator().manual_seed(opts.seed)
        return decode.sample(subject.model, src, prefix, generator=generator, temperature=opts.sample_temperature,
                             top_k=opts.top_k, top_p=opts.top_p, **common)
    return decode.greedy(subject.model, src, prefix, **common)


def _seq2seq(subject: Subject, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    tgt_tok = subject.target_tokenizer
    src = source_batch(subject, inputs)
    prefix = torch.tensor([list(subject.decoder_start)] * len(inputs), dtype=torch.long, device=src.ids.device)
    limit = min(opts.max_new_tokens or subject.spec.max_len, GENERATION_CAP)
    traced = tracedfor(subject, opts, src.ids.size(1), prefix.size(1) + limit)
    gen = generate(subject, src.ids, prefix, opts, limit, traced)
    results = []
    for row, item in enumerate(inputs):
        if (opts.max_new_tokens or 0) > GENERATION_CAP:
            item.notes.append(CAP_NOTE)
        ids = gen.ids[row].tolist()
        queries = ids[:-1]  # the decoder inputs; row t produced ids[t + 1]
        finished = bool(gen.finished[row])
        if not finished:
            item.notes.append("The output reached the length limit without an end-of-sequence token.")
        results.append(record(
            subject, item, opts, gen.output, row,
            source_tokens=tuple(src.tokens[row]), source_offsets=tuple(src.offsets[row]),
            target_tokens=tuple(tgt_tok.token_strings(queries)), target_offsets=((0, 0),) * len(queries),
            generated_tokens=tuple(tgt_tok.token_strings(ids[1:])),
            token_probabilities=produced_probabilities(subject, gen.output.logits[row], ids[1:]),
            prediction=Prediction("text", tgt_tok.decode(ids), finished=finished),
        ))
    return results


def _encoder(subject: Subject, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    src = source_batch(subject, inputs)
    traced = tracedfor(subject, opts, src.ids.size(1), 0)
    if traced is None:
        output = subject.model(src.ids, controls=opts.controls(), return_attention=True,
                               return_scores=opts.return_scores, key_mask=src.real)
    else:
        output = subject.model(src.ids, controls=opts.controls(), key_mask=src.real, record=traced)
    predictions = encoder_predictions(subject, output.logits, src, opts.top_n)
    return [record(subject, item, opts, output, row, source_tokens=tuple(src.tokens[row]),
                   source_offsets=tuple(src.offsets[row]), target_tokens=(), target_offsets=(),
                   generated_tokens=(), prediction=predictions[row])
            for row, item in enumerate(inputs)]


def _decoder_batch(subject: Subject, inputs: list[TextInput], reserve: int) -> Batch:
    """The decoder's input rows: the model's input prefix then the text's tokens, leaving ``reserve``
    positions for a continuation."""
    tok, prefix = subject.target_tokenizer, list(subject.input_prefix)
    room = max(subject.token_limit - len(prefix) - reserve, 1)
    for item in inputs:
        tokenize(item, tok, room, subject.limit_reason)
    rows = [([*prefix, *item.encoding.ids], tok.token_strings([*prefix, *item.encoding.ids]),
             [(0, 0)] * len(prefix) + list(item.encoding.offsets)) for item in inputs]
    return pad_rows(subject, rows, tok)


def _decoder(subject: Subject, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    tok, limit = subject.target_tokenizer, subject.token_limit
    batch = _decoder_batch(subject, inputs, min(opts.continuation, limit // 2, GENERATION_CAP))
    generated: list[int] = []
    traced = tracedfor(subject, opts, 0, batch.ids.size(1) + min(opts.continuation, GENERATION_CAP))
    if opts.continuation:  # a single text (checked by explain_batch)
        room = min(opts.continuation, limit - batch.ids.size(1), GENERATION_CAP)
        if room < opts.continuation:
            inputs[0].notes.append(f"The continuation was limited to {room} tokens.")
        gen = generate(subject, None, batch.ids, opts, room, traced)
        output, generated = gen.output, gen.ids[0].tolist()[batch.ids.size(1):]
        queries = [gen.ids[0].tolist()[:-1]]
    elif traced is None:
        output = subject.model(tgt=batch.ids, controls=opts.controls(), return_attention=True,
                               return_scores=opts.return_scores, key_mask=batch.real)
        queries = batch.ids.tolist()
    else:
        output = subject.model(tgt=batch.ids, controls=opts.controls(), key_mask=batch.real, record=traced)
        queries = batch.ids.tolist()
    results = []
    for row, item in enumerate(inputs):
        length = batch.lengths[row]
        probs = output.logits[row, length - 1].float().softmax(-1)  # after the last real token
        top = probs.topk(min(opts.top_n, probs.numel()))
        candidates = tuple(tok.token_strings(top.indices.tolist()))
        extra = len(queries[row]) - length  # continuation or padding rows
        # Input rows show the model's most likely next token; the last input row and the
        # continuation rows show what was actually generated.
        predicted = output.logits[row, :length].argmax(-1).tolist()
        produced = predicted[:-1] + generated if generated else predicted
        produced += [subject.spec.pad_id] * (len(queries[row]) - len(produced))
        results.append(record(
            subject, item, opts, output, row, source_tokens=(), source_offsets=(),
            target_tokens=tuple(tok.token_strings(queries[row])),
            target_offsets=tuple(batch.offsets[row][:length] + [(0, 0)] * extra),
            generated_tokens=tuple(tok.token_strings(produced)),
            token_probabilities=produced_probabilities(subject, output.logits[row, : len(queries[row])], produced),
            prediction=Prediction("next_token", tok.decode(generated) if generated else candidates[0],
                                  candidates, top.values.cpu().numpy().astype(np.float32)),
        ))
    return results
