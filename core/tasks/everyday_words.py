"""The words the everyday grammar adds to the translation grammar's tables (:mod:`core.tasks.lexicon`,
:mod:`core.tasks.verbs`), which stay as they are so the translation task's data does not change.

Nouns of everyday talk (time, life, world, thing …), determiners and quantifiers that agree with their noun ("all
the cats" -> "todos los gatos", "the first day" -> "el primer día", apocope before a masculine singular noun: RAE,
*Nueva gramática* §19.5), adverbs, prepositions of place and time, indefinite pronouns, fixed commands ("sit down"
-> "siéntate") and verbs with their conjugation (the translation grammar's row format).
"""

from __future__ import annotations

import re

from core.tasks.lexicon import Adjective, Noun
from core.tasks.verbs import Verb, parse_verb

# English singular, English plural, Spanish singular, Spanish plural, gender, class ("x": things of everyday talk)
_NOUNS = """
life lives vida vidas f x|world worlds mundo mundos m x|thing things cosa cosas f x|place places lugar lugares m x
team teams equipo equipos m x|name names nombre nombres m x|company companies empresa empresas f x
group groups grupo grupos m x|business businesses negocio negocios m x|system systems sistema sistemas m x
case cases caso casos m x|point points punto puntos m x|side sides lado lados m x|job jobs trabajo trabajos m x
line lines línea líneas f x|party parties fiesta fiestas f x|government governments gobierno gobiernos m x
state states estado estados m x|part parts parte partes f x|end ends final finales m x|power powers poder poderes m x
"""
NOUNS_PLUS: dict[str, Noun] = {row[0]: Noun(*row) for row in (r.split() for r in _NOUNS.strip().replace("\n", "|")
                                                                  .split("|"))}
_ADJECTIVES = """
high alto alta altos altas ser|little pequeño pequeña pequeños pequeñas ser|great genial genial geniales geniales ser
sure seguro segura seguros seguras estar|free libre libre libres libres estar|real real real reales reales ser
different diferente diferente diferentes diferentes ser|public público pública públicos públicas ser
national nacional nacional nacionales nacionales ser|american americano americana americanos americanas ser
"""
ADJECTIVES_PLUS: dict[str, Adjective] = {
    row[0]: Adjective(row[0], tuple(row[1:5]), row[5])
    for row in (r.split() for r in _ADJECTIVES.strip().replace("\n", "|").split("|"))}
# mass nouns: English -> (Spanish, gender); "much/enough/more/less" + mass noun
MASS = {"money": ("dinero", "m"), "time": ("tiempo", "m"), "milk": ("leche", "f"), "water": ("agua", "f"),
        "bread": ("pan", "m")}
# quantity word -> Spanish (masc., fem.) before a mass noun
QUANTITY = {"much": ("mucho", "mucha"), "enough": ("suficiente", "suficiente"), "more": ("más", "más"),
            "less": ("menos", "menos"), "a lot of": ("mucho", "mucha")}
# determiner before a plural noun -> (masc., fem.)
PLURAL_DETERMINERS = {"all the": ("todos los", "todas las"), "both": ("los dos", "las dos"),
                      "many": ("muchos", "muchas"), "few": ("pocos", "pocas"), "a lot of": ("muchos", "muchas"),
                      "the other": ("los otros", "las otras"), "the same": ("los mismos", "las mismas"),
                      "my own": ("mis propios", "mis propias"), "its": ("sus", "sus")}
# determiner before a singular noun -> (masc., fem.)
SINGULAR_DETERMINERS = {"each": ("cada", "cada"), "another": ("otro", "otra"), "the other": ("el otro", "la otra"),
                        "the same": ("el mismo", "la misma"), "the first": ("el primer", "la primera"),
                        "the second": ("el segundo", "la segunda"), "the last": ("el último", "la última"),
                        "my own": ("mi propio", "mi propia"), "the best": ("el mejor", "la mejor"),
                        "its": ("su", "su")}
