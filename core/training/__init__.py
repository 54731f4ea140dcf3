"""Training: the trainer, data batching, objectives, snapshots, evaluation and resume state."""
