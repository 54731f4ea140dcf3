"""The constructions the everyday grammar (:mod:`core.tasks.everyday_plus`) adds to the translation grammar:
prepositional phrases, object pronouns, modals, wh-questions and comparatives, each a pure function from its
choices to (English, Spanish), so every rule can be checked on a sentence with its expected translation.

Conventions are the translation grammar's (subject pronouns kept, words and punctuation separated by spaces),
plus: an object pronoun goes before the conjugated verb, after "no" ("yo no la veo", "tú me puedes ayudar"); a
wh-question puts the subject after the verb ("¿ dónde vive tu hermano ?", "¿ qué quieres tú ?"). Sources: RAE,
*Nueva gramática* (2009) §16 (clitics before the finite verb of a periphrasis: "la voy a ver"), §43 (interrogatives),
§45 (comparatives "más … que", "mejor", "peor"), §23.4 (the conditional on the future stem: "tendría"); "conmigo",
"contigo" and the stressed "mí", "ti" after a preposition (§16.4); "de" + "el" -> "del".
"""

from __future__ import annotations

import re

from core.tasks.lexicon import ADJECTIVES, PRONOUNS
from core.tasks.phrases import NounPhrase, noun_phrase, subject_phrase
from core.tasks.verbs import PERSONS, VERBS, Verb

Person = str | NounPhrase  # a subject pronoun ("i") or a noun phrase

# English object pronoun -> (Spanish clitic, Spanish after a preposition, subject pronoun it answers to)
OBJECT_PRONOUNS = {
    "me": ("me", "mí", "i"), "you": ("te", "ti", "you"), "him": ("lo", "él", "he"), "her": ("la", "ella", "she"),
    "us": ("nos", "nosotros", "we"), "them": ("los", "ellos", "they"),
}
# English preposition -> Spanish ("by" takes a vehicle without an article: "by bus" -> "en autobús")
PREPOSITIONS = {"with": "con", "for": "para", "from": "de", "about": "sobre", "by": "en", "of": "de"}
WITH_ME = {"me": "conmigo", "you": "contigo"}
# English modal -> (Spanish forms per person; None: the conditional of the verb itself)
MODALS: dict[str, tuple[str, ...] | None] = {
    "can": ("puedo", "puedes", "puede", "podemos", "pueden"),
    "could": ("podría", "podrías", "podría", "podríamos", "podrían"),
    "should": ("debería", "deberías", "debería", "deberíamos", "deberían"),
    "must": ("debo", "debes", "debe", "debemos", "deben"),
    "would": None,
}
NEGATED_MODALS = {"can": "can't", "could": "couldn't", "should": "shouldn't", "must": "mustn't", "would": "wouldn't"}
WH_WORDS = {"what": "qué", "where": "dónde", "when": "cuándo", "how": "cómo", "who": "quién", "which": "qué",
            "why": "por qué"}
# English comparative of an adjective (the rest take "more"); "good"/"bad" -> "mejor"/"peor", which agree in number
COMPARATIVES = {
    "big": "bigger", "small": "smaller", "old": "older", "young": "younger", "tall": "taller", "short": "shorter",
    "long": "longer", "fast": "faster", "slow": "slower", "new": "newer", "cold": "colder", "hot": "hotter",
    "happy": "happier", "sad": "sadder", "rich": "richer", "poor": "poorer", "strong": "stronger", "cheap": "cheaper",
    "good": "better", "bad": "worse",
}
IRREGULAR_COMPARATIVES = {"good": ("mejor", "mejores"), "bad": ("peor", "peores")}


def conditional(verb: Verb) -> tuple[str, ...]:
    """The conditional per person, on the future stem ("tendré" -> "tendría")."""
    stem = verb.future[0][:-1]  # future 1sg ends in "é"
    return tuple(stem + ending for ending in ("ía", "ías", "ía", "íamos", "ían"))


def _person(subject: Person) -> tuple[str, str, str, str, bool]:
    return subject_phrase(subject)


def with_clitic(es_verb_group: str, clitic: str) -> str:
    """A clitic before the conjugated verb, after "no": ("no veo", "la") -> "no la veo"."""
    if not clitic:
        return es_verb_group
    if es_verb_group.startswith("no "):
        return f"no {clitic} {es_verb_group[3:]}"
    return f"{clitic} {es_verb_group}"


