"""`RunRecord`: the typed view of what a checkpoint records about its run (its ``extra`` metadata).

Readers use these properties instead of the JSON dict: a value of the wrong type reads as absent, so a
hand-edited or foreign checkpoint can never break a page. Each property reads only what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _typed(value: Any, kind: type | tuple[type, ...], default: Any) -> Any:
    """``value`` when it is of ``kind`` (a bool is not an int here), else ``default``."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class RunRecord:
    """What a run recorded, read from a checkpoint's ``extra`` metadata."""

    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> tuple[str, ...]:
        """A classifier's class names, in id order (empty when not recorded)."""
        return tuple(str(label) for label in _typed(self.extra.get("labels"), list, []))

    @property
    def best_step(self) -> int | None:
        """The step whose weights the checkpoint holds, when the trainer kept the best."""
        return _typed(self.extra.get("best_step"), int, None)

    @property
    def train(self) -> dict[str, Any]:
        """Every training setting (seed, sizes, schedule, command, …) as recorded."""
        return _typed(self.extra.get("train"), dict, {})

    @property
    def command(self) -> str | None:
        """The command that trained it."""
        return _typed(self.train.get("command"), str, None)

    @property
    def seed(self) -> int:
        """The data seed the run used (0 when not recorded)."""
        return _typed(self.train.get("seed"), int, 0)

    @property
    def sizes(self) -> tuple[int, ...] | None:
        """The split sizes the run generated, when recorded."""
        sizes = self.train.get("sizes")
        return tuple(sizes) if isinstance(sizes, list) and all(_typed(s, int, None) is not None for s in sizes) \
            else None

    @property
    def history(self) -> tuple[dict[str, Any], ...]:
        """The validation records, each with an int ``step``, a number ``loss`` and ``validation`` metrics."""
        history = _typed(self.extra.get("history"), list, [])
        return tuple(r for r in history if isinstance(r, dict) and _typed(r.get("step"), int, None) is not None
                     and isinstance(r.get("loss"), (int, float)) and isinstance(r.get("validation"), dict))

    @property
    def imported_from(self) -> dict[str, Any] | None:
        """For an imported model, where it came from (format, file, keys)."""
        return _typed(self.extra.get("imported_from"), dict, None)
