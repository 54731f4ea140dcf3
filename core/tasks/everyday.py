"""Everyday English in the translation grammar: time, frequency and degree words, the weather, the
"to be" idioms Spanish says with "tener", days and months, and commands with "please".

Sources of the rules: Real Academia Española, *Nueva gramática de la lengua española* (2009):
impersonal "hacer" for the weather ("it's cold" -> "hace frío", § 41.6), "tener" + noun for bodily
states ("i am hungry" -> "tengo hambre", the noun's gender choosing "mucha hambre" / "mucho frío",
§ 19.5), "muy" before adjectives and "demasiado" for "too" (§ 13.4), frequency adverbs before the verb
("siempre", "nunca", § 30.7), days and months written in lower case with "el"/"los" for "on"
(*Ortografía*, 2010, § 4.2.4), and the affirmative "tú" imperative (§ 42.3; forms in
:mod:`core.tasks.verbs`). Time words go where English puts them, at the end or first.
"""

from __future__ import annotations

import random

from core.tasks.lexicon import PRONOUNS
from core.tasks.verbs import PERSONS
DAYS = {"monday": "lunes", "tuesday": "martes", "wednesday": "miércoles", "thursday": "jueves",
        "friday": "viernes", "saturday": "sábado", "sunday": "domingo"}
MONTHS = {"january": "enero", "february": "febrero", "march": "marzo", "april": "abril", "may": "mayo",
          "june": "junio", "july": "julio", "august": "agosto", "september": "septiembre",
          "october": "octubre", "november": "noviembre", "december": "diciembre"}
_DAY_PLURALS = {"saturday": "sábados", "sunday": "domingos"}
TIME: dict[str, dict[str, str]] = {  # tense -> English time word -> Spanish
    "present": {"every day": "todos los días", "every night": "todas las noches", "every morning": "todas las mañanas",
                "every week": "todas las semanas", "every year": "todos los años", "today": "hoy", "now": "ahora",
                "at night": "por la noche", "in the morning": "por la mañana", "in the afternoon": "por la tarde",
                "at the weekend": "el fin de semana",
                **{f"on {d}s": f"los {_DAY_PLURALS.get(d, es)}" for d, es in DAYS.items()}},
    "past": {"yesterday": "ayer", "last night": "anoche", "last week": "la semana pasada", "last year": "el año pasado",
             "last month": "el mes pasado", "this morning": "esta mañana", "two days ago": "hace dos días",
             "three days ago": "hace tres días", "a week ago": "hace una semana",
             **{f"on {d}": f"el {es}" for d, es in DAYS.items()}, **{f"in {m}": f"en {es}" for m, es in MONTHS.items()}},
    "future": {"tomorrow": "mañana", "next week": "la próxima semana", "next month": "el próximo mes",
               "next year": "el próximo año", "later": "más tarde", "soon": "pronto", "tonight": "esta noche",
               "in two days": "dentro de dos días", "tomorrow morning": "mañana por la mañana",
               **{f"on {d}": f"el {es}" for d, es in DAYS.items()}, **{f"in {m}": f"en {es}" for m, es in MONTHS.items()}},
    "progressive": {"now": "ahora", "right now": "ahora mismo", "today": "hoy", "at the moment": "en este momento"},
}
TIME["going"] = TIME["future"]
FRONTABLE = ("today", "tomorrow", "yesterday", "every day", "now", "last night", "on mondays", "on monday")
FREQUENCY = {"always": "siempre", "never": "nunca", "often": "a menudo", "sometimes": "a veces",
             "usually": "normalmente"}
DEGREE = {"very": "muy", "too": "demasiado", "so": "tan", "quite": "bastante", "really": "muy"}
WEATHER = {"cold": "frío", "hot": "calor", "sunny": "sol", "windy": "viento"}  # "hace mucho <noun>"
RAIN = {"rain": ("llover", "llueve", "llovió", "lloverá", "lloviendo"),
        "snow": ("nevar", "nieva", "nevó", "nevará", "nevando")}
# "to be" + adjective that Spanish says as "tener" + noun: English -> (noun, "mucho"/"mucha")
IDIOMS = {"hungry": ("hambre", "mucha"), "thirsty": ("sed", "mucha"), "cold": ("frío", "mucho"),
          "hot": ("calor", "mucho"), "sleepy": ("sueño", "mucho"), "afraid": ("miedo", "mucho")}
TENER = {"present": ("tengo", "tienes", "tiene", "tenemos", "tienen"),
         "past": ("tenía", "tenías", "tenía", "teníamos", "tenían")}
ENGLISH_WAS = {"1sg": "was", "2sg": "were", "3sg": "was", "1pl": "were", "3pl": "were"}
CONTRACTIONS = {"i am": "i'm", "you are": "you're", "he is": "he's", "she is": "she's", "it is": "it's",
                "we are": "we're", "they are": "they're", "i will": "i'll", "you will": "you'll",
                "he will": "he'll", "she will": "she'll", "we will": "we'll", "they will": "they'll"}
CONJUNCTIONS = {"and": "y", "but": "pero", ", but": ", pero", "because": "porque", "or": "o"}


def time_word(rng: random.Random, tense: str) -> tuple[str, str]:
    """A time word that fits ``tense``: ("every night", "todas las noches"), ("tomorrow", "mañana")."""
    return rng.choice(tuple(TIME[tense].items()))