def prepositional(preposition: str, obj: str | NounPhrase) -> tuple[str, str]:
    """A prepositional phrase: ``("with", ("my", None, "mother", False))`` -> ("with my mother", "con mi madre");
    an object pronoun takes its stressed form ("for me" -> "para mí", "with me" -> "conmigo"); "by" + a vehicle
    drops the article ("by bus" -> "en autobús"); "de el" is "del"."""
    es_prep = PREPOSITIONS[preposition]
    if isinstance(obj, str):
        if preposition == "with" and obj in WITH_ME:
            return f"with {obj}", WITH_ME[obj]
        return f"{preposition} {obj}", f"{es_prep} {OBJECT_PRONOUNS[obj][1]}"
    en, es = noun_phrase(("", None, obj[2], False) if preposition == "by" else obj)
    if es_prep == "de" and es.startswith("el "):
        return f"{preposition} {en}", "del " + es[3:]
    return f"{preposition} {en}", f"{es_prep} {es}"


def object_pronoun_clause(subject: Person, verb: str, pronoun: str, *, tense: str = "present",
                          negated: bool = False) -> tuple[str, str]:
    """Subject + verb + object pronoun: ``("she", "see", "them")`` -> ("she sees them", "ella los ve"),
    ``("i", "help", "her", tense="past", negated=True)`` -> ("i didn't help her", "yo no la ayudé")."""
    en_subject, es_subject, person = _person(subject)[:3]
    v, i = VERBS[verb], PERSONS.index(person)
    forms = {"present": v.present, "past": v.preterite, "future": v.future}[tense]
    if tense == "future":
        en_verb = f"won't {v.en}" if negated else f"will {v.en}"
    elif negated:
        en_verb = f"{'did' if tense == 'past' else 'does' if person == '3sg' else 'do'}n't {v.en}"
    else:
        en_verb = v.en_past if tense == "past" else v.en_third if person == "3sg" else v.en
    es_verb = with_clitic(("no " if negated else "") + forms[i], OBJECT_PRONOUNS[pronoun][0])
    return f"{en_subject} {en_verb} {pronoun}", f"{es_subject} {es_verb}"


def modal_clause(subject: Person, modal: str, verb: str | Verb, rest: tuple[str, str] = ("", ""), *, clitic: str = "",
                 negated: bool = False, question: bool = False) -> tuple[str, str]:
    """Subject + modal + verb (+ ``rest``, an object's English and Spanish; ``clitic``: an object pronoun):
    ``("i", "can", "find", ("my keys", "mis llaves"), negated=True)`` -> ("i can't find my keys", "yo no puedo
    encontrar mis llaves"); "would" is the verb's conditional ("she would buy" -> "ella compraría"); a question
    keeps the statement order in Spanish ("can you help me?" -> "¿ tú me puedes ayudar ?")."""
    en_subject, es_subject, person = _person(subject)[:3]
    v, i = VERBS[verb] if isinstance(verb, str) else verb, PERSONS.index(person)
    forms = MODALS[modal]
    es_verb = forms[i] + f" {v.infinitive}" if forms else conditional(v)[i]
    es_verb = with_clitic(("no " if negated else "") + es_verb, OBJECT_PRONOUNS[clitic][0] if clitic else "")
    en_object = " ".join(w for w in (clitic, rest[0]) if w)
    es_tail = f" {rest[1]}" if rest[1] else ""
    if question:
        en = " ".join(w for w in (modal, en_subject, v.en, en_object) if w)
        return en + "?", f"¿ {es_subject} {es_verb}{es_tail} ?"
    en_modal = NEGATED_MODALS[modal] if negated else modal
    en = " ".join(w for w in (en_subject, en_modal, v.en, en_object) if w)
    return en, f"{es_subject} {es_verb}{es_tail}"


def wh_question(wh: str, subject: Person, verb: str, rest: tuple[str, str] = ("", ""), *,
                tense: str = "present", noun: tuple[str, str] | None = None) -> tuple[str, str]:
    """"what/where/when/how/which … do SUBJECT VERB?", the Spanish subject after the verb: ``("where", ("your",
    None, "brother", False), "live")`` -> ("where does your brother live?", "¿ dónde vive tu hermano ?");
    "which" takes ``noun`` (English, Spanish: "which book" -> "qué libro")."""
    en_subject, es_subject, person = _person(subject)[:3]
    v, i = VERBS[verb], PERSONS.index(person)
    aux = "did" if tense == "past" else "does" if person == "3sg" else "do"
    es_verb = (v.preterite if tense == "past" else v.present)[i]
    en_wh, es_wh = (f"which {noun[0]}", f"qué {noun[1]}") if wh == "which" and noun else (wh, WH_WORDS[wh])
    en = " ".join(w for w in (en_wh, aux, en_subject, v.en, rest[0]) if w)
    es = " ".join(w for w in ("¿", es_wh, es_verb, es_subject, rest[1]) if w)
    return en + "?", es + " ?"


