"""``python -m core report CHECKPOINT …``: a checkpoint's exact match per length bucket, greedy and beam."""

from __future__ import annotations

import argparse
import sys

from core.io.checkpoint import load
from core.tasks import letters
from core.training.report import exact_match_by_bucket, sample, task_data


def main(argv: list[str] | None = None) -> int:
    """``python -m core report CHECKPOINT …``: exact match per length bucket; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m core report", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--limit", type=int, default=None, help="examples per checkpoint (default: all)")
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--no_beam", action="store_true")
    args = parser.parse_args(argv)
    for path in args.checkpoints:
        if path.endswith(".train-state.safetensors"):
            continue
        ckpt = load(path)
        task, data = task_data(ckpt)
        if task.architecture != "encoder-decoder":
            continue
        # letter tasks: the test split (trained lengths) and longer strings (up to twice as long)
        longer = letters.longer_examples(task) if task.name in ("copy", "reverse", "sort") else []
        examples = sample([*data.test, *longer], args.limit)
        rows = {"greedy": exact_match_by_bucket(ckpt, examples)}
        if not args.no_beam:
            rows[f"beam{args.beam_size}"] = exact_match_by_bucket(ckpt, examples, decoding="beam",
                                                                  beam_size=args.beam_size)
        sys.stdout.write(f"{task.name} ({len(examples)} held-out test examples)\n")
        for key in rows["greedy"]:
            cells = "  ".join(f"{name} {rows[name][key][0] / rows[name][key][1]:7.2%} "
                              f"({rows[name][key][0]}/{rows[name][key][1]})" for name in rows)
            sys.stdout.write(f"  {key:>8}: {cells}\n")
    return 0
