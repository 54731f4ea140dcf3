"""Dates task: a date written in one of many styles -> ISO ``YYYY-MM-DD``.

Numeric forms are day-first (European: ``05/03/2021`` is 5 March 2021). Two-digit
years 50-99 mean 1950-1999 and 00-49 mean 2000-2049. Month and weekday names come
from the tables below, never from the locale.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable

from core.tasks.base import Example, Task

FIRST_DAY = datetime.date(1950, 1, 1)
LAST_DAY = datetime.date(2049, 12, 31)
MONTHS = tuple(
    "January February March April May June July August September October November December".split()
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def ordinal(day: int) -> str:
    """``1`` -> ``"1st"``, ``2`` -> ``"2nd"``, ``11`` -> ``"11th"``, ``23`` -> ``"23rd"``."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _month(d: datetime.date) -> str:
    return MONTHS[d.month - 1]


def _weekday(d: datetime.date) -> str:
    return WEEKDAYS[d.weekday()]


def _yy(d: datetime.date) -> str:
    return f"{d.year % 100:02d}"


FORMS: dict[str, Callable[[datetime.date], str]] = {
    "day month year": lambda d: f"{d.day} {_month(d)} {d.year}",
    "month day, year": lambda d: f"{_month(d)} {d.day}, {d.year}",
    "mon day, yy": lambda d: f"{_month(d)[:3]} {d.day}, {_yy(d)}",
    "dd/mm/yyyy": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}",
    "d.m.yyyy": lambda d: f"{d.day}.{d.month}.{d.year}",
    "d.m.yy": lambda d: f"{d.day}.{d.month}.{_yy(d)}",
    "yyyy/mm/dd": lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    "weekday, day month year": lambda d: f"{_weekday(d)}, {d.day} {_month(d)} {d.year}",
    "ordinal of month year": lambda d: f"{ordinal(d.day)} of {_month(d)} {d.year}",
    "dd-mon-yyyy": lambda d: f"{d.day:02d}-{_month(d)[:3]}-{d.year}",
    "lowercase day month year": lambda d: f"{d.day} {_month(d)} {d.year}".lower(),
    "lowercase month day, year": lambda d: f"{_month(d)} {d.day}, {d.year}".lower(),
    "lowercase wkd day mon year": lambda d: f"{_weekday(d)[:3]} {d.day} {_month(d)[:3]} {d.year}".lower(),
}


def random_date(rng: random.Random) -> datetime.date:
    """A uniformly random day between ``FIRST_DAY`` and ``LAST_DAY`` inclusive."""
    return datetime.date.fromordinal(rng.randint(FIRST_DAY.toordinal(), LAST_DAY.toordinal()))


def _make(rng: random.Random, n: int) -> list[Example]:
    forms = list(FORMS.values())
    examples = []
    for _ in range(n):
        day = random_date(rng)
        examples.append(Example(rng.choice(forms)(day), day.isoformat()))
    return examples


TASK = Task(
    name="dates",
    description=(
        "Rewrite a date given in many styles as ISO YYYY-MM-DD (numeric dates are day-first, "
        "European style; two-digit years 50-99 are 19xx and 00-49 are 20xx)."
    ),
    architecture="encoder-decoder",
    tokenizer_kind="char",
    metric="exact_match",
    examples=(
        "5 March 2021",
        "March 5, 2021",
        "05/03/2021",
        "Friday, 5 March 2021",
        "3rd of July 1987",
        "sat 1 jan 2000",
    ),
    probe="Friday, 5 March 2021",
    probe_target="2021-03-05",
    make=_make,
    default_sizes=(20000, 1000, 1000),
)
