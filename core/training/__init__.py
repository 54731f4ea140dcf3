"""Training: the config and CLI (``config``), one model-agnostic step (``step``), batching (``data``),
the run around it (``run``, ``trainer``), objectives, snapshots, evaluation and resume state."""
