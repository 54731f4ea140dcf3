"""Sentence builders over :mod:`core.tasks.everyday_words`: each returns ``(English, Spanish, pairs)`` as the
translation grammar's builders do (:mod:`core.tasks.sentences`).

"all the cats" -> "todos los gatos", "i don't have much time" -> "yo no tengo mucho tiempo", "she also reads" ->
"ella también lee", "i have seen the bridge" -> "yo he visto el puente", "i feel tired" -> "yo me siento cansado",
"what are you doing?" -> "¿ qué estás haciendo tú ?", "sit down, please" -> "siéntate , por favor".
"""

from __future__ import annotations

import random

from core.tasks import activities, sentences
from core.tasks import everyday_words as words
from core.tasks.constructions import with_clitic
from core.tasks.lexicon import ADJECTIVES, DETERMINERS, NOUNS, PRONOUNS, Adjective, Noun
from core.tasks.phrases import NOT_ANIMATE_PREDICATES, Pairs, clause, noun_phrase, object_phrase, pairs_of, random_np, subject_phrase
from core.tasks.verbs import PERSONS, VERBS

Built = tuple[str, str, Pairs]
_BE = {"ser": ("soy", "eres", "es", "somos", "son"), "estar": ("estoy", "estás", "está", "estamos", "están")}
_OWNERS = ("the", "my", "your", "his", "her", "our", "their", "this", "that")
_THING_KINDS = "tfr"


def _tense(rng: random.Random, verb: str, tenses: tuple[str, ...] = ("present", "past", "future")) -> str:
    """One of ``tenses``; never "past" for a verb whose past looks like its present ("read")."""
    return rng.choice([t for t in tenses if t != "past" or VERBS[verb].en_past])


def _be_en(person: str) -> str:
    return {"1sg": "am", "2sg": "are", "3sg": "is"}.get(person, "are")


def plus_noun_phrase(det: str, noun: Noun, plural: bool) -> tuple[str, str]:
    """A determiner (``DETERMINERS``) + a noun of :data:`everyday_words.NOUNS_PLUS`: ("my", life) -> "mi vida"."""
    form = DETERMINERS[det][2 * plural + (noun.gender == "f")]
    return f"{det} {noun.en_plural if plural else noun.en}", f"{form} {noun.es_plural if plural else noun.es}"


def everyday_nouns(rng: random.Random) -> Built:
    """"i need your name", "the world is very big", "their party was great"."""
    pairs: Pairs = set()
    noun = rng.choice(tuple(words.NOUNS_PLUS.values()))
    plural = rng.random() < 0.3
    det = rng.choice(("the", "my", "your", "our", "their", "these" if plural else "this"))
    en_np, es_np = plus_noun_phrase(det, noun, plural)
    if rng.random() < 0.5:
        who = sentences.subject(rng, "p", pairs)
        verb = rng.choice(("have", "need", "want", "see", "find", "lose"))
        en, es = clause(who, verb, tense=rng.choice(("present", "past", "future")), negated=rng.random() < 0.2)
        return f"{en} {en_np}", f"{es} {es_np}", pairs
    adjective = rng.choice([a for a, item in {**ADJECTIVES, **words.ADJECTIVES_PLUS}.items() if item.copula == "ser"])
    item = ADJECTIVES.get(adjective) or words.ADJECTIVES_PLUS[adjective]
    be_en, be_es = ("are", "son") if plural else ("is", "es")
    return f"{en_np} {be_en} {adjective}", f"{es_np} {be_es} {item.agree(noun.gender, plural)}", pairs