def add_time(rng: random.Random, en: str, es: str, tense: str) -> tuple[str, str]:
    """``en``/``es`` with a time word that fits ``tense``, at the end or (for some) first."""
    word_en, word_es = time_word(rng, tense)
    if word_en in FRONTABLE and rng.random() < 0.3:
        return f"{word_en} {en}", f"{word_es} {es}"
    return f"{en} {word_en}", f"{es} {word_es}"


def add_frequency(rng: random.Random, en: str, es: str, subject_en: str, subject_es: str) -> tuple[str, str]:
    """A frequency word between subject and verb: "she always reads" -> "ella siempre lee"."""
    word_en, word_es = rng.choice(tuple(FREQUENCY.items()))
    return (f"{subject_en} {word_en}{en[len(subject_en):]}", f"{subject_es} {word_es}{es[len(subject_es):]}")


def add_degree(rng: random.Random, en: str, es: str) -> tuple[str, str]:
    """A degree word before the final adjective: "the car is fast" -> "the car is very fast"."""
    word_en, word_es = rng.choice(tuple(DEGREE.items()))
    en_words, es_words = en.split(), es.split()
    return " ".join([*en_words[:-1], word_en, en_words[-1]]), " ".join([*es_words[:-1], word_es, es_words[-1]])


def contract(rng: random.Random, en: str, share: float = 0.35) -> str:
    """Sometimes write a pronoun and "am/is/are/will" contracted: "i am tired" -> "i'm tired"."""
    for full, short in CONTRACTIONS.items():
        if en.startswith(full + " ") and rng.random() < share:
            return short + en[len(full):]
    return en


def weather(rng: random.Random) -> tuple[str, str]:
    """"it's very cold today" -> "hace mucho frío hoy"; "it rained yesterday" -> "llovió ayer"."""
    tense = rng.choice(("present", "present", "past", "future"))
    if rng.random() < 0.6:
        word = rng.choice(tuple(WEATHER))
        very = rng.random() < 0.35
        en_be, es_be = {"present": ("it is", "hace"), "past": ("it was", "hacía"), "future": ("it will be", "hará")}[tense]
        negated = rng.random() < 0.15
        if negated:
            en_be = en_be.replace("is", "isn't") if tense == "present" else en_be.replace(" be", " not be") \
                if tense == "future" else en_be.replace("was", "wasn't")
        en = f"{en_be} {'very ' if very else ''}{word}"
        es = f"{'no ' if negated else ''}{es_be} {'mucho ' if very else ''}{WEATHER[word]}"
    else:
        name = rng.choice(tuple(RAIN))
        forms = RAIN[name]
        if tense == "present" and rng.random() < 0.5:
            en, es = f"it is {name}ing", f"está {forms[4]}"
        else:
            en = {"present": f"it {name}s", "past": f"it {name}ed", "future": f"it will {name}"}[tense]
            es = forms[{"present": 1, "past": 2, "future": 3}[tense]]
    en = contract(rng, en, 0.5)
    return add_time(rng, en, es, tense) if rng.random() < 0.5 else (en, es)


def idiom(rng: random.Random, subject_en: str, subject_es: str, person: str) -> tuple[str, str]:
    """"i am very hungry" -> "yo tengo mucha hambre"; "she was cold" -> "ella tenía frío"."""
    adjective = rng.choice(tuple(IDIOMS))
    noun, much = IDIOMS[adjective]
    tense = "past" if rng.random() < 0.3 else "present"
    en_be = (ENGLISH_WAS if tense == "past" else {"1sg": "am", "2sg": "are", "3sg": "is", "1pl": "are",
                                                 "3pl": "are"})[person]
    negated, very = rng.random() < 0.2, rng.random() < 0.3
    es_verb = TENER[tense][PERSONS.index(person)]
    en = f"{subject_en} {en_be}{' not' if negated else ''} {'very ' if very else ''}{adjective}"
    es = f"{subject_es} {'no ' if negated else ''}{es_verb} {much + ' ' if very else ''}{noun}"
    return contract(rng, en), es


def day_sentence(rng: random.Random) -> tuple[str, str]:
    """"today is monday" -> "hoy es lunes"; "my birthday is in may" -> "mi cumpleaños es en mayo"."""
    day, day_es = rng.choice(tuple(DAYS.items()))
    roll = rng.random()
    if roll < 0.3:
        return f"today is {day}", f"hoy es {day_es}"
    if roll < 0.5:
        return f"tomorrow is {day}", f"mañana es {day_es}"
    if roll < 0.65:
        return f"yesterday was {day}", f"ayer fue {day_es}"
    if roll < 0.75:
        return contract(rng, f"it is {day}", 0.5), f"es {day_es}"
    month, month_es = rng.choice(tuple(MONTHS.items()))
    owner = rng.choice(("my", "your", "his", "her", "our", "their"))
    owner_es = {"my": "mi", "your": "tu", "our": "nuestro"}.get(owner, "su")
    return f"{owner} birthday is in {month}", f"{owner_es} cumpleaños es en {month_es}"


def pronoun(rng: random.Random) -> tuple[str, str, str]:
    """A random subject pronoun: (English, Spanish, person)."""
    en = rng.choice(tuple(PRONOUNS))
    return en, PRONOUNS[en][0], PRONOUNS[en][1]
