"""The caches of "Lesson: how it learns": which model it steps, its first training pairs and one training step,
each run once per model version and arguments through the app's gate (:func:`app.resources.cached`)."""

from __future__ import annotations

from app import resources
from app.services import catalog
from core import get_task, lessons, TASKS


def learning_entry(current: catalog.Entry | None) -> catalog.Entry:
    """The model "How it learns" steps: the sidebar's own translation-like checkpoint (shipped or a run of this
    server, never an upload or a models folder's: its weights are changed in this process), else the shipped
    translation model."""
    if (current is not None and not current.untrusted and not current.pretrained
            and current.task in TASKS and get_task(current.task).architecture == "encoder-decoder"):
        return current
    return resources.entry(catalog.DEFAULT_KEY)


def training_pairs(e: catalog.Entry) -> list[tuple[str, str]]:
    """Cached :func:`core.lessons.training_pairs`: the first pairs of the training split ``e`` was trained on."""
    return resources.cached(("training-pairs", str(e.path), catalog.version(e)), lambda: lessons.training_pairs(resources.checkpoint(e)),
                  "Reading the training data…", 1.0)


def learning_step(e: catalog.Entry, step: int, seed: int) -> lessons.LearningStep:
    """Cached :func:`core.lessons.learning_step` of ``e`` on its first training pairs at optimizer step ``step``."""
    pairs = training_pairs(e)
    return resources.cached(("learning-step", str(e.path), catalog.version(e), step, seed),
                  lambda: lessons.learning_step(resources.checkpoint(e), pairs, step=step, seed=seed),
                  "Taking one training step…", 1.0)