def describing(rng: random.Random) -> Built:
    """The new adjectives as predicates: "i am sure" -> "yo estoy seguro", "the museums are free"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "pl", pairs, names=0.0)
    en_who, es_who, person, gender, plural = subject_phrase(who)
    name, item = rng.choice(tuple(words.ADJECTIVES_PLUS.items()))
    negated = rng.random() < 0.2
    be_en = _be_en(person) + (" not" if negated else "")
    be_es = ("no " if negated else "") + _BE[item.copula][PERSONS.index(person)]
    return f"{en_who} {be_en} {name}", f"{es_who} {be_es} {item.agree(gender, plural)}", pairs


def quantities(rng: random.Random) -> Built:
    """"i don't have much time", "we need more money", "she wants a lot of milk"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    mass, (es_mass, gender) = rng.choice(tuple(words.MASS.items()))
    quantity = rng.choice(tuple(words.QUANTITY) + ("any",))
    negated = quantity in ("much", "any") or rng.random() < 0.2
    en, es = clause(who, rng.choice(("have", "need", "want")), tense=rng.choice(("present", "past")),
                    negated=negated)
    es_quantity = "" if quantity == "any" else words.QUANTITY[quantity][gender == "f"]
    return f"{en} {quantity} {mass}", " ".join(w for w in (es, es_quantity, es_mass) if w), pairs


def quantified(rng: random.Random) -> Built:
    """"i see all the cats" -> "yo veo todos los gatos", "each house", "the first day", "its door"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    verb = rng.choice(("have", "see", "want", "need", "buy", "find", "clean", "open"))
    noun = NOUNS[rng.choice([n for n, item in NOUNS.items() if item.kind in _THING_KINDS
                             and item.kind in VERBS[verb].objects])]
    plural = rng.random() < 0.5
    table = words.PLURAL_DETERMINERS if plural else words.SINGULAR_DETERMINERS
    det, forms = rng.choice(tuple(table.items()))
    en, es = clause(who, verb, tense=rng.choice(("present", "past")), negated=rng.random() < 0.2)
    en_noun, es_noun = (noun.en_plural, noun.es_plural) if plural else (noun.en, noun.es)
    return f"{en} {det} {en_noun}", f"{es} {forms[noun.gender == 'f']} {es_noun}", pairs


def adverbs(rng: random.Random) -> Built:
    """"she also reads books" -> "ella también lee libros"; "they live here"; "yes, i have a dog"."""
    pairs: Pairs = set()
    roll = rng.random()
    who = sentences.subject(rng, "p", pairs)
    if roll < 0.35:
        verb = rng.choice(("read", "eat", "have", "want", "need", "see", "buy"))
        thing = random_np(rng, VERBS[verb].objects.replace("p", "").replace("a", "") or "t", bare=True)
        pairs.update(pairs_of(thing))
        en, es = clause(who, verb, thing, tense=_tense(rng, verb, ("present", "past")))
        en_who, es_who = subject_phrase(who)[:2]
        adverb, es_adverb = rng.choice(tuple(words.MID_ADVERBS.items()))
        return f"{en_who} {adverb}{en[len(en_who):]}", f"{es_who} {es_adverb}{es[len(es_who):]}", pairs
    if roll < 0.7:
        verb = rng.choice(activities.STAYING)
        en, es = clause(who, verb, tense=_tense(rng, verb))
        adverb, es_adverb = rng.choice(tuple(words.END_ADVERBS.items()))
        return f"{en} {adverb}", f"{es} {es_adverb}", pairs
    en, es, pairs = sentences.person_object_clause(rng)
    front, es_front = rng.choice(tuple(words.FRONT_WORDS.items()))
    return f"{front}, {en}", f"{es_front} , {es}", pairs


def _de(preposition: str, es_np: str) -> str:
    """"de" + "el" -> "del" at the end of a preposition."""
    if preposition.endswith(" de") and es_np.startswith("el "):
        return f"{preposition[:-3]} del {es_np[3:]}"
    return f"{preposition} {es_np}"


def places_and_times(rng: random.Random) -> Built:
    """"the cat sleeps under the table", "we play after school", "i walk between the park and the river"."""
    en, es, pairs = sentences.activity_clause(rng) if rng.random() < 0.5 else sentences.person_object_clause(rng)
    roll = rng.random()
    if roll < 0.4:
        preposition, es_preposition = rng.choice(tuple(words.PLACE_PREPOSITIONS.items()))
        place = random_np(rng, "tl", bare=False)
        pairs.update(pairs_of(place))
        en_np, es_np = noun_phrase(place)
        return f"{en} {preposition} {en_np}", f"{es} {_de(es_preposition, es_np)}", pairs
    if roll < 0.55:
        first, second = (random_np(rng, "l", bare=False) for _ in range(2))
        pairs.update(pairs_of(first, second))
        (en1, es1), (en2, es2) = noun_phrase(first), noun_phrase(second)
        return f"{en} between {en1} and {en2}", f"{es} entre {es1} {sentences.and_word(es2)} {es2}", pairs
    preposition, es_preposition = rng.choice(tuple(words.TIME_PREPOSITIONS.items()))
    event, es_event = rng.choice(tuple(words.EVENTS.items()))
    return f"{en} {preposition} {event}", f"{es} {_de(es_preposition, es_event)}", pairs


def linked(rng: random.Random) -> Built:
    """Two clauses joined by "if", "while", "though" or "when": "i read while she sleeps"."""
    (en1, es1, p1), (en2, es2, p2) = (rng.choice((sentences.person_object_clause, sentences.activity_clause))(rng)
                                      for _ in range(2))
    link, es_link = rng.choice(tuple(words.CLAUSE_LINKS.items()))
    return f"{en1} {link} {en2}", f"{es1} {es_link} {es2}", p1 | p2


def indefinites(rng: random.Random) -> Built:
    """"i want something" -> "yo quiero algo", "she didn't say anything" -> "ella no dijo nada", "we see someone"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    if rng.random() < 0.25:
        en, es = clause(who, rng.choice(("see", "help", "call", "invite")), tense=rng.choice(("present", "past")))
        return f"{en} someone", f"{es} a alguien", pairs
    word = rng.choice(tuple(words.INDEFINITES))
    verb = rng.choice(("want", "need", "see", "buy", "find", "have")) if rng.random() < 0.6 else \
        rng.choice(("say", "do"))
    v = VERBS.get(verb) or words.VERBS_PLUS[verb]
    tense = rng.choice(("present", "past"))
    negated = word == "anything" or (word != "nothing" and rng.random() < 0.2)
    en, es = clause(who, v, tense=tense, negated=negated)
    if word == "nothing":
        es_who = subject_phrase(who)[1]
        es = f"{es_who} no {es[len(es_who) + 1:]}"
    return f"{en} {word}", f"{es} {words.INDEFINITES[word][negated or word == 'nothing']}", pairs


