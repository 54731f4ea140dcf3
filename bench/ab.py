"""Before/after timing of two checkouts in ONE run: ``python -m bench.ab BEFORE AFTER WORKLOAD …``.

Each checkout gets its own worker process (one thread) (importing its own ``core``); the parent asks them in
alternation to run the workload once and report the milliseconds, so load on a shared machine
hits both alike. Prints the two medians and after ÷ before.

Workloads: ``explain:NAME`` (a shipped checkpoint, 32 tokens, 1 thread, as ``python -m bench``),
``pretrained:NAME`` (an installed pretrained model by name, e.g. ``pretrained:all-MiniLM-L6-v2``, a
32-word sentence, 1 thread),
``forward:D:maps|plain`` (2+2 layers, 8×64 tokens), ``long:T`` (the 6-layer d512
decoder on T tokens with every map), ``longplain:T`` (the same without maps).
Example: ``python -m bench.ab /work/main . explain:reverse forward:64:maps long:512``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


THREADS = 1  # on a shared, loaded machine one thread per worker times far more steadily than two


def _workload(spec: str):
    """A no-argument callable running ``spec`` once, built from the current checkout's ``core``."""
    import torch
    from core import ModelConfig, Transformer, explain, load_checkpoint

    kind, _, arg = spec.partition(":")
    if kind == "explain":
        torch.set_num_threads(1)
        from bench.inference import _text_of as text_of  # each checkout's own copy
        ckpt = load_checkpoint(Path("assets/checkpoints") / f"{arg}.safetensors")
        text = text_of(ckpt.source_tokenizer or ckpt.target_tokenizer,
                       32 - (1 if ckpt.config.architecture == "decoder" else 0))
        return lambda: explain(ckpt, text)
    if kind == "pretrained":
        torch.set_num_threads(1)
        from core import load_pretrained, pretrained_models
        model = load_pretrained(next(e.path for e in pretrained_models() if e.name == arg))
        return lambda: explain(model, " ".join(["the animal did not cross the street"] * 4 + ["because"] * 4))
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    if kind == "forward":
        d, _, mode = arg.partition(":")
        config = ModelConfig(architecture="encoder-decoder", src_vocab_size=1000, tgt_vocab_size=1000,
                             n_encoder_layers=2, n_decoder_layers=2, d_model=int(d), n_heads=max(4, int(d) // 64),
                             d_ff=4 * int(d), dropout=0.0, max_len=512)
        model, src, tgt = Transformer(config).eval(), torch.randint(4, 1000, (8, 64)), torch.randint(4, 1000, (8, 64))
        return _inference(lambda: model(src, tgt, return_attention=mode == "maps"))
    config = ModelConfig(architecture="decoder", tgt_vocab_size=1000, n_decoder_layers=6, d_model=512, n_heads=8,
                         d_ff=2048, dropout=0.0, max_len=int(arg))
    model, tgt = Transformer(config).eval(), torch.randint(4, 1000, (1, int(arg)))
    return _inference(lambda: model(tgt=tgt, return_attention=kind == "long"))


def _inference(fn):
    import torch

    def run():
        with torch.inference_mode():
            fn()
    return run


def _worker(spec: str) -> None:
    sys.path.insert(0, str(Path.cwd()))  # this checkout's core and bench
    fn = _workload(spec)
    fn()
    for _ in sys.stdin:
        start = time.perf_counter()
        fn()
        sys.stdout.write(f"{(time.perf_counter() - start) * 1000}\n")
        sys.stdout.flush()


def compare(before: Path, after: Path, spec: str, repeats: int) -> tuple[float, float]:
    """Medians (before, after) in ms, the two workers asked in alternation."""
    workers = [subprocess.Popen([sys.executable, __file__, "--worker", spec], cwd=tree, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE) for tree in (before, after)]
    samples: list[list[float]] = [[], []]
    for _ in range(repeats):
        for worker, out in zip(workers, samples):
            worker.stdin.write("\n")
            worker.stdin.flush()
            out.append(float(worker.stdout.readline()))
    for worker in workers:
        worker.stdin.close()
        worker.wait()
    return statistics.median(samples[0]), statistics.median(samples[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("trees", nargs="*", help="BEFORE AFTER WORKLOAD …")
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker)
        return 0
    before, after, *specs = args.trees
    sys.stdout.write("| workload | before (ms) | after (ms) | after ÷ before |\n|---|---:|---:|---:|\n")
    for spec in specs:
        b, a = compare(Path(before).resolve(), Path(after).resolve(), spec, args.repeats)
        sys.stdout.write(f"| {spec} | {b:.2f} | {a:.2f} | {a / b:.2f}× |\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
