"""``python -m core coverage CHECKPOINT``: set and score the "not translated?" flag on held-out sentences.

The threshold is chosen on one seed's held-out sentences and scored on another's (:mod:`core.inspect.
coverage_check`); the shipped value is :data:`core.inspect.coverage.COVERAGE_THRESHOLD`.
"""

from __future__ import annotations

import argparse
import sys

from core.inspect import coverage_check
from core.inspect.coverage import COVERAGE_THRESHOLD
from core.io.checkpoint import CheckpointError, load


def main(argv: list[str] | None = None) -> int:
    """``python -m core coverage CHECKPOINT [--n N]``; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m core coverage", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", help="an encoder-decoder translation checkpoint")
    parser.add_argument("--n", type=int, default=150, help="held-out sentences per seed (default: 150)")
    parser.add_argument("--calibrate_seed", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2, help="the seed whose sentences are scored (default: 2)")
    args = parser.parse_args(argv)
    try:
        ckpt = load(args.checkpoint)
    except CheckpointError as error:
        sys.stderr.write(f"error: {error}\n")
        return 2
    if ckpt.info.task != "translation":
        sys.stderr.write("error: the coverage check needs a translation checkpoint\n")
        return 2
    calibration = coverage_check.label(ckpt, coverage_check.cases(args.calibrate_seed, args.n))
    chosen = coverage_check.choose_threshold(calibration)
    sys.stdout.write(f"threshold chosen on seed {args.calibrate_seed}: {chosen:.2f} "
                     f"(shipped: {COVERAGE_THRESHOLD:.2f})\n")
    result = coverage_check.score(coverage_check.label(ckpt, coverage_check.cases(args.seed, args.n)),
                                  COVERAGE_THRESHOLD)
    sys.stdout.write(flag_line(result) + "\n")
    return 0


def flag_line(result: coverage_check.FlagScore) -> str:
    """One line: the flag's precision and recall and what they were measured on."""
    return (f"coverage flag < {result.threshold:.2f}: precision {result.precision:.1%}, recall {result.recall:.1%} "
            f"({result.missing_words} missing of {result.words} words in {result.sentences} held-out sentences; "
            f"{result.left_out} left out, output neither expected)")
