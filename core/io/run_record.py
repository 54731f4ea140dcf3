"""`RunRecord`: the typed view of what a checkpoint records about its run (its ``extra`` metadata).

Readers use these fields instead of the JSON dict: a value of the wrong type reads as absent, so a
hand-edited or foreign checkpoint can never break a page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _typed(value: Any, kind: type | tuple[type, ...], default: Any) -> Any:
    """``value`` when it is of ``kind`` (a bool is not an int here), else ``default``."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class RunRecord:
    """What a run recorded.

    Attributes:
        labels: a classifier's class names, in id order (empty when not recorded).
        best_step: the step whose weights the checkpoint holds, when the trainer kept the best.
        train: every training setting (seed, sizes, schedule, …) as recorded.
        command: the command that trained it.
        history: the validation records, each with ``step``, ``loss`` and ``validation`` metrics.
        imported_from: for an imported model, where it came from (format, file, keys).
    """

    labels: tuple[str, ...] = ()
    best_step: int | None = None
    train: dict[str, Any] = field(default_factory=dict)
    command: str | None = None
    history: tuple[dict[str, Any], ...] = ()
    imported_from: dict[str, Any] | None = None

    @classmethod
    def of(cls, extra: dict[str, Any]) -> RunRecord:
        """The record in a checkpoint's ``extra`` metadata, wrong types read as absent."""
        labels = _typed(extra.get("labels"), list, [])
        train = _typed(extra.get("train"), dict, {})
        history = _typed(extra.get("history"), list, [])
        return cls(
            labels=tuple(str(label) for label in labels),
            best_step=_typed(extra.get("best_step"), int, None),
            train=train,
            command=_typed(train.get("command"), str, None),
            history=tuple(r for r in history if isinstance(r, dict) and isinstance(r.get("step"), int)
                          and isinstance(r.get("loss"), (int, float)) and isinstance(r.get("validation"), dict)),
            imported_from=_typed(extra.get("imported_from"), dict, None),
        )

    @property
    def seed(self) -> int:
        """The data seed the run used (0 when not recorded)."""
        return _typed(self.train.get("seed"), int, 0)

    @property
    def sizes(self) -> tuple[int, ...] | None:
        """The split sizes the run generated, when recorded."""
        sizes = self.train.get("sizes")
        return tuple(sizes) if isinstance(sizes, list) and all(isinstance(s, int) for s in sizes) else None