def commands(rng: random.Random) -> Built:
    """"sit down, please" -> "siéntate , por favor"; "let's play football" -> "vamos a jugar al fútbol"."""
    if rng.random() < 0.35:
        verb, en_rest, es_rest = activities.activity(rng)
        en, es = f"let's {verb.en} {en_rest}", f"vamos a {verb.infinitive} {es_rest}"
    else:
        en, es = rng.choice(tuple(words.COMMANDS.items()))
    if rng.random() < 0.4:
        en, es = f"{en}, please", f"{es} , por favor"
    return en, es, set()


def new_verbs(rng: random.Random) -> Built:
    """"my mother told a story", "i am looking for my keys", "he gave a gift to his sister", "we believe you"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    name = rng.choice(tuple(words.VERBS_PLUS))
    verb = words.VERBS_PLUS[name]
    tense = rng.choice(("present", "past", "future", "progressive") if verb.en_past else ("present", "future"))
    negated = rng.random() < 0.2
    if verb.objects == "p":
        whom = sentences.obj(rng, "p", pairs)
        en, es = clause(who, verb, whom, tense=tense, negated=negated)
        return en, es, pairs
    thing = random_np(rng, verb.objects.replace("p", ""), bare=False)
    pairs.update(pairs_of(thing))
    en_thing, es_thing = object_phrase(thing)
    en, es = clause(who, verb, tense=tense, negated=negated)
    if name == "look":
        return f"{en} for {en_thing}", f"{es} {es_thing}", pairs
    if name == "give":
        person = random_np(rng, "p", bare=False)
        pairs.update(pairs_of(person))
        en_person, es_person = object_phrase(person)
        es_who = subject_phrase(who)[1]
        es_verb = with_clitic(es[len(es_who) + 1:], "les" if person[3] else "le")
        return f"{en} {en_thing} to {en_person}", f"{es_who} {es_verb} {es_thing} {es_person}", pairs
    return f"{en} {en_thing}", f"{es} {es_thing}", pairs


def chains(rng: random.Random) -> Built:
    """"she started to play football" -> "ella empezó a jugar al fútbol"; "they stopped singing"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs)
    name = rng.choice(tuple(words.CHAINS))
    es_verb, es_link, en_link = words.CHAINS[name]
    chain = words.CHAIN_VERBS[name]
    verb, en_rest, es_rest = activities.activity(rng) if rng.random() < 0.6 else \
        (VERBS[rng.choice(activities.ALONE)], "", "")
    en, es = clause(who, chain, tense=rng.choice(("present", "past")))
    en_next = f"to {verb.en}" if en_link == "to" else verb.en_ing
    tail_en = " ".join(w for w in (en_next, en_rest) if w)
    tail_es = " ".join(w for w in (es_link, verb.infinitive, es_rest) if w)
    return f"{en} {tail_en}", f"{es} {tail_es}", pairs