# adverb between subject and verb -> Spanish
MID_ADVERBS = {"also": "también", "still": "todavía", "already": "ya", "just": "solo", "only": "solo",
               "even": "incluso"}
END_ADVERBS = {"here": "aquí", "again": "otra vez", "well": "bien", "far away": "lejos"}
FRONT_WORDS = {"actually": "en realidad", "however": "sin embargo", "yes": "sí", "no": "no", "then": "entonces"}
# preposition -> Spanish; "de" joins "el" into "del"
PLACE_PREPOSITIONS = {"over": "por encima de", "under": "debajo de", "around": "alrededor de", "through": "por", "against": "contra",
                      "without": "sin", "near": "cerca de", "into": "en"}
TIME_PREPOSITIONS = {"after": "después de", "before": "antes de", "during": "durante", "until": "hasta",
                     "since": "desde"}
EVENTS = {"school": "la escuela", "dinner": "la cena", "breakfast": "el desayuno", "the party": "la fiesta",
          "the class": "la clase", "the game": "el partido", "the weekend": "el fin de semana", "lunch": "la comida"}
CLAUSE_LINKS = {"if": "si", "while": "mientras", "though": "aunque", "when": "cuando"}
# English -> (Spanish in a statement, Spanish after "no" in a negated one)
INDEFINITES = {"something": ("algo", "nada"), "everything": ("todo", "todo"), "nothing": ("nada", "nada"),
               "anything": ("nada", "nada")}
COMMANDS = {"sit down": "siéntate", "stand up": "levántate", "wake up": "despiértate", "come back": "vuelve",
            "go away": "vete", "get out": "sal", "turn off the tv": "apaga la tele", "turn off the radio": "apaga la radio",
            "look at me": "mírame", "tell me": "dime", "give me the book": "dame el libro", "come here": "ven aquí"}
_VERBS = """
say says said decir r present:digo,dices,dice,decimos,dicen preterite:dije,dijiste,dijo,dijimos,dijeron future:dir gerund:diciendo imperative:di
tell tells told contar r present:cuento,cuentas,cuenta,contamos,cuentan
give gives gave dar tfr present:doy,das,da,damos,dan preterite:di,diste,dio,dimos,dieron
put puts - poner t present:pongo,pones,pone,ponemos,ponen preterite:puse,pusiste,puso,pusimos,pusieron future:pondr imperative:pon ing:putting
get gets got conseguir tfr present:consigo,consigues,consigue,conseguimos,consiguen preterite:conseguí,conseguiste,consiguió,conseguimos,consiguieron gerund:consiguiendo ing:getting
change changes changed cambiar tv
support supports supported apoyar p
believe believes believed creer p preterite:creí,creíste,creyó,creímos,creyeron gerund:creyendo
look looks looked buscar tr
do does did hacer r present:hago,haces,hace,hacemos,hacen preterite:hice,hiciste,hizo,hicimos,hicieron future:har imperative:haz
"""
VERBS_PLUS: dict[str, Verb] = {line.split()[0]: parse_verb(line) for line in _VERBS.strip().splitlines()}
# verb + another verb: English verb -> (Spanish verb, Spanish link, English link: "to" + base or the -ing form)
CHAINS = {"start": ("empezar", "a", "to"), "try": ("intentar", "", "to"), "stop": ("dejar", "de", "ing")}
_CHAIN_VERBS = """
start starts started empezar - present:empiezo,empiezas,empieza,empezamos,empiezan
try tries tried intentar - ing:trying
stop stops stopped dejar - ing:stopping
"""
CHAIN_VERBS: dict[str, Verb] = {line.split()[0]: parse_verb(line) for line in _CHAIN_VERBS.strip().splitlines()}
# English participle, Spanish participle: "have seen" -> "he visto"
PARTICIPLES = {"see": ("seen", "visto"), "do": ("done", "hecho"), "eat": ("eaten", "comido"),
               "read": ("read", "leído"), "write": ("written", "escrito"), "buy": ("bought", "comprado"),
               "find": ("found", "encontrado"), "lose": ("lost", "perdido"), "finish": ("finished", "terminado"),
               "open": ("opened", "abierto"), "break": ("broken", "roto"), "visit": ("visited", "visitado")}
