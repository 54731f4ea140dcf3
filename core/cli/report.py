"""``python -m core report CHECKPOINT …``: a checkpoint's exact match per length bucket, greedy and beam.

For a translation checkpoint also: the grammar's size, how many of English's 300 commonest words (``wordfreq``) its
vocabulary knows, and the "not translated?" flag's precision and recall on held-out sentences."""

from __future__ import annotations

import argparse
import sys

from core.cli.coverage import flag_line
from core.cli.frequent import frequent_english, known
from core.inspect import coverage_check
from core.inspect.coverage import COVERAGE_THRESHOLD
from core.io.checkpoint import Checkpoint, load
from core.tasks import letters
from core.tasks import everyday_plus
from core.tasks.wordlist import english_word_count
from core.text.inputs import input_vocabulary
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
        if task.name == "translation":
            sys.stdout.write("".join(f"  {line}\n" for line in translation_lines(ckpt)))
    return 0


def translation_lines(ckpt: Checkpoint, top: int = 300) -> list[str]:
    """The grammar's size, the vocabulary's share of English's ``top`` commonest words, and the coverage flag's
    precision and recall (:func:`core.inspect.coverage_check.measure`)."""
    share = known(frequent_english(top), set(input_vocabulary(ckpt.source_tokenizer)))
    missing = ", ".join(share.missing[:30]) + (", …" if len(share.missing) > 30 else "")
    everyday = known(frequent_english(top), everyday_plus.ENGLISH)
    return [f"grammar: {english_word_count():,} English words",
            f"vocabulary: knows {share.share:.1%} of English's {top} commonest words (wordfreq); missing: {missing}",
            flag_line(coverage_check.measure(ckpt, COVERAGE_THRESHOLD)),
            f"the everyday grammar (python -m core train --task=everyday; no checkpoint of it ships): "
            f"{everyday_plus.english_word_count():,} English words, {everyday.share:.1%} of the top {top}"]
