"""The built-in classroom tasks, by name.

``TASKS`` lists them in the order the app offers them; ``get_task`` looks one up.
"""

from __future__ import annotations

from core.tasks import addition, copy, dates, everyday_plus, lm, reverse, sentiment, sort, translation
from core.tasks.base import Example, Task, TaskData

TASKS: dict[str, Task] = {
    module.TASK.name: module.TASK
    for module in (copy, reverse, sort, dates, addition, translation, sentiment, lm)
}

#: Tasks the trainer knows that the app does not offer yet (no checkpoint of them ships): ``python -m core train
#: --task=everyday`` trains the extended translation grammar.
TRAINABLE: dict[str, Task] = {**TASKS, everyday_plus.TASK.name: everyday_plus.TASK}

__all__ = ["TASKS", "TRAINABLE", "Example", "Task", "TaskData", "get_task", "out_of_range"]


def get_task(name: str) -> Task:
    """The built-in task called ``name``.

    Raises:
        ValueError: for an unknown name; the message lists the valid ones.
    """
    try:
        return TRAINABLE[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of: {', '.join(TRAINABLE)}") from None


def out_of_range(task: str | None, text: str) -> str | None:
    """Why ``text`` lies outside the inputs built-in task ``task`` was trained on (its own definition of
    its domain: ``Task.out_of_range``), or None when it lies inside, the task defines none or is unknown."""
    known = TASKS.get(task) if isinstance(task, str) else None
    if known is None or known.out_of_range is None:
        return None
    return known.out_of_range(text)
