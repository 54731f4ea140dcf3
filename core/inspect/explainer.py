"""`explain(checkpoint, text, **options) -> Explanation`: the one call the app makes.

Tokenize, run the model (decoding when it generates) and return pure data. Also a
small CLI: ``python -m core explain CHECKPOINT "text"`` prints the prediction and the
most-attended key of every head.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import torch

from core.generate import decode
from core.io.checkpoint import Checkpoint, CheckpointError, load
from core.io.pretrained.load import PretrainedModel, is_pretrained
from core.inspect.pretrained import explain_pretrained
from core.model.contract import AttentionControls, ModelOutput
from core.text.inputs import TextInput, length_note, normalized, prepare, tokenize
from core.inspect.records import Explanation, Prediction
from core.text.tokenizer import BOS_ID, EOS_ID, SPECIAL_TOKENS

DECODINGS = ("greedy", "beam", "sample")


@dataclass(frozen=True)
class ExplainOptions:
    """Options of :func:`explain` (all optional keyword arguments).

    Attributes:
        decoding: ``greedy``, ``beam`` or ``sample`` (generating models).
        beam_size: beams for ``beam``.
        max_new_tokens: generation limit (default: the model's ``max_len``).
        sample_temperature / top_k / seed: sampling settings (``sample``).
        continuation: tokens a language model generates after the input (0 = none).
        top_n: how many next-token candidates a language model reports.
        temperature: attention inverse temperature β (1.0 = the paper).
        hard: one-hot argmax attention.
        causal: decoder look-ahead mask on (the paper) or off.
        padding: padding mask on or off.
        head_mask: kind → (L, H) nested lists of 1 (keep) / 0 (knock out).
        return_scores: also return pre-softmax scores.
    """

    decoding: str = "greedy"
    beam_size: int = 4
    max_new_tokens: int | None = None
    sample_temperature: float = 1.0
    top_k: int | None = None
    seed: int = 0
    continuation: int = 0
    top_n: int = 5
    temperature: float = 1.0
    hard: bool = False
    causal: bool = True
    padding: bool = True
    head_mask: dict[str, list[list[float]]] = field(default_factory=dict)
    return_scores: bool = False

    def __post_init__(self) -> None:
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}; got {self.decoding!r}")
        for name in ("beam_size", "top_n"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.continuation < 0 or (self.max_new_tokens is not None and self.max_new_tokens < 1):
            raise ValueError("continuation must be >= 0 and max_new_tokens >= 1")

    def controls(self) -> AttentionControls:
        masks = {k: torch.tensor(v, dtype=torch.float32) for k, v in self.head_mask.items()}
        return AttentionControls(self.causal, self.padding, self.temperature, self.hard, masks)


def explain(checkpoint: Checkpoint | PretrainedModel | str | os.PathLike, text: str, **options) -> Explanation:
    """Run the checkpoint's model on ``text`` and return everything the app shows.

    Args:
        checkpoint: a loaded :class:`Checkpoint` or :class:`PretrainedModel`, or a path to a
            checkpoint, a BERT-family folder or a Llama-family ``.gguf`` file.
        text: the user's input.
        **options: see :class:`ExplainOptions`.

    Raises:
        ValueError: empty or whitespace-only text, invalid text (lone surrogates) or options.
        CheckpointError: when ``checkpoint`` is a path that cannot be loaded.
    """
    return explain_batch(checkpoint, [text], **options)[0]


def explain_batch(checkpoint: Checkpoint | PretrainedModel | str | os.PathLike, texts: list[str],
                  **options) -> list[Explanation]:
    """Run several texts as ONE padded batch, one :class:`Explanation` per text.

    Shorter inputs are right-padded with ``<pad>``, and the padding tokens appear in
    their explanation (as ``<pad>`` rows and columns), so switching the padding mask
    off shows what the model attends to when padding is not hidden. A language model's
    ``continuation`` is only available for a single text.

    Raises:
        ValueError: as :func:`explain`, for any of the texts, or an empty list.
    """
    known = {f.name for f in fields(ExplainOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s): {', '.join(unknown)}; expected {', '.join(sorted(known))}")
    opts = ExplainOptions(**options)
    if not texts:
        raise ValueError("Give at least one text.")
    if len(texts) > 1 and opts.continuation:
        raise ValueError("continuation needs a single text")
    if is_pretrained(checkpoint):  # a BERT-family folder or a Llama-family GGUF
        return explain_pretrained(checkpoint, [prepare(text) for text in texts], opts)
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load(checkpoint)
    inputs = [normalized(prepare(text), ckpt.info.task) for text in texts]
    with torch.inference_mode():
        build = {"encoder-decoder": _seq2seq, "encoder": _classifier, "decoder": _language_model}
        return build[ckpt.config.architecture](ckpt, inputs, opts)


def _padded(rows: list[list], width: int, fill) -> list[list]:
    return [row + [fill] * (width - len(row)) for row in rows]


def _source_batch(ckpt: Checkpoint, inputs: list[TextInput], limit: int) -> tuple[torch.Tensor, list, list]:
    """(src (B, S), tokens per row, offsets per row), padding shown as ``<pad>`` tokens."""
    for item in inputs:
        tokenize(item, ckpt.source_tokenizer, limit)
        length_note(item, ckpt.info.task)
    width = max(len(item.encoding) for item in inputs)
    ids = _padded([item.encoding.ids for item in inputs], width, ckpt.config.pad_id)
    tokens = _padded([list(item.encoding.tokens) for item in inputs], width, SPECIAL_TOKENS[ckpt.config.pad_id])
    offsets = _padded([list(item.encoding.offsets) for item in inputs], width, (0, 0))
    return torch.tensor(ids, dtype=torch.long, device=_device(ckpt)), tokens, offsets


def _maps(output: ModelOutput, kinds: tuple[str, ...], which: str, row: int) -> dict[str, np.ndarray] | None:
    maps = getattr(output, which)
    if maps is None:
        return None
    # one copy at most (none for a batch of one): at 2048 tokens a map set is hundreds of MB
    return {k: np.ascontiguousarray(maps[k][:, row].float().cpu().numpy()) for k in kinds}  # (L, H, Tq, Tk)


def _generate(ckpt: Checkpoint, src, prefix, opts: ExplainOptions, limit: int) -> decode.Generation:
    common = dict(eos_id=EOS_ID, max_new_tokens=limit, controls=opts.controls(), return_scores=opts.return_scores)
    if opts.decoding == "beam":
        return decode.beam_search(ckpt.model, src, prefix, beam_size=opts.beam_size, **common)
    if opts.decoding == "sample":
        generator = torch.Generator().manual_seed(opts.seed)
        return decode.sample(ckpt.model, src, prefix, generator=generator, temperature=opts.sample_temperature,
                             top_k=opts.top_k, **common)
    return decode.greedy(ckpt.model, src, prefix, **common)


def _device(ckpt: Checkpoint) -> torch.device:
    return next(ckpt.model.parameters()).device


def _record(ckpt: Checkpoint, item: TextInput, opts: ExplainOptions, output: ModelOutput, row: int,
            **fields_) -> Explanation:
    kinds = ckpt.config.attention_kinds
    return Explanation(
        text=item.text, task=ckpt.info.task, architecture=ckpt.config.architecture,
        attention=_maps(output, kinds, "attention", row), scores=_maps(output, kinds, "scores", row),
        options=asdict(opts), notes=tuple(item.notes), truncated=item.truncated, **fields_,
    )


def _seq2seq(ckpt: Checkpoint, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    cfg, tgt_tok = ckpt.config, ckpt.target_tokenizer
    src, tokens, offsets = _source_batch(ckpt, inputs, cfg.max_len)
    prefix = torch.full((len(inputs), 1), BOS_ID, dtype=torch.long, device=src.device)
    gen = _generate(ckpt, src, prefix, opts, opts.max_new_tokens or cfg.max_len)
    results = []
    for row, item in enumerate(inputs):
        ids = gen.ids[row].tolist()
        queries = ids[:-1]  # the decoder inputs; row t produced ids[t + 1]
        finished = bool(gen.finished[row])
        if not finished:
            item.notes.append("The output reached the length limit without an end-of-sequence token.")
        results.append(_record(
            ckpt, item, opts, gen.output, row,
            source_tokens=tuple(tokens[row]), source_offsets=tuple(offsets[row]),
            target_tokens=tuple(tgt_tok.token_strings(queries)), target_offsets=((0, 0),) * len(queries),
            generated_tokens=tuple(tgt_tok.token_strings(ids[1:])),
            prediction=Prediction("text", tgt_tok.decode(ids), finished=finished),
        ))
    return results


def _classifier(ckpt: Checkpoint, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    cfg = ckpt.config
    src, tokens, offsets = _source_batch(ckpt, inputs, cfg.max_len)
    output = ckpt.model(src, controls=opts.controls(), return_attention=True, return_scores=opts.return_scores)
    probs = output.logits.float().softmax(-1).cpu().numpy().astype(np.float32)  # (B, C)
    names = list(ckpt.info.extra.get("labels") or [f"class {i}" for i in range(cfg.n_classes)])
    results = []
    for row, item in enumerate(inputs):
        order = np.argsort(-probs[row], kind="stable")
        results.append(_record(
            ckpt, item, opts, output, row,
            source_tokens=tuple(tokens[row]), source_offsets=tuple(offsets[row]),
            target_tokens=(), target_offsets=(), generated_tokens=(),
            prediction=Prediction("class", names[order[0]], tuple(names[i] for i in order), probs[row][order]),
        ))
    return results


def _language_model(ckpt: Checkpoint, inputs: list[TextInput], opts: ExplainOptions) -> list[Explanation]:
    cfg, tok = ckpt.config, ckpt.target_tokenizer
    room = max(cfg.max_len - 1 - min(opts.continuation, cfg.max_len - 2), 1)  # <bos> and the continuation fit
    for item in inputs:
        tokenize(item, tok, room)
    lengths = [len(item.encoding) + 1 for item in inputs]  # with <bos>
    width = max(lengths)
    ids = _padded([[BOS_ID, *item.encoding.ids] for item in inputs], width, cfg.pad_id)
    prefix = torch.tensor(ids, dtype=torch.long, device=_device(ckpt))
    generated: list[int] = []
    if opts.continuation:  # a single text (checked by explain_batch)
        gen = _generate(ckpt, None, prefix, opts, opts.continuation)
        rows_ids, output = [gen.ids[0].tolist()[:-1]], gen.output
        generated = gen.ids[0].tolist()[width:]
    else:
        rows_ids = ids
        output = ckpt.model(tgt=prefix, controls=opts.controls(), return_attention=True,
                            return_scores=opts.return_scores)
    results = []
    for row, item in enumerate(inputs):
        next_probs = output.logits[row, lengths[row] - 1].float().softmax(-1)  # after the last real token
        top = next_probs.topk(min(opts.top_n, next_probs.numel()))
        candidates = tuple(tok.token_strings(top.indices.tolist()))
        queries = rows_ids[row]
        offsets = [(0, 0), *item.encoding.offsets] + [(0, 0)] * (len(queries) - lengths[row])
        # Input rows show the model's most likely next token; the last input row and the
        # continuation rows show what was actually generated.
        predicted = output.logits[row, : lengths[row]].argmax(-1).tolist()
        produced = predicted[:-1] + generated if generated else predicted
        produced += [cfg.pad_id] * (len(queries) - len(produced))
        results.append(_record(
            ckpt, item, opts, output, row,
            source_tokens=(), source_offsets=(),
            target_tokens=tuple(tok.token_strings(queries)), target_offsets=tuple(offsets),
            generated_tokens=tuple(tok.token_strings(produced)),
            prediction=Prediction("next_token", tok.decode(generated) if generated else candidates[0],
                                  candidates, top.values.cpu().numpy().astype(np.float32)),
        ))
    return results


def _summary(explanation: Explanation) -> str:
    lines = [f"prediction: {explanation.prediction.text!r}"]
    for label, prob in zip(explanation.prediction.labels, explanation.prediction.probabilities):
        lines.append(f"  {label!r}: {prob:.3f}")
    lines.extend(f"note: {n}" for n in explanation.notes)
    for kind in explanation.kinds:
        queries, keys = explanation.axis_tokens(kind)
        maps = explanation.attention[kind]  # (L, H, Tq, Tk)
        lines.append(f"{kind} attention — each query token → the key it attends to most:")
        for layer in range(maps.shape[0]):
            for head in range(maps.shape[1]):
                best = maps[layer, head].argmax(-1)  # (Tq,)
                pairs = " ".join(f"{q}→{keys[k]}" for q, k in zip(queries, best))
                lines.append(f"  layer {layer} head {head}: {pairs}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m core explain",
                                     description="Print a model's prediction and each head's most-attended key.")
    parser.add_argument("checkpoint", help="a .safetensors checkpoint, a BERT-family folder or a .gguf file")
    parser.add_argument("text", help="the input sentence")
    parser.add_argument("--decoding", choices=DECODINGS, default="greedy",
                        help="how the decoder picks each output token (default: greedy)")
    parser.add_argument("--continuation", type=int, default=0, metavar="N",
                        help="tokens a language model adds after the text (default: 0)")
    args = parser.parse_args(argv)
    try:
        result = explain(args.checkpoint, args.text, decoding=args.decoding, continuation=args.continuation)
    except (CheckpointError, ValueError) as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    sys.stdout.write(_summary(result) + "\n")
    return 0

