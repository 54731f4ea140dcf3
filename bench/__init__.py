"""Attnscope's benchmarks: ``python -m bench`` prints every goal with its figure and same-run baseline."""
