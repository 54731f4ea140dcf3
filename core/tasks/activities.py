"""What a class talks about: activities ("play football", "go to school"), places ("in the garden"),
"like" (Spanish "gustar"), "X is my friend", and commands ("please open the door").

Sources of the rules: Real Academia Española, *Nueva gramática de la lengua española* (2009):
"gustar" agrees with what is liked and takes the person as an indirect object ("me gustan los gatos",
"a mi hermano le gusta el fútbol"; a generic plural takes the definite article, § 35.4); "jugar a"
for games and "tocar" for instruments; "a" + "el" -> "al" and "de" + "el" -> "del" (§ 14.2); the
article is left out before a profession after "ser" ("she is a teacher" -> "ella es profesora",
§ 15.7), and a person noun takes the subject's gender ("she is my friend" -> "ella es mi amiga");
the negative "tú" command is the present subjunctive ("don't run" -> "no corras", § 42.3), with
the spellings -que/-gue/-ce of -car/-gar/-zar verbs (*Ortografía*, 2010).
"""

from __future__ import annotations

import dataclasses
import random

from core.tasks.lexicon import NOUNS, PRONOUNS
from core.tasks.verbs import VERBS, Verb
SUBJECTS = {"english": ("inglés", "el"), "spanish": ("español", "el"), "french": ("francés", "el"),
            "german": ("alemán", "el"), "math": ("matemáticas", "las"), "science": ("ciencias", "las"),
            "history": ("historia", "la"), "music": ("música", "la"), "art": ("arte", "el"),
            "geography": ("geografía", "la")}
LANGUAGES = ("english", "spanish", "french", "german")
# English verb, English rest, the verb whose Spanish forms are used, Spanish rest
ACTIVITIES = (
    ("play", "football", "play", "al fútbol"), ("play", "tennis", "play", "al tenis"),
    ("play", "basketball", "play", "al baloncesto"), ("play", "chess", "play", "al ajedrez"),
    ("play", "the piano", "touch", "el piano"), ("play", "the guitar", "touch", "la guitarra"),
    ("listen", "to music", "listen", "música"), ("listen", "to the radio", "listen", "la radio"),
    ("watch", "tv", "see", "la tele"), ("watch", "television", "see", "la televisión"),
    ("go", "to school", "go", "a la escuela"), ("go", "to bed", "go", "a la cama"), ("go", "home", "go", "a casa"),
    ("go", "shopping", "go", "de compras"), ("come", "home", "come", "a casa"),
    *((verb, s, verb, es) for verb in ("study", "learn", "teach", "practice") for s, (es, _) in SUBJECTS.items()),
    *(("speak", s, "speak", SUBJECTS[s][0]) for s in LANGUAGES),
)
MOVING = ("go", "come", "walk", "run", "drive", "fly", "travel", "return")
STAYING = ("live", "work", "study", "sleep", "play", "swim", "eat", "read", "write", "wait", "rest", "sing", "dance")
# person nouns whose Spanish follows the gender of who they are: English -> (feminine sg, feminine pl)
FEMININE = {"friend": ("amiga", "amigas"), "teacher": ("profesora", "profesoras"), "neighbor": ("vecina", "vecinas"),
            "cousin": ("prima", "primas"), "classmate": ("compañera", "compañeras"), "doctor": ("médica", "médicas"),
            "engineer": ("ingeniera", "ingenieras"), "baker": ("panadera", "panaderas"),
            "writer": ("escritora", "escritoras"), "player": ("jugadora", "jugadoras"),
            "lawyer": ("abogada", "abogadas"), "worker": ("trabajadora", "trabajadoras"),
            "waiter": ("camarera", "camareras"), "farmer": ("granjera", "granjeras"), "guest": ("invitada", "invitadas"),
            "student": ("estudiante", "estudiantes"), "artist": ("artista", "artistas"),
            "dentist": ("dentista", "dentistas"), "singer": ("cantante", "cantantes")}
CLITICS = {"i": "me", "you": "te", "we": "nos", "he": "a él le", "she": "a ella le", "they": "a ellos les"}


def spanish_of(en_verb: str, es_verb: str) -> Verb:
    """``VERBS[en_verb]`` with the Spanish forms of ``VERBS[es_verb]`` ("play" the piano -> "tocar")."""
    es = VERBS[es_verb]
    return dataclasses.replace(VERBS[en_verb], infinitive=es.infinitive, present=es.present,
                               preterite=es.preterite, future=es.future, gerund=es.gerund, imperative=es.imperative)


def activity(rng: random.Random) -> tuple[Verb, str, str]:
    """(verb, English rest, Spanish rest) of an activity: ("play", "football", "al fútbol")."""
    en_verb, en_rest, es_verb, es_rest = rng.choice(ACTIVITIES)
    return spanish_of(en_verb, es_verb), en_rest, es_rest


def with_article(preposition: str, es_np: str) -> str:
    """"a"/"de" (or "cerca de") + a Spanish noun phrase, joining "el": ("a", "el parque") -> "al parque"."""
    return f"{preposition}l{es_np[2:]}" if es_np.startswith("el ") else f"{preposition} {es_np}"