def perfect(rng: random.Random) -> Built:
    """"i have seen the bridge" -> "yo he visto el puente", "she has been tired" -> "ella ha estado cansada",
    "what have you done?" -> "¿ qué has hecho tú ?"."""
    pairs: Pairs = set()
    who = sentences.subject(rng, "p", pairs, names=0.1)
    en_who, es_who, person, gender, plural = subject_phrase(who)
    i = PERSONS.index(person)
    have = "has" if person == "3sg" else "have"
    roll = rng.random()
    if roll < 0.15:
        return f"what {have} {en_who} done?", f"¿ qué {words.HABER[i]} hecho {es_who} ?", pairs
    negated = rng.random() < 0.2
    en_have = f"{have}n't" if negated else have
    if not negated and who in PRONOUNS and rng.random() < 0.3:
        en_head = f"{who}'ve" if have == "have" else f"{who} has"
    else:
        en_head = f"{en_who} {en_have}"
    es_have = ("no " if negated else "") + words.HABER[i]
    if roll < 0.4:
        adjective = rng.choice([a for a in ADJECTIVES if a not in NOT_ANIMATE_PREDICATES])
        item: Adjective = ADJECTIVES[adjective]
        participle = "estado" if item.copula == "estar" else "sido"
        return (f"{en_head} been {adjective}", f"{es_who} {es_have} {participle} {item.agree(gender, plural)}",
                pairs)
    verb, (en_participle, es_participle) = rng.choice(tuple(words.PARTICIPLES.items()))
    kinds = (VERBS[verb].objects if verb in VERBS else "r").replace("p", "").replace("a", "") or "t"
    thing = random_np(rng, kinds, bare=False)
    pairs.update(pairs_of(thing))
    en_thing, es_thing = noun_phrase(thing)
    return f"{en_head} {en_participle} {en_thing}", f"{es_who} {es_have} {es_participle} {es_thing}", pairs


