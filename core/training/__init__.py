"""Training: the config and CLI (``config``), one model-agnostic step (``step``), batching (``data``),
the run around it (``run``, ``trainer``), objectives, snapshots, evaluation and resume state.

The app and ``bench/`` use it as ``from core import training``: ``training.train(config)``,
``training.TrainConfig``, the resume-state and run-checkpoint paths, the snapshot timeline, and the
objectives the Learn pages draw (``noam_lr``, ``smoothed_loss``, ``make_optimizer``).
"""

from core.training.config import TrainConfig
from core.training.objectives import noam_lr, smoothed_loss
from core.training.setup import PRESETS
from core.training.snapshots import (snapshot_timeline, SnapshotTimeline, timeline_parts, TimelineParts,
                                     training_history)
from core.training.state import resume_state_path, run_checkpoint_path, run_checkpoints
from core.training.step import make_optimizer
from core.training.trainer import StepInfo, train, TrainResult

__all__ = ["make_optimizer", "noam_lr", "PRESETS", "resume_state_path", "run_checkpoint_path", "run_checkpoints",
           "smoothed_loss", "snapshot_timeline", "SnapshotTimeline", "StepInfo", "timeline_parts", "TimelineParts",
           "train", "TrainConfig", "training_history", "TrainResult"]