def place_phrase(rng: random.Random, verb: str, np: tuple[str, str]) -> tuple[str, str] | None:
    """Where: "to the park" -> "al parque" after a verb of moving, "in the garden" -> "en el jardín" after
    one of staying; None for other verbs."""
    en, es = np
    if verb in MOVING:
        return f"to {en}", with_article("a", es)
    if verb in STAYING:
        preposition = rng.choice(("in", "in", "at", "near", "on"))
        return f"{preposition} {en}", with_article("cerca de", es) if preposition == "near" else f"en {es}"
    return None


def negative_command(v: Verb) -> str:
    """The "tú" present subjunctive, from the first person present: "corro" -> "corras", "cruzo" -> "cruces"."""
    special = {"ir": "vayas", "saber": "sepas"}
    if v.infinitive in special:
        return special[v.infinitive]
    stem = v.present[0][:-1]
    if v.infinitive.endswith("ar"):
        for end, spelt in (("c", "qu"), ("g", "gu"), ("z", "c")):
            if stem.endswith(end):
                return stem[: -len(end)] + spelt + "es"
        return stem + "es"
    return stem + "as"


def experiencer(rng: random.Random, who: str | tuple[str, str], negated: bool) -> tuple[str, str, bool]:
    """The one who likes: (English subject, Spanish clitic group, English third person)."""
    no = "no " if negated else ""
    if isinstance(who, tuple):  # a noun phrase or a name: "a mi hermano le", "a maria le"
        en, es = who
        plural = es.split()[0] in ("los", "las", "mis", "tus", "sus", "nuestros", "nuestras", "unos", "unas")
        return en, f"{with_article('a', es)} {no}{'les' if plural else 'le'}", not plural
    clitic = CLITICS[who]
    head, _, last = clitic.rpartition(" ")
    return who, f"{head + ' ' if head else ''}{no}{last}", PRONOUNS[who][1] == "3sg"


def like(rng: random.Random, who: str | tuple[str, str], liked: tuple[str, str, bool], tense: str,
         negated: bool) -> tuple[str, str]:
    """"my brother likes football" -> "a mi hermano le gusta el fútbol"; ``liked`` is (English, Spanish,
    plural): "gusta" agrees with it, not with who likes it."""
    en_who, es_who, third = experiencer(rng, who, negated)
    en_liked, es_liked, plural = liked
    if tense == "past":
        en_verb = "didn't like" if negated else "liked"
        es_verb = "gustaron" if plural else "gustó"
    else:
        en_verb = ("doesn't like" if third else "don't like") if negated else "likes" if third else "like"
        es_verb = "gustan" if plural else "gusta"
    return f"{en_who} {en_verb} {en_liked}", f"{es_who} {es_verb} {es_liked}"


def liked_thing(rng: random.Random, np: tuple[str, str, bool]) -> tuple[str, str, bool]:
    """Something to like: a noun phrase (``np``), a school subject or an activity ("to play football")."""
    roll = rng.random()
    if roll < 0.5:
        return np
    if roll < 0.7:
        subject = rng.choice(tuple(SUBJECTS))
        es, article = SUBJECTS[subject]
        return subject, f"{article} {es}", article == "las"
    verb, en_rest, es_rest = activity(rng)
    en_verb = f"to {verb.en}" if rng.random() < 0.6 else verb.en_ing
    return f"{en_verb} {en_rest}", f"{verb.infinitive} {es_rest}", False


def person_predicate(noun: str, gender: str, plural: bool, det: str) -> tuple[str, str]:
    """"my friend" said of a woman -> "mi amiga"; "a teacher" -> "profesora" (no article)."""
    n = NOUNS[noun]
    feminine = FEMININE.get(noun)
    es_noun = (feminine[plural] if gender == "f" and feminine else n.es_plural if plural else n.es)
    en_noun = n.en_plural if plural else n.en
    if det in ("a", ""):
        return f"{'an' if en_noun[0] in 'aeiou' else 'a'} {en_noun}" if det else en_noun, es_noun
    es_det = {"my": "mi", "your": "tu", "our": "nuestr" + ("a" if gender == "f" else "o"), "the": "el"}.get(det, "su")
    if det == "the":
        es_det = ("las" if gender == "f" else "los") if plural else ("la" if gender == "f" else "el")
    elif plural:
        es_det += "s"
    return f"{det} {en_noun}", f"{es_det} {es_noun}"


COMMAND_VERBS = ("open", "close", "read", "write", "clean", "wash", "bring", "take", "eat", "drink", "buy", "paint",
                 "use", "fix", "find", "show", "send", "carry", "count", "cook", "finish", "draw", "repeat", "touch",
                 "share", "keep", "move", "push", "catch", "throw", "help", "call", "follow")
ALONE = ("run", "sleep", "wait", "sing", "dance", "listen", "jump", "come", "rest", "walk", "read", "write", "eat")


def command(rng: random.Random, verb: Verb, en_rest: str, es_rest: str) -> tuple[str, str]:
    """"please open the door" -> "por favor abre la puerta"; "don't run" -> "no corras"."""
    negated = rng.random() < 0.2
    en = (("don't " if negated else "") + f"{verb.en} {en_rest}").strip()
    es = f"{'no ' + negative_command(verb) if negated else verb.imperative} {es_rest}".strip()
    roll = rng.random()
    if roll < 0.3:
        return f"please {en}", f"por favor {es}"
    if roll < 0.55:
        comma = rng.random() < 0.5
        return f"{en}{',' if comma else ''} please", f"{es}{' ,' if comma else ''} por favor"
    return en, es