def who_is(subject: NounPhrase) -> tuple[str, str]:
    """"who is your teacher?" -> "¿ quién es tu profesor ?"; "who are your friends?" -> "¿ quiénes son tus amigos ?"."""
    en, es = noun_phrase(subject)
    plural = subject[3]
    return (f"who {'are' if plural else 'is'} {en}?",
            f"¿ {'quiénes son' if plural else 'quién es'} {es} ?")


def how_is(subject: Person) -> tuple[str, str]:
    """"how are you?" -> "¿ cómo estás tú ?"; "how is your mother?" -> "¿ cómo está tu madre ?"."""
    en_subject, es_subject, person = _person(subject)[:3]
    be_en = {"1sg": "am", "2sg": "are", "3sg": "is"}.get(person, "are")
    be_es = ("estoy", "estás", "está", "estamos", "están")[PERSONS.index(person)]
    return f"how {be_en} {en_subject}?", f"¿ cómo {be_es} {es_subject} ?"


def comparative(subject: Person, adjective: str, other: str | NounPhrase) -> tuple[str, str]:
    """"SUBJECT is ADJ-er / more ADJ than OTHER", the adjective agreeing with the subject: ``(("my", None, "sister",
    False), "tall", ("my", None, "brother", False))`` -> ("my sister is taller than my brother", "mi hermana es más
    alta que mi hermano"); "better" -> "mejor(es)"; a pronoun after "than" is the subject form ("than me" ->
    "que yo")."""
    en_subject, es_subject, person, gender, plural = _person(subject)
    item = ADJECTIVES[adjective]
    be_en = {"1sg": "am", "2sg": "are", "3sg": "is"}.get(person, "are")
    be_es = {"ser": ("soy", "eres", "es", "somos", "son"),
             "estar": ("estoy", "estás", "está", "estamos", "están")}[item.copula][PERSONS.index(person)]
    en_adjective = COMPARATIVES.get(adjective, f"more {adjective}")
    if adjective in IRREGULAR_COMPARATIVES:
        es_adjective = IRREGULAR_COMPARATIVES[adjective][plural]
    else:
        es_adjective = f"más {item.agree(gender, plural)}"
    if isinstance(other, str):
        en_other, es_other = other, PRONOUNS[OBJECT_PRONOUNS[other][2]][0]
    else:
        en_other, es_other = noun_phrase(other)
    return (f"{en_subject} {be_en} {en_adjective} than {en_other}",
            f"{es_subject} {be_es} {es_adjective} que {es_other}")


def construction_words() -> frozenset[str]:
    """Every word (English and Spanish, split as the word tokenizer splits them) these constructions write
    beyond the translation grammar's tables."""
    texts = [*OBJECT_PRONOUNS, *(w for forms in OBJECT_PRONOUNS.values() for w in forms[:2]), *PREPOSITIONS,
             *PREPOSITIONS.values(), *WITH_ME.values(), *MODALS, *NEGATED_MODALS.values(), *WH_WORDS,
             *WH_WORDS.values(), *COMPARATIVES.values(), *(w for pair in IRREGULAR_COMPARATIVES.values() for w in pair),
             *(w for forms in MODALS.values() if forms for w in forms),
             *(w for verb in VERBS.values() for w in conditional(verb)),
             "than", "more", "más", "que", "quiénes", "son", "es", "del", "estoy", "estás", "está", "estamos", "están",
             "please", "por", "favor", "do", "does", "did", "don't", "doesn't", "didn't", "won't", "will", "am", "is",
             "are", "who", "quién"]
    return frozenset(w for text in texts for w in re.findall(r"\w+|[^\w\s]+", text))


def construction_english_words() -> frozenset[str]:
    """The English words of :func:`construction_words`."""
    texts = [*OBJECT_PRONOUNS, *PREPOSITIONS, *MODALS, *NEGATED_MODALS.values(), *WH_WORDS, *COMPARATIVES.values(),
             "than", "more", "please", "who"]
    return frozenset(w for text in texts for w in re.findall(r"[a-z]+", text))
