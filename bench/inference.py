"""Inference speed and memory: ``explain`` on the shipped checkpoints, the forward pass with and
without maps against PyTorch's own ``nn.Transformer`` carrying the same weights, and a long input.

Run: ``python -m bench inference`` (part of ``python -m bench``). Each row names its goal, the
figure measured, the baseline measured in the same run and their ratio.
"""

from __future__ import annotations

import multiprocessing
import resource
from pathlib import Path

import torch
from torch import nn

from core import AttentionControls, Transformer, explain, load_checkpoint
from core.io.convert import config_for_nn_transformer, from_nn_transformer

from bench.table import Row, median_ms, paired_ms

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "assets" / "checkpoints").glob("*.safetensors"))


def explain_rows(repeats: int = 15) -> list[Row]:
    """``explain`` on each shipped checkpoint with a 32-token input (greedy decoding included), 1 thread."""
    rows = []
    torch.set_num_threads(1)
    for path in SHIPPED:
        ckpt = load_checkpoint(path)
        tokenizer = ckpt.source_tokenizer or ckpt.target_tokenizer
        text = _text_of(tokenizer, 32 - (1 if ckpt.config.architecture == "decoder" else 0))
        ms = median_ms(lambda: explain(ckpt, text), repeats)
        rows.append(Row("explain", f"{path.stem}, 32 tokens, all maps, 1 thread", "≤ 3 ms", ms, "ms",
                        ok=ms <= 3.0))
    return rows


def _text_of(tokenizer, n_tokens: int) -> str:
    """A text of about ``n_tokens`` tokens in the tokenizer's vocabulary."""
    words = [t for t in tokenizer.token_strings(range(4, tokenizer.vocab_size)) if t.strip()][:8] or ["a"]
    joiner = "" if tokenizer.kind == "char" else " "
    text, n = "", 0
    while n < n_tokens:
        text = joiner.join(filter(None, [text, words[n % len(words)]]))
        n = len(tokenizer.encode(text).ids)
    return text


def _pair(d_model: int, layers: int = 2, vocab: int = 1000, max_len: int = 512) -> tuple[Transformer, nn.Module]:
    """Our model and an ``nn.Transformer`` (plus the same embeddings and output layer) with equal weights."""
    torch.manual_seed(0)
    heads = max(4, d_model // 64)
    theirs = nn.Transformer(d_model, heads, layers, layers, 4 * d_model, dropout=0.0, batch_first=True).eval()
    config = config_for_nn_transformer(theirs, src_vocab_size=vocab, tgt_vocab_size=vocab, max_len=max_len)
    ours = from_nn_transformer(theirs, config)
    return ours, theirs


def _torch_forward(ours: Transformer, theirs: nn.Module, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The baseline: the same embeddings, positions and output layer around ``nn.Transformer``."""
    scale = ours.config.d_model ** 0.5
    x = ours.positional(ours.src_embed(src) * scale)
    y = ours.positional(ours.tgt_embed(tgt) * scale)
    causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
    return ours.lm_head(theirs(x, y, tgt_mask=causal, tgt_is_causal=True))  # (B, T, V)


def forward_rows(sizes=(64, 128, 256, 512), batch: int = 8, length: int = 64, repeats: int = 15,
                 threads: int = 1) -> list[Row]:
    """Forward with every map and without maps, against ``nn.Transformer`` of the same size and weights.

    One thread by default: on a small machine shared with other work, a second thread mostly
    measures the other users (a parallel region waits for its slowest, descheduled thread).
    """
    torch.set_num_threads(threads)
    rows = []
    for d in sizes:
        ours, theirs = _pair(d)
        src = torch.randint(4, 1000, (batch, length))
        tgt = torch.randint(4, 1000, (batch, length))
        with torch.inference_mode():
            base = lambda: _torch_forward(ours, theirs, src, tgt)  # noqa: E731
            maps_ms, base_ms = paired_ms(lambda: ours(src, tgt, return_attention=True), base, repeats)
            plain_ms, base2_ms = paired_ms(lambda: ours(src, tgt), base, repeats)
        rows.append(Row("forward", f"d{d}, 2+2 layers, {batch}×{length} tokens, every map", "≤ 1.15× nn.Transformer",
                        maps_ms, "ms", base_ms, maps_ms / base_ms <= 1.15))
        rows.append(Row("forward", f"d{d}, same, no maps", "≤ 1.05× nn.Transformer", plain_ms, "ms", base2_ms,
                        plain_ms / base2_ms <= 1.05))
    return rows


def _long_decoder(length: int, queue, repeats: int = 1) -> None:
    """Child process: a 6-layer, 8-head, d512 decoder on ``length`` tokens with every map: time, peak RSS
    and, as the same-run baseline, the same forward without maps (the fused kernel)."""
    torch.set_num_threads(2)
    from core import ModelConfig
    config = ModelConfig(architecture="decoder", tgt_vocab_size=1000, n_decoder_layers=6, d_model=512, n_heads=8,
                         d_ff=2048, dropout=0.0, max_len=length)
    model = Transformer(config).eval()
    tgt = torch.randint(4, 1000, (1, length))
    with torch.inference_mode():
        model(tgt=tgt[:, :16], return_attention=True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        model(tgt=tgt, controls=AttentionControls(), return_attention=True)
        peak_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024  # the maps pass alone
        maps_ms, plain_ms = paired_ms(lambda: model(tgt=tgt, return_attention=True), lambda: model(tgt=tgt), repeats)
    queue.put((maps_ms, plain_ms, peak_mb))


def long_input_rows() -> list[Row]:
    """The long-input rows, each in a fresh process so peak memory is its own."""
    rows = []
    context = multiprocessing.get_context("spawn")
    for length, goal_ms, repeats in ((2048, 2000.0, 1), (512, 100.0, 5)):
        queue = context.Queue()
        child = context.Process(target=_long_decoder, args=(length, queue, repeats))
        child.start()
        ms, plain_ms, mb = queue.get(timeout=600)
        child.join()
        rows.append(Row("long input", f"decoder 6 layers, 8 heads, d512, {length} tokens, every map (baseline: "
                        "no maps, fused kernel)", f"≤ {goal_ms / 1000:g} s", ms, "ms", plain_ms, ok=ms <= goal_ms))
        if length == 2048:
            rows.append(Row("long input", f"same, {length} tokens: peak memory added", "≤ 1 GB", mb, "MB",
                            ok=mb <= 1024))
    return rows


def run() -> list[Row]:
    """Every inference row."""
    return explain_rows() + forward_rows() + long_input_rows()
