"""People's names in the translation grammar: copied through, never translated.

A name is read letter by letter (:mod:`core.text.spelling`; ``Task.spelled`` keeps names out of the
vocabulary), so the model learns to copy letters and copies names it has never seen: "maria has two
dogs" -> "maria tiene dos perros". Training draws a quarter of its names from ``FIRST_NAMES``, the rest
are made up from syllables (``made_up_name``) or random letters, so no name is frequent enough to be learnt
by heart;
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
_DOUBLED = ("ll", "mm", "nn", "ss", "tt", "rr", "bb", "dd", "ff", "pp", "zz", "cc")
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_CONSONANTS = "bcdfghjklmnpqrstvwxyz"


def made_up_name(rng: random.Random) -> str:
    """A name-like string of one to four syllables ("kalor", "emmaro", "ottilan"): one in three starts with a
    vowel and one in four doubles a consonant, as "anna", "emma" and "otto" do, so that copying them is learnt
    letter by letter and not by heart."""
    syllables = [rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                 for _ in range(rng.choice((1, 2, 2, 2, 3, 3, 3, 4)))]
    if rng.random() < 1 / 3:
        syllables[0] = syllables[0].lstrip(_CONSONANTS)
    if len(syllables) > 1 and rng.random() < 0.25:
        k = rng.randrange(1, len(syllables))
        syllables[k - 1] = syllables[k - 1].rstrip(_CONSONANTS) or rng.choice(_VOWELS)
        syllables[k] = rng.choice(_DOUBLED) + syllables[k].lstrip(_CONSONANTS)
    return "".join(syllables)


def random_letters(rng: random.Random) -> str:
    """Two to ten letters drawn at random ("qzuvx"): no pattern to learn but the copying itself."""
    return "".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 10)))


def random_name(rng: random.Random, known: frozenset[str]) -> str:
    """A training name (never a word in ``known``): a first name from ``TRAIN_NAMES`` (one in four), a
    made-up one (three in five) or random letters."""
    while True:
        roll = rng.random()
        name = (rng.choice(TRAIN_NAMES) if roll < 0.25 else made_up_name(rng) if roll < 0.85
                else random_letters(rng))
        if name not in known:
            return name
