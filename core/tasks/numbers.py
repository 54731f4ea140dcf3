"""Numbers in the translation grammar: number words beyond twenty and numbers typed as digits.

Spanish number words follow the Real Academia Española, *Ortografía de la lengua española* (2010),
§ 6.2.2.1: 16-29 are written as one word ("dieciséis", "veintidós", "veintitrés"), 31-99 as three
("treinta y cinco"); "ciento" is "cien" before a noun. Numbers ending in "one" (21, 31...) are left
out: before a noun they agree in gender ("veintiún gatos", "veintiuna casas"). A number typed in
digits is copied through ("i have 3 cats" -> "yo tengo 3 gatos"): the translation tokenizer spells
digit strings digit by digit (:mod:`core.text.spelling`), so any number of one to four digits works.
"""

from __future__ import annotations

import random

_UNITS = {"two": "dos", "three": "tres", "four": "cuatro", "five": "cinco", "six": "seis", "seven": "siete",
          "eight": "ocho", "nine": "nueve"}
_TWENTY_ONE_WORD = {"two": "veintidós", "three": "veintitrés", "four": "veinticuatro", "five": "veinticinco",
                    "six": "veintiséis", "seven": "veintisiete", "eight": "veintiocho", "nine": "veintinueve"}
TENS = {"thirty": "treinta", "forty": "cuarenta", "fifty": "cincuenta", "sixty": "sesenta", "seventy": "setenta",
        "eighty": "ochenta", "ninety": "noventa"}


def _big_numbers() -> dict[str, str]:
    """English -> Spanish for 22-99 (not ending in one; "twenty two" and "twenty-two") and 100."""
    out = {**TENS, "a hundred": "cien", "one hundred": "cien"}
    for unit, es in _UNITS.items():
        for sep in (" ", "-"):
            out[f"twenty{sep}{unit}"] = _TWENTY_ONE_WORD[unit]
            out.update({f"{ten}{sep}{unit}": f"{ten_es} y {es}" for ten, ten_es in TENS.items()})
    return out


BIG_NUMBERS = _big_numbers()


def digits(rng: random.Random, plural: bool = True) -> str:
    """A number in digits for a plural noun (2-9999: half of them below 20) or "1" for a singular one."""
    if not plural:
        return "1"
    roll = rng.random()
    top = 19 if roll < 0.5 else 99 if roll < 0.75 else 999 if roll < 0.9 else 9999
    return str(rng.randint(2, top))


def is_digits(word: str) -> bool:
    """Whether a word is a number typed in digits (ASCII only: "3", "2024")."""
    return word.isascii() and word.isdigit()