HABER = ("he", "has", "ha", "hemos", "han")
REFLEXIVE = ("me", "te", "se", "nos", "se")
FEEL = ("siento", "sientes", "siente", "sentimos", "sienten")
FELT = ("sentí", "sentiste", "sintió", "sentimos", "sintieron")
IMPORTA = {"i": "me", "you": "te", "we": "nos", "he": "a él le", "she": "a ella le", "they": "a ellos les"}
_FIXED = """
mr el señor times veces por semana a week once una vez any someone alguien between entre what does this word mean qué significa esta palabra these words significan
are is doing haciendo estás está están estamos estoy been sido estado have has i've we've you've they've don't care
importa no looking feel feels felt as tan como less menos than que best mejor most más it's es it is one ones
let's vamos to lot of siempre why por qué hasn't haven't
"""


def _pieces(texts: list[str]) -> frozenset[str]:
    return frozenset(w for text in texts for w in re.findall(r"\w+|[^\w\s]+", text))


def words() -> frozenset[str]:
    """Every word these tables write, English and Spanish."""
    texts = _FIXED.split()
    for noun in NOUNS_PLUS.values():
        texts += [noun.en, noun.en_plural, noun.es, noun.es_plural]
    for table in (QUANTITY, PLURAL_DETERMINERS, SINGULAR_DETERMINERS):
        texts += [*table, *(w for forms in table.values() for w in forms)]
    for table in (MID_ADVERBS, END_ADVERBS, FRONT_WORDS, PLACE_PREPOSITIONS, TIME_PREPOSITIONS, EVENTS, CLAUSE_LINKS,
                  COMMANDS):
        texts += [*table, *table.values()]
    texts += [*MASS, *(es for es, _ in MASS.values()), *INDEFINITES, *(w for p in INDEFINITES.values() for w in p)]
    for verb in (*VERBS_PLUS.values(), *CHAIN_VERBS.values()):
        texts += [verb.en, verb.en_third, verb.en_past or "", verb.en_ing, verb.infinitive, *verb.present,
                  *verb.preterite, *verb.future, verb.gerund, verb.imperative]
    texts += [w for en, es, _ in CHAINS.values() for w in (en, es)] + [w for p in PARTICIPLES.values() for w in p]
    texts += [*HABER, *REFLEXIVE, *FEEL, *FELT, *IMPORTA, *IMPORTA.values()]
    texts += [w for name, adjective in ADJECTIVES_PLUS.items() for w in (name, *adjective.forms)]
    return _pieces(texts)


def english_words() -> frozenset[str]:
    """The English words of these tables (lower-case letters only)."""
    texts = [w for noun in NOUNS_PLUS.values() for w in (noun.en, noun.en_plural)]
    for table in (QUANTITY, PLURAL_DETERMINERS, SINGULAR_DETERMINERS, MID_ADVERBS, END_ADVERBS, FRONT_WORDS,
                  PLACE_PREPOSITIONS, TIME_PREPOSITIONS, EVENTS, CLAUSE_LINKS, MASS, INDEFINITES, COMMANDS, IMPORTA,
                  ADJECTIVES_PLUS):
        texts += list(table)
    for verb in (*VERBS_PLUS.values(), *CHAIN_VERBS.values()):
        texts += [verb.en, verb.en_third, verb.en_past or "", verb.en_ing]
    texts += [en for en, _ in PARTICIPLES.values()]
    texts += "mr times a week what does this word mean these words are is doing been have has i've we've you've " \
             "they've don't care looking feel feels felt as less than best most it's it is let's lot of why once any " \
             "someone between hasn't haven't".split()
    return frozenset(w for w in _pieces(texts) if re.fullmatch(r"[a-z]+", w))
