"""`explain(checkpoint, text, **options) -> Explanation`: the one call the app makes.

Tokenize, run the model (decoding when it generates) and return pure data. Also a
small CLI: ``python -m core.explain CHECKPOINT "text"`` prints the prediction and the
most-attended key of every head.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import asdict, dataclass, field, fields

import numpy as np
import torch

from core import decode
from core.checkpoint import Checkpoint, CheckpointError, load
from core.data import source_encoding, truncate
from core.model import AttentionControls, ModelOutput
from core.records import Explanation, Prediction
from core.tokenizer import BOS_ID, EOS_ID, SPECIAL_TOKENS, UNK_ID, Encoding

MAX_TEXT_CHARS = 20_000
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


def explain(checkpoint: Checkpoint | str | os.PathLike, text: str, **options) -> Explanation:
    """Run the checkpoint's model on ``text`` and return everything the app shows.

    Args:
        checkpoint: a loaded :class:`Checkpoint` or a path to one.
        text: the user's input.
        **options: see :class:`ExplainOptions`.

    Raises:
        ValueError: empty or whitespace-only text, invalid text (lone surrogates) or options.
        CheckpointError: when ``checkpoint`` is a path that cannot be loaded.
    """
    known = {f.name for f in fields(ExplainOptions)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s): {', '.join(unknown)}; expected {', '.join(sorted(known))}")
    opts = ExplainOptions(**options)
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load(checkpoint)
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("Type some text: the input is empty.")
    notes: list[str] = []
    work = text
    if len(text) > MAX_TEXT_CHARS:
        work = text[:MAX_TEXT_CHARS]
        notes.append(f"Only the first {MAX_TEXT_CHARS:,} of {len(text):,} characters were read.")
    with torch.inference_mode():
        build = {"encoder-decoder": _seq2seq, "encoder": _classifier, "decoder": _language_model}
        return build[ckpt.config.architecture](ckpt, text, work, opts, notes)


def _note_input(encoding: Encoding, cut: bool, limit: int, notes: list[str]) -> None:
    if not encoding.ids:
        raise ValueError("The text has no recognisable tokens.")
    if cut:
        notes.append(f"The input was truncated to the model's limit of {limit} tokens.")
    unknown = encoding.ids.count(UNK_ID)
    if unknown:
        notes.append(f"{unknown} token(s) unknown to the model are shown as {SPECIAL_TOKENS[UNK_ID]}.")


def _maps(output: ModelOutput, kinds: tuple[str, ...], which: str) -> dict[str, np.ndarray] | None:
    maps = getattr(output, which)
    if maps is None:
        return None
    return {k: maps[k][:, 0].float().cpu().numpy().astype(np.float32) for k in kinds}  # (L, H, Tq, Tk)


def _generate(ckpt: Checkpoint, src, prefix, opts: ExplainOptions, limit: int) -> decode.Generation:
    common = dict(eos_id=EOS_ID, max_new_tokens=limit, controls=opts.controls(),
                  return_scores=opts.return_scores)
    if opts.decoding == "beam":
        return decode.beam_search(ckpt.model, src, prefix, beam_size=opts.beam_size, **common)
    if opts.decoding == "sample":
        generator = torch.Generator().manual_seed(opts.seed)
        return decode.sample(ckpt.model, src, prefix, generator=generator, temperature=opts.sample_temperature,
                             top_k=opts.top_k, **common)
    return decode.greedy(ckpt.model, src, prefix, **common)


def _device(ckpt: Checkpoint) -> torch.device:
    return next(ckpt.model.parameters()).device


def _seq2seq(ckpt: Checkpoint, text: str, work: str, opts: ExplainOptions, notes: list[str]) -> Explanation:
    cfg, src_tok, tgt_tok = ckpt.config, ckpt.source_tokenizer, ckpt.target_tokenizer
    encoding, cut = source_encoding(src_tok, work, cfg.max_len)
    _note_input(encoding, cut, cfg.max_len, notes)
    device = _device(ckpt)
    src = torch.tensor([encoding.ids], dtype=torch.long, device=device)
    prefix = torch.tensor([[BOS_ID]], dtype=torch.long, device=device)
    gen = _generate(ckpt, src, prefix, opts, opts.max_new_tokens or cfg.max_len)
    ids = gen.ids[0].tolist()
    rows = ids[:-1]  # the decoder inputs; row t produced ids[t + 1]
    finished = bool(gen.finished[0])
    if not finished:
        notes.append("The output reached the length limit without an end-of-sequence token.")
    return Explanation(
        text=text, task=ckpt.info.task, architecture=cfg.architecture,
        source_tokens=tuple(encoding.tokens), source_offsets=tuple(encoding.offsets),
        target_tokens=tuple(tgt_tok.token_strings(rows)), target_offsets=((0, 0),) * len(rows),
        generated_tokens=tuple(tgt_tok.token_strings(ids[1:])),
        prediction=Prediction("text", tgt_tok.decode(ids), finished=finished),
        attention=_maps(gen.output, cfg.attention_kinds, "attention"),
        scores=_maps(gen.output, cfg.attention_kinds, "scores"),
        options=asdict(opts), notes=tuple(notes), truncated=cut,
    )


def _classifier(ckpt: Checkpoint, text: str, work: str, opts: ExplainOptions, notes: list[str]) -> Explanation:
    cfg, tok = ckpt.config, ckpt.source_tokenizer
    encoding, cut = source_encoding(tok, work, cfg.max_len)
    _note_input(encoding, cut, cfg.max_len, notes)
    src = torch.tensor([encoding.ids], dtype=torch.long, device=_device(ckpt))
    output = ckpt.model(src, controls=opts.controls(), return_attention=True, return_scores=opts.return_scores)
    probs = output.logits[0].float().softmax(-1).cpu().numpy().astype(np.float32)  # (C,)
    names = list(ckpt.info.extra.get("labels") or [f"class {i}" for i in range(cfg.n_classes)])
    order = np.argsort(-probs, kind="stable")
    return Explanation(
        text=text, task=ckpt.info.task, architecture=cfg.architecture,
        source_tokens=tuple(encoding.tokens), source_offsets=tuple(encoding.offsets),
        target_tokens=(), target_offsets=(), generated_tokens=(),
        prediction=Prediction("class", names[order[0]], tuple(names[i] for i in order), probs[order]),
        attention=_maps(output, cfg.attention_kinds, "attention"),
        scores=_maps(output, cfg.attention_kinds, "scores"),
        options=asdict(opts), notes=tuple(notes), truncated=cut,
    )


def _language_model(ckpt: Checkpoint, text: str, work: str, opts: ExplainOptions, notes: list[str]) -> Explanation:
    cfg, tok = ckpt.config, ckpt.target_tokenizer
    room = cfg.max_len - 1 - min(opts.continuation, cfg.max_len - 2)  # keep space for <bos> and the continuation
    encoding, cut = truncate(tok.encode(work), max(room, 1))
    _note_input(encoding, cut, max(room, 1), notes)
    ids = [BOS_ID, *encoding.ids]
    prefix = torch.tensor([ids], dtype=torch.long, device=_device(ckpt))
    continuation = ""
    if opts.continuation:
        gen = _generate(ckpt, None, prefix, opts, opts.continuation)
        rows, output = gen.ids[0].tolist()[:-1], gen.output
        continuation = tok.decode(gen.ids[0].tolist()[len(ids):])
    else:
        rows = ids
        output = ckpt.model(tgt=prefix, controls=opts.controls(), return_attention=True,
                            return_scores=opts.return_scores)
    next_probs = output.logits[0, len(ids) - 1].float().softmax(-1)  # after the last input token
    top = next_probs.topk(min(opts.top_n, next_probs.numel()))
    candidates = tuple(tok.token_strings(top.indices.tolist()))
    offsets = [(0, 0), *encoding.offsets] + [(0, 0)] * (len(rows) - len(ids))
    return Explanation(
        text=text, task=ckpt.info.task, architecture=cfg.architecture,
        source_tokens=(), source_offsets=(),
        target_tokens=tuple(tok.token_strings(rows)), target_offsets=tuple(offsets),
        generated_tokens=tuple(tok.token_strings(output.logits[0].argmax(-1).tolist())),
        prediction=Prediction("next_token", candidates[0] + continuation, candidates,
                              top.values.cpu().numpy().astype(np.float32)),
        attention=_maps(output, cfg.attention_kinds, "attention"),
        scores=_maps(output, cfg.attention_kinds, "scores"),
        options=asdict(opts), notes=tuple(notes), truncated=cut,
    )


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
    parser = argparse.ArgumentParser(prog="python -m core.explain", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="path to a .safetensors checkpoint")
    parser.add_argument("text", help="the input sentence")
    parser.add_argument("--decoding", choices=DECODINGS, default="greedy")
    parser.add_argument("--continuation", type=int, default=0, help="tokens a language model adds")
    args = parser.parse_args(argv)
    try:
        result = explain(args.checkpoint, args.text, decoding=args.decoding, continuation=args.continuation)
    except (CheckpointError, ValueError) as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    sys.stdout.write(_summary(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