def feelings(rng: random.Random) -> Built:
    """"i feel tired" -> "yo me siento cansado"; "i don't care" -> "no me importa"; "what are you doing?"."""
    pairs: Pairs = set()
    roll = rng.random()
    if roll < 0.2:
        pronoun = rng.choice(tuple(words.IMPORTA))
        person = PRONOUNS[pronoun][1]
        en_do = "doesn't" if person == "3sg" else "don't"
        clitic = words.IMPORTA[pronoun]
        head, _, last = clitic.rpartition(" ")
        return f"{pronoun} {en_do} care", " ".join(w for w in (head, "no", last, "importa") if w), pairs
    who = sentences.subject(rng, "p", pairs, names=0.0)
    en_who, es_who, person, gender, plural = subject_phrase(who)
    i = PERSONS.index(person)
    if roll < 0.45:
        return f"what {_be_en(person)} {en_who} doing?", f"¿ qué {_BE['estar'][i]} haciendo {es_who} ?", pairs
    adjective = rng.choice([a for a, item in ADJECTIVES.items() if item.copula == "estar"
                            and a not in NOT_ANIMATE_PREDICATES])  # "i am cold" is "tengo frío"
    past = rng.random() < 0.4
    en_feel = "felt" if past else ("feels" if person == "3sg" else "feel")
    es_feel = (words.FELT if past else words.FEEL)[i]
    return (f"{en_who} {en_feel} {adjective}",
            f"{es_who} {words.REFLEXIVE[i]} {es_feel} {ADJECTIVES[adjective].agree(gender, plural)}", pairs)


def fixed_talk(rng: random.Random) -> Built:
    """"what does this word mean?", "mr lopez plays tennis", "i play football three times a week", "it's the best
    book", "the car is as fast as the train", "she is less tired than me"."""
    pairs: Pairs = set()
    roll = rng.random()
    if roll < 0.15:
        plural = rng.random() < 0.4
        return (("what do these words mean?", "¿ qué significan estas palabras ?") if plural
                else ("what does this word mean?", "¿ qué significa esta palabra ?")) + (pairs,)
    if roll < 0.35:
        name = sentences.name(rng, pairs)
        verb, en_rest, es_rest = activities.activity(rng)
        en, es = clause(name, verb, tense=rng.choice(("present", "past", "future")))
        return f"mr {en} {en_rest}", f"el señor {es} {es_rest}", pairs
    if roll < 0.55:
        who = sentences.subject(rng, "p", pairs)
        verb, en_rest, es_rest = activities.activity(rng)
        en, es = clause(who, verb)
        count, es_count = rng.choice((("once", "una vez"), ("two times", "dos veces"), ("three times", "tres veces"),
                                      ("four times", "cuatro veces")))
        return f"{en} {en_rest} {count} a week", f"{es} {es_rest} {es_count} por semana", pairs
    noun = NOUNS[rng.choice([n for n, item in NOUNS.items() if item.kind in "tvl"])]
    if roll < 0.75:
        adjective = rng.choice([a for a, item in ADJECTIVES.items() if item.copula == "ser"])
        agreed = ADJECTIVES[adjective].agree(noun.gender, False)
        article = "la" if noun.gender == "f" else "el"
        if rng.random() < 0.4:
            return f"it's the best {noun.en}", f"es {article} mejor {noun.es}", pairs
        return f"it is the most {adjective} {noun.en}", f"es {article} {noun.es} más {agreed}", pairs
    first, second = random_np(rng, "tv", bare=False), random_np(rng, "tv", bare=False)
    pairs.update(pairs_of(first, second))
    adjective = rng.choice([a for a, item in ADJECTIVES.items() if item.copula == "ser"])
    (en1, es1), (en2, es2) = noun_phrase(first), noun_phrase(second)
    agreed = ADJECTIVES[adjective].agree(NOUNS[first[2]].gender, first[3])
    be_en, be_es = ("are", "son") if first[3] else ("is", "es")
    if rng.random() < 0.5:
        return f"{en1} {be_en} as {adjective} as {en2}", f"{es1} {be_es} tan {agreed} como {es2}", pairs
    return f"{en1} {be_en} less {adjective} than {en2}", f"{es1} {be_es} menos {agreed} que {es2}", pairs


BUILDERS = (everyday_nouns, describing, quantities, quantified, adverbs, places_and_times, linked, indefinites,
            commands, new_verbs, chains, perfect, feelings, fixed_talk)


def built(rng: random.Random) -> Built:
    """One sentence of one of :data:`BUILDERS`, each as likely."""
    return rng.choice(BUILDERS)(rng)

