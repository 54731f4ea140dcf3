"""``python -m core evaluate CHECKPOINT …``: re-measure checkpoints on their task's held-out test split."""

from __future__ import annotations

import argparse
import sys

from core.io.checkpoint import CheckpointError, load
from core.tasks import get_task
from core.training.evaluation import evaluate, unigram_perplexity
from core.training.state import is_resume_state


def main(argv: list[str] | None = None) -> int:
    """Print each checkpoint's test metrics, regenerated from its task and seed."""
    parser = argparse.ArgumentParser(prog="python -m core evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", metavar="CHECKPOINT",
                        help="Attnscope checkpoints (.safetensors) trained on a built-in task; resume states are skipped")
    args = parser.parse_args(argv)
    status = 0
    sys.stdout.write(f"{'checkpoint':<28} {'split':<10} metrics\n")
    for path in args.checkpoints:
        if is_resume_state(path):
            continue  # a run's resume state, not a model to report
        try:
            ckpt = load(path)
        except CheckpointError as error:
            sys.stderr.write(f"error: {error}\n")
            status = 2
            continue
        if ckpt.info.task is None:
            sys.stderr.write(f"error: {path} records no task\n")
            status = 2
            continue
        task = get_task(ckpt.info.task)
        data = task.generate(ckpt.info.run.seed, ckpt.info.run.sizes)
        splits = {"test": data.test, **data.extra_tests}
        for split, examples in splits.items():
            metrics = evaluate(ckpt.model, ckpt.info.tokenizers, task, examples)
            if task.metric == "perplexity":
                metrics["unigram_perplexity"] = unigram_perplexity(ckpt.target_tokenizer, data.train, examples)
            shown = "  ".join(f"{k}={v:.4f}" for k, v in metrics.items())
            sys.stdout.write(f"{ckpt.info.path.name:<28} {split:<10} {shown}\n")
    return status

