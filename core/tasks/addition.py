"""Addition task: ``"358+47"`` -> ``"405"`` with operands from 0 to 999."""

from __future__ import annotations

import random
import re

from core.tasks.base import Example, Task

MAX_DIGITS = 3
_SUM = re.compile(r"\s*(\d+)\s*\+\s*(\d+)\s*")


def random_operand(rng: random.Random) -> int:
    """A number of 1 to ``MAX_DIGITS`` digits, the digit count drawn uniformly first.

    Drawing the length first keeps short operands common (uniform over 0..999 would
    make nine in ten of them three digits long).
    """
    digits = rng.randint(1, MAX_DIGITS)
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randint(low, 10**digits - 1)


def _make(rng: random.Random, n: int) -> list[Example]:
    pairs = [(random_operand(rng), random_operand(rng)) for _ in range(n)]
    return [Example(f"{a}+{b}", str(a + b)) for a, b in pairs]


def out_of_range(text: str) -> str | None:
    """Why ``text`` is not a sum the model was trained on (two whole numbers 0–999 joined by ``+``), or None.

    ``out_of_range("1234+1")`` -> ``"1234 has more than 3 digits: …"``.
    """
    match = _SUM.fullmatch(text)
    if match is None:
        return "The model was trained on sums like 358+47 (two whole numbers joined by +); expect nonsense."
    for operand in match.groups():
        if len(operand.lstrip("0") or "0") > MAX_DIGITS:
            return (f"{operand} has more than {MAX_DIGITS} digits: the model was trained on numbers from 0 to "
                    f"{10 ** MAX_DIGITS - 1}, so expect a wrong sum.")
    return None


TASK = Task(
    name="addition",
    description="Add two numbers from 0 to 999: watch attention pair up digits of the same place value.",
    architecture="encoder-decoder",
    tokenizer_kind="char",
    metric="exact_match",
    examples=("358+47", "999+1", "12+34", "500+500", "7+8"),
    probe="358+47",
    probe_target="405",
    make=_make,
    default_sizes=(20000, 1000, 1000),
    out_of_range=out_of_range,
)
