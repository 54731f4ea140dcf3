"""Dates task: a date written in one of many styles -> ISO ``YYYY-MM-DD``.

Numeric forms are day-first (European: ``05/03/2021`` is 5 March 2021). Dates run
from 1900 to 2099, uniformly by day (so every decade is equally common). Two-digit
years 50-99 mean 1950-1999 and 00-49 mean 2000-2049, so the two-digit forms are only
drawn for dates in 1950-2049; every other form covers the whole range. Month and
weekday names come from the tables below, never from the locale. The test split holds
200 held-out dates from each of the 20 decades (:func:`decade` names the bucket).
"""

from __future__ import annotations

import calendar
import datetime
import random
import re
from collections.abc import Callable

from core.tasks.base import Example, Task, TaskData, disjoint_split

FIRST_DAY = datetime.date(1900, 1, 1)
LAST_DAY = datetime.date(2099, 12, 31)
# Two-digit years are read 50-99 -> 19xx, 00-49 -> 20xx: only dates in this window use them.
TWO_DIGIT_YEARS = range(1950, 2050)
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


TWO_DIGIT_FORMS = frozenset(name for name in FORMS if name.endswith("yy") and not name.endswith("yyyy"))


def forms_for(day: datetime.date) -> list[str]:
    """The names of the forms that write ``day`` unambiguously (two-digit years only in 1950-2049)."""
    return [name for name in FORMS if day.year in TWO_DIGIT_YEARS or name not in TWO_DIGIT_FORMS]


def decade(example: Example) -> str:
    """The decade of an example's (ISO) target, e.g. ``"1930s"``: the bucket the tests report by."""
    return f"{example.target[:3]}0s"


def _make(rng: random.Random, n: int) -> list[Example]:
    examples = []
    for _ in range(n):
        day = random_date(rng)
        examples.append(Example(FORMS[rng.choice(forms_for(day))](day), day.isoformat()))
    return examples


DECADES = tuple(f"{year}s" for year in range(FIRST_DAY.year, LAST_DAY.year + 1, 10))


def _split(rng: random.Random, sizes: tuple[int, int, int]) -> TaskData:
    """Train and validation as usual; the test split holds the same number of dates from every decade."""
    n_train, n_val, n_test = sizes
    data = disjoint_split(_make, rng, (n_train, n_val, 0))
    used = {e.source for e in (*data.train, *data.validation)}
    per_decade = -(-n_test // len(DECADES))
    pools: dict[str, list[Example]] = {name: [] for name in DECADES}
    while any(len(pool) < per_decade for pool in pools.values()):
        (example,) = _make(rng, 1)
        pool = pools[decade(example)]
        if example.source not in used and len(pool) < per_decade:
            used.add(example.source)
            pool.append(example)
    test = [e for pool in pools.values() for e in pool][: n_test]
    return TaskData(train=data.train, validation=data.validation, test=test)


_WORD = re.compile(r"[a-z]+|\d+")


def read_date(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) as written in any of the task's forms (numeric dates day first, two-digit years
    read 50-99 -> 19xx, 00-49 -> 20xx), unchecked; None when ``text`` does not read as a date."""
    words = _WORD.findall(text.lower())
    numbers = [w for w in words if w.isdigit()]
    months = [i + 1 for w in words if not w.isdigit() and len(w) >= 3
              for i, name in enumerate(MONTHS) if name.lower().startswith(w)]
    if months and len(numbers) == 2:
        (day, year), month = numbers, str(months[0])
    elif not months and len(numbers) == 3:
        day, month, year = numbers[::-1] if len(numbers[0]) == 4 else numbers
    else:
        return None
    if len(year) == 2:
        year = str(int(year) + (1900 if int(year) >= 50 else 2000))
    return int(year), int(month), int(day)


def out_of_range(text: str) -> str | None:
    """Why ``text`` is not a date the model was trained on (a real day of 1900-2099 in one of the task's
    forms), or None: ``out_of_range("2/29/2000")`` -> ``"There is no month 29: …"``."""
    read = read_date(text)
    if read is None:
        return ("The model was trained on dates written like 5 March 2021 or 05/03/2021; this does not read as "
                "one, so expect nonsense.")
    year, month, day = read
    if not 1 <= month <= 12:
        return (f"There is no month {month}: numeric dates are read day first (05/03/2021 is 5 March 2021), "
                "so expect a wrong answer.")
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        return (f"The model was trained on years {FIRST_DAY.year}-{LAST_DAY.year}; {year} is outside them, so "
                "expect a wrong answer.")
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        return f"{MONTHS[month - 1]} {year} has no day {day}, so expect a wrong answer."
    return None


TASK = Task(
    name="dates",
    description=(
        "Rewrite a date given in many styles as ISO YYYY-MM-DD (numeric dates are day-first, "
        "European style; years 1900-2099; two-digit years 50-99 are 19xx and 00-49 are 20xx)."
    ),
    architecture="encoder-decoder",
    tokenizer_kind="char",
    metric="exact_match",
    examples=(
        "5 March 2021",
        "March 5, 2021",
        "05/03/2021",
        "3rd of July 1987",
        "Tuesday, 14 July 1925",
        "31/12/2099",
    ),
    probe="Friday, 5 March 2021",
    probe_target="2021-03-05",
    make=_make,
    default_sizes=(30000, 1000, 4000),
    split=_split,
    out_of_range=out_of_range,
)
