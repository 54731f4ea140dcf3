"""Explanations, sentence embeddings and similarity for pretrained models (BERT and Llama families).

:func:`core.inspect.explainer.explain` hands pretrained models here after checking the
text and options, and gets the same :class:`Explanation` back: a BERT encoder's
prediction is its sentence embedding, a Llama decoder's the next-token top-k (and a
greedy, sampled or beam continuation through ``core.generate.decode``).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from core.generate import decode
from core.text.inputs import TextInput
from core.inspect.records import Explanation, Prediction
from core.io.pretrained.load import PretrainedModel, load_pretrained
from core.text.tokenizer import Encoding
from core.model.families.bert import sentence_embedding
from core.model.contract import ModelOutput
from core.text.sequences import truncate

if TYPE_CHECKING:  # pragma: no cover
    from core.inspect.explainer import ExplainOptions

MAP_BUDGET_BYTES = 128 * 2**20  # the float32 maps of one explanation stay below this


def token_limit(model: PretrainedModel) -> int:
    """The most tokens explained at once: the model's limit, or fewer so that all L·H maps
    of T × T float32 stay within :data:`MAP_BUDGET_BYTES` (T ≈ 350 for SmolLM2, 512 for MiniLM)."""
    config = model.config
    maps = config.n_layers(config.architecture) * config.n_heads
    return max(2, min(config.max_len, math.isqrt(MAP_BUDGET_BYTES // (4 * maps))))


def _as_model(source: PretrainedModel | str | os.PathLike) -> PretrainedModel:
    return source if isinstance(source, PretrainedModel) else load_pretrained(source)


def explain_pretrained(source: PretrainedModel | str | os.PathLike, inputs: list[TextInput],
                       opts: ExplainOptions) -> list[Explanation]:
    """One :class:`Explanation` per prepared input (see :func:`core.inspect.explainer.explain_batch`)."""
    pretrained = _as_model(source)
    if pretrained.family == "whisper":
        raise ValueError(f"{pretrained.name} reads speech, not text: use explain_speech with an audio file")
    with torch.inference_mode():
        if pretrained.architecture == "encoder":
            return _encoder(pretrained, inputs, opts)
        return _decoder(pretrained, inputs, opts)


def _tokenize(pretrained: PretrainedModel, item: TextInput, limit: int) -> None:
    tokenizer = pretrained.tokenizer
    encoding = tokenizer.encode(item.work)
    encoding, cut = truncate(encoding, limit)
    cut = cut or tokenizer.truncated(item.work)
    if not encoding.ids:
        raise ValueError("The text has no recognisable tokens.")
    item.encoding, item.truncated = encoding, item.truncated or cut
    if cut:
        item.notes.append(f"The input was truncated to {limit} tokens (the most explained at once).")
    unk = tokenizer.token_id("[UNK]")
    unknown = encoding.ids.count(unk) if unk is not None else 0
    if unknown:
        item.notes.append(f"{unknown} token(s) unknown to the model are shown as [UNK].")


def _batch(pretrained: PretrainedModel, inputs: list[TextInput]) -> tuple[Tensor, Tensor, list, list]:
    """(ids (B, T), key mask (B, T), tokens per row, offsets per row), right-padded with the pad token."""
    pad = pretrained.config.pad_id
    width = max(len(item.encoding) for item in inputs)
    rows = [item.encoding for item in inputs]
    ids = torch.tensor([e.ids + [pad] * (width - len(e)) for e in rows], dtype=torch.long)
    real = torch.tensor([[True] * len(e) + [False] * (width - len(e)) for e in rows])
    pad_token = pretrained.tokenizer.token_strings([pad])[0]
    tokens = [list(e.tokens) + [pad_token] * (width - len(e)) for e in rows]
    offsets = [list(e.offsets) + [(0, 0)] * (width - len(e)) for e in rows]
    device = next(pretrained.model.parameters()).device
    return ids.to(device), real.to(device), tokens, offsets


def _maps(output: ModelOutput, which: str, row: int) -> dict[str, np.ndarray] | None:
    maps = getattr(output, which)
    if maps is None:
        return None
    return {k: np.ascontiguousarray(v[:, row].float().cpu().numpy()) for k, v in maps.items()}  # (L, H, Tq, Tk)


def _record(pretrained: PretrainedModel, item: TextInput, opts: ExplainOptions, output: ModelOutput, row: int,
            **fields_) -> Explanation:
    kind = pretrained.architecture
    groups = {kind: pretrained.head_groups()} if pretrained.family == "llama" else {}
    return Explanation(
        text=item.text, task=None, architecture=kind, attention=_maps(output, "attention", row),
        scores=_maps(output, "scores", row), options=asdict(opts), notes=tuple(item.notes),
        truncated=item.truncated, head_groups=groups, **fields_,
    )


def pool(pretrained: PretrainedModel, hidden: Tensor, key_mask: Tensor) -> Tensor:
    """The sentence vectors (B, D) of hidden states (B, T, D), as the model's pooling says."""
    if pretrained.pooling.get("mode", "mean") == "cls":
        vectors = hidden[:, 0]  # (B, D): the [CLS] token
        return torch.nn.functional.normalize(vectors, dim=1) if pretrained.pooling.get("normalize") else vectors
    return sentence_embedding(hidden, key_mask)  # mean over real tokens, normalised


