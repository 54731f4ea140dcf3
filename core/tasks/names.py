"""People's names in the translation grammar: copied through, never translated.

A name is read letter by letter (:mod:`core.text.spelling`; ``Task.spelled`` keeps names out of the
vocabulary), so the model learns to copy letters and copies names it has never seen: "maria has two
dogs" -> "maria tiene dos perros". Training draws half its names from ``FIRST_NAMES`` and half are
made up from syllables (``made_up_name``), so no name is frequent enough to be learnt by heart;
``HELD_OUT_NAMES`` (every tenth of the list) only ever appear in the test split.
"""

from __future__ import annotations

import random

FIRST_NAMES = tuple("""
maria jose juan ana luis carmen pedro laura carlos sofia pablo lucia miguel elena javier paula david marta
daniel sara antonio julia manuel andrea diego clara jorge alba sergio irene alejandro raquel fernando eva
alberto rosa ramon silvia victor ines adrian nuria ivan lola hugo marina oscar alicia mario rocio ruben
beatriz alvaro cristina marcos teresa nicolas patricia gabriel monica samuel natalia tomas olga andres
veronica emilio lorena felipe susana rafael pilar enrique noelia jaime isabel joaquin celia lucas helena
john mary james emma william olivia michael ava robert mia thomas emily george grace henry lily jack chloe
oliver amelia harry ella charlie ruby oscar lucy leo alice max zoe sam anna ben kate tom sophie alex holly
adam jessica peter hannah paul rachel mark megan simon laura kevin amy chris nina ryan leah luke ivy noah
liam ethan mason logan aiden elijah owen caleb dylan isaac levi nora hazel violet aurora stella maya luna
ahmed fatima omar aisha ali yusuf leila karim amir zara hassan noor ravi priya arjun anika rohan meera
kenji yuki hiro akira mei lin wei chen jin soo kofi amara kwame zola tariq sana igor olga dmitri katya
""".split())
HELD_OUT_NAMES = frozenset(FIRST_NAMES[3::10])
TRAIN_NAMES = tuple(dict.fromkeys(n for n in FIRST_NAMES if n not in HELD_OUT_NAMES))
_ONSETS = ("b", "c", "d", "f", "g", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "ch", "tr", "sh")
_VOWELS = ("a", "e", "i", "o", "u", "ia", "ai", "ei")
_CODAS = ("", "", "", "n", "l", "r", "s")


def made_up_name(rng: random.Random) -> str:
    """A name-like string of two or three syllables ("kalor", "shivane")."""
    return "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                   for _ in range(rng.choice((2, 2, 3))))


def random_name(rng: random.Random, known: frozenset[str]) -> str:
    """A training name: a first name from ``TRAIN_NAMES`` or a made-up one (never a word in ``known``)."""
    while True:
        name = rng.choice(TRAIN_NAMES) if rng.random() < 0.5 else made_up_name(rng)
        if name not in known:
            return name
