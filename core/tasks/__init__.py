"""The built-in classroom tasks, by name.

``TASKS`` lists them in the order the app offers them; ``get_task`` looks one up.
"""

from __future__ import annotations

from core.tasks import addition, copy, dates, lm, reverse, sentiment, sort, translation
from core.tasks.base import Example, Task, TaskData

TASKS: dict[str, Task] = {
    module.TASK.name: module.TASK
    for module in (copy, reverse, sort, dates, addition, translation, sentiment, lm)
}

__all__ = ["TASKS", "Example", "Task", "TaskData", "get_task"]


def get_task(name: str) -> Task:
    """The built-in task called ``name``.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of: {', '.join(TASKS)}") from None