def _encoder(pretrained: PretrainedModel, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    limit = token_limit(pretrained)
    for item in inputs:
        _tokenize(pretrained, item, limit)
    ids, real, tokens, offsets = _batch(pretrained, inputs)
    output = pretrained.model(ids, controls=opts.controls(), return_attention=True,
                              return_scores=opts.return_scores, key_mask=real)
    vectors = pool(pretrained, output.logits, real).float().cpu().numpy().astype(np.float32)  # (B, D)
    width = vectors.shape[1]
    return [
        _record(pretrained, item, opts, output, row,
                source_tokens=tuple(tokens[row]), source_offsets=tuple(offsets[row]),
                target_tokens=(), target_offsets=(), generated_tokens=(),
                prediction=Prediction("embedding", f"sentence embedding: {width} numbers, unit length",
                                      vector=vectors[row]))
        for row, item in enumerate(inputs)
    ]


def _continue(pretrained: PretrainedModel, prefix: Tensor, opts: ExplainOptions, room: int) -> decode.Generation:
    model, eos = pretrained.model, pretrained.config.eos_id
    common = dict(eos_id=-1 if eos is None else eos, max_new_tokens=room, controls=opts.controls(),
                  return_scores=opts.return_scores)
    if opts.decoding == "beam":
        return decode.beam_search(model, None, prefix, beam_size=opts.beam_size, **common)
    if opts.decoding == "sample":
        generator = torch.Generator().manual_seed(opts.seed)
        return decode.sample(model, None, prefix, generator=generator, temperature=opts.sample_temperature,
                             top_k=opts.top_k, **common)
    return decode.greedy(model, None, prefix, **common)


def _decoder(pretrained: PretrainedModel, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    limit, tok = token_limit(pretrained), pretrained.tokenizer
    for item in inputs:
        _tokenize(pretrained, item, max(limit - min(opts.continuation, limit // 2), 1))
    ids, real, tokens, offsets = _batch(pretrained, inputs)
    lengths = [len(item.encoding) for item in inputs]
    generated: list[int] = []
    if opts.continuation:  # a single text (checked by explain_batch)
        room = min(opts.continuation, limit - ids.size(1))
        if room < opts.continuation:
            inputs[0].notes.append(f"The continuation was limited to {room} tokens.")
        gen = _continue(pretrained, ids, opts, room)
        output, generated = gen.output, gen.ids[0].tolist()[ids.size(1):]
        queries = [gen.ids[0].tolist()[:-1]]
    else:
        output = pretrained.model(tgt=ids, controls=opts.controls(), return_attention=True,
                                  return_scores=opts.return_scores, key_mask=real)
        queries = ids.tolist()
    results = []
    for row, item in enumerate(inputs):
        probs = output.logits[row, lengths[row] - 1].float().softmax(-1)  # after the last real token
        top = probs.topk(min(opts.top_n, probs.numel()))
        candidates = tuple(tok.token_strings(top.indices.tolist()))
        extra = len(queries[row]) - lengths[row]  # continuation or padding rows
        # Input rows show the model's most likely next token; the last input row and the
        # continuation rows show what was actually generated.
        predicted = output.logits[row, : lengths[row]].argmax(-1).tolist()
        produced = predicted[:-1] + generated if generated else predicted
        produced += [pretrained.config.pad_id] * (len(queries[row]) - len(produced))
        results.append(_record(
            pretrained, item, opts, output, row, source_tokens=(), source_offsets=(),
            target_tokens=tuple(tokens[row][: lengths[row]] + tok.token_strings(queries[row][lengths[row]:])),
            target_offsets=tuple(offsets[row][: lengths[row]] + [(0, 0)] * extra),
            generated_tokens=tuple(tok.token_strings(produced)),
            prediction=Prediction("next_token", tok.decode(generated) if generated else candidates[0],
                                  candidates, top.values.cpu().numpy().astype(np.float32)),
        ))
    return results


def sentence_embeddings(source: PretrainedModel | str | os.PathLike, texts: list[str]) -> np.ndarray:
    """float32 (N, D) sentence embeddings of ``texts`` from a BERT-family model (unit length when it
    normalises, as all-MiniLM-L6-v2 does).

    Raises:
        ValueError: a decoder model, no texts, or an empty text.
    """
    pretrained = _as_model(source)
    if pretrained.architecture != "encoder":
        raise ValueError(f"{pretrained.name} is a language model; sentence embeddings need a BERT-family encoder")
    if not texts or any(not isinstance(t, str) or not t.strip() for t in texts):
        raise ValueError("Give one or more non-empty texts.")
    encodings: list[Encoding] = [pretrained.tokenizer.encode(t) for t in texts]
    width = max(len(e) for e in encodings)
    pad = pretrained.config.pad_id
    ids = torch.tensor([e.ids + [pad] * (width - len(e)) for e in encodings], dtype=torch.long)
    real = torch.tensor([[True] * len(e) + [False] * (width - len(e)) for e in encodings])
    with torch.inference_mode():
        hidden = pretrained.model(ids, key_mask=real).logits  # (N, T, D)
        return pool(pretrained, hidden, real).float().numpy().astype(np.float32)


def sentence_similarity(source: PretrainedModel | str | os.PathLike, first: str, second: str) -> float:
    """Cosine similarity of two sentences' embeddings, in [−1, 1]."""
    a, b = sentence_embeddings(source, [first, second]).astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))
