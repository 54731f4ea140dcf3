"""Where the time goes for the goals this CPU cannot meet: ``python -m bench.hotspots [long|explain …]``.

``long``: the 6-layer, 8-head, d512 decoder (``bench.inference``'s long-input rows) at 512 and
2,048 tokens, 2 threads: torch.profiler's operations by self CPU time for our forward with every
map, the same forward without maps and, in the same run, a PyTorch-only stack of the same size (an
``nn.TransformerEncoder`` of six layers under the causal mask: a decoder-only Transformer is
self-attention + FFN, which is that stack), and the arithmetic floor: the GFLOP of the linear
layers and of attention ÷ the GFLOP/s ``torch.mm`` reaches on the same shapes on this CPU.

``explain``: ``explain`` on the shipped encoder-decoder checkpoints (32 tokens, 1 thread): how
many ATen calls it makes, how many per decoding step, the self CPU time per call, and the
operations that take it.

Prints Markdown; the machine is shared, so read shares and ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from core import ModelConfig, Transformer, explain, load_checkpoint

from bench.inference import _text_of

ROOT = Path(__file__).resolve().parents[1]
D, HEADS, LAYERS, FF, VOCAB = 512, 8, 6, 2048, 1000
GENERATING = ("copy", "reverse", "sort", "dates", "addition", "translation")


def _seconds(fn, repeats: int) -> float:
    """Best of ``repeats`` wall-clock runs (the least disturbed by other work on the machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _top_ops(fn, n: int = 6) -> tuple[list[tuple[str, float]], float]:
    """(the ``n`` operations with the most self CPU time and their share, the total self CPU seconds)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    return [(e.key, e.self_cpu_time_total / total) for e in events[:n]], total / 1e6


def _mm_gflops(length: int, repeats: int = 3) -> float:
    """GFLOP/s of ``torch.mm`` on the decoder's linear-layer shapes (T×D by D×3D, D×D, D×F, F×D)."""
    shapes = [(length, D, 3 * D), (length, D, D), (length, D, FF), (length, FF, D)]
    pairs = [(torch.randn(m, k), torch.randn(k, n)) for m, k, n in shapes]
    flop = sum(2 * m * k * n for m, k, n in shapes)
    return flop / _seconds(lambda: [torch.mm(a, b) for a, b in pairs], repeats) / 1e9


def _floor(length: int) -> dict[str, float]:
    """GFLOP of the forward: linear layers (and the output layer), attention (QKᵀ and AV, causal half)."""
    linear = LAYERS * length * 2 * (4 * D * D + 2 * D * FF) + length * 2 * D * VOCAB
    attention = LAYERS * 2 * 2 * length * length * D / 2  # two matmuls, the causal mask halves the cells
    return {"linear": linear / 1e9, "attention": attention / 1e9}


def long_input(length: int, repeats: int) -> str:
    """One Markdown block for the long-input goal at ``length`` tokens."""
    torch.manual_seed(0)
    config = ModelConfig(architecture="decoder", tgt_vocab_size=VOCAB, n_decoder_layers=LAYERS, d_model=D,
                         n_heads=HEADS, d_ff=FF, dropout=0.0, max_len=length)
    ours = Transformer(config).eval()
    layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
    theirs = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False).eval()
    tgt = torch.randint(4, VOCAB, (1, length))
    x = torch.randn(1, length, D)
    causal = nn.Transformer.generate_square_subsequent_mask(length)
    runs = {"ours, every map": lambda: ours(tgt=tgt, return_attention=True),
            "ours, no maps": lambda: ours(tgt=tgt),
            "nn.TransformerEncoder, causal": lambda: theirs(x, mask=causal, is_causal=True)}
    lines = [f"#### {length} tokens, {torch.get_num_threads()} threads", "",
             "| run | best of " + f"{repeats} (s) | top operations by self CPU time |", "|---|---:|---|"]
    with torch.inference_mode():
        for name, fn in runs.items():
            fn()
            seconds = _seconds(fn, repeats)
            top, _ = _top_ops(fn)
            shares = ", ".join(f"{op.removeprefix('aten::')} {share:.0%}" for op, share in top)
            lines.append(f"| {name} | {seconds:.2f} | {shares} |")
    rate, gflop = _mm_gflops(length), _floor(length)
    total = gflop["linear"] + gflop["attention"]
    lines += ["", f"Floor: linear layers {gflop['linear']:.1f} GFLOP + attention {gflop['attention']:.1f} GFLOP "
              f"= {total:.1f} GFLOP at {rate:.0f} GFLOP/s (`torch.mm`, same shapes) = **{total / rate:.2f} s**.", ""]
    return "\n".join(lines)


def _explain_calls(name: str) -> tuple[int, int, float, list[tuple[str, float]]]:
    """(top-level ATen calls of one ``explain``, decoding steps, its wall ms (best of 11), the operations
    with the most self CPU time over 5 profiled runs and their share)."""
    ckpt = load_checkpoint(ROOT / "assets" / "checkpoints" / f"{name}.safetensors")
    text = _text_of(ckpt.source_tokenizer, 32)
    result = explain(ckpt, text)
    wall_ms = _seconds(lambda: explain(ckpt, text), 11) * 1000
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        explain(ckpt, text)
    calls = sum(1 for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::"))
    top, _ = _top_ops(lambda: [explain(ckpt, text) for _ in range(5)], 4)
    return calls, len(result.target_tokens), wall_ms, top


def explain_profile() -> str:
    """One Markdown table: ATen calls per ``explain`` and per decoding step, 1 thread."""
    torch.set_num_threads(1)
    lines = ["| checkpoint | decoding steps | ms (best of 11) | ATen calls | per step | wall µs per call "
             "| top operations by self CPU |", "|---|---:|---:|---:|---:|---:|---|"]
    for name in GENERATING:
        calls, steps, wall_ms, top = _explain_calls(name)
        shares = ", ".join(f"{op.removeprefix('aten::')} {share:.0%}" for op, share in top)
        lines.append(f"| {name} | {steps} | {wall_ms:.1f} | {calls} | {calls / (steps + 2):.0f} | "
                     f"{wall_ms * 1000 / calls:.1f} | {shares} |")
    return "\n".join(lines) + "\n\n(per step: the calls ÷ (steps + 2), the encoder and the final pass counted as steps)\n"


def main(argv: list[str] | None = None) -> int:
    """CLI entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.hotspots", description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", choices=[[], "long", "explain"], help="default: both")
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    parts = args.parts or ["long", "explain"]
    if "long" in parts:
        torch.set_num_threads(args.threads)
        for length in args.lengths:
            sys.stdout.write(long_input(length, args.repeats) + "\n")
            sys.stdout.flush()
    if "explain" in parts:
        sys.stdout.write(explain_profile())
    return 0


if __name__ == "__main__":
    sys.exit(main())
