"""The verbs of the translation grammar and how they conjugate (European Spanish).

Sources of the conjugation rules: Real Academia Española, *Nueva gramática de la lengua española*
(2009), chapter 4 (regular -ar/-er/-ir paradigms, the future built on the infinitive, the irregular
future stems ``tendr-``, ``har-``, ``vendr-``…, the gerund in -ando/-iendo and -yendo after a
vowel, the affirmative ``tú`` imperative equal to the third person present except ``ten``, ``haz``,
``ven``, ``ve``); *Ortografía de la lengua española* (2010) for the -car/-gar/-zar spellings of the
first person preterite ("crucé", "pagué", "toqué") and the unaccented monosyllable "rio". English "-ing" forms drop a silent final "e"
("make" -> "making"); the doubled consonants are written out in the table ("running").
"""

from __future__ import annotations

from dataclasses import dataclass

# English base, third person singular, past, Spanish infinitive, object classes ("-" = intransitive only;
# noun classes as in core.tasks.lexicon, "p" = people, who take the personal "a"), then optional overrides:
# "present:" / "preterite:" (five forms: yo, tú, él/ella, nosotros, ellos), "future:" (the stem),
# "gerund:", "imperative:" (tú) and "ing:" (the English -ing form).
# "past" is "-" where English past equals the base ("read"): only "didn't read" is generated then.
_VERBS = """
have has had tener adftrv present:tengo,tienes,tiene,tenemos,tienen preterite:tuve,tuviste,tuvo,tuvimos,tuvieron future:tendr imperative:ten
see sees saw ver dftrvl present:veo,ves,ve,vemos,ven preterite:vi,viste,vio,vimos,vieron
want wants wanted querer adftrv present:quiero,quieres,quiere,queremos,quieren preterite:quise,quisiste,quiso,quisimos,quisieron future:querr
buy buys bought comprar adftrv
need needs needed necesitar adftrv
find finds found encontrar ftrv present:encuentro,encuentras,encuentra,encontramos,encuentran
sell sells sold vender aftrv
eat eats ate comer f
drink drinks drank beber d
cook cooks cooked cocinar f
read reads - leer r preterite:leí,leíste,leyó,leímos,leyeron gerund:leyendo
write writes wrote escribir r
open opens opened abrir tr
close closes closed cerrar tr present:cierro,cierras,cierra,cerramos,cierran
clean cleans cleaned limpiar tlv
wash washes washed lavar tfv
paint paints painted pintar tlv
break breaks broke romper tv
bring brings brought traer tfdr present:traigo,traes,trae,traemos,traen preterite:traje,trajiste,trajo,trajimos,trajeron gerund:trayendo
carry carries carried llevar tfdr
use uses used usar tv
fix fixes fixed arreglar tv
build builds built construir tl present:construyo,construyes,construye,construimos,construyen preterite:construí,construiste,construyó,construimos,construyeron gerund:construyendo
visit visits visited visitar l
cross crosses crossed cruzar l
take takes took tomar tfdrv
hate hates hated odiar adftlv
watch watches watched mirar tlv
order orders ordered pedir fd present:pido,pides,pide,pedimos,piden preterite:pedí,pediste,pidió,pedimos,pidieron gerund:pidiendo
prefer prefers preferred preferir adftlv present:prefiero,prefieres,prefiere,preferimos,prefieren preterite:preferí,preferiste,prefirió,preferimos,prefirieron gerund:prefiriendo
choose chooses chose elegir adftrv present:elijo,eliges,elige,elegimos,eligen preterite:elegí,elegiste,eligió,elegimos,eligieron gerund:eligiendo
lose loses lost perder trv present:pierdo,pierdes,pierde,perdemos,pierden
send sends sent enviar tr present:envío,envías,envía,enviamos,envían
receive receives received recibir tr
show shows showed mostrar tr present:muestro,muestras,muestra,mostramos,muestran
count counts counted contar tf present:cuento,cuentas,cuenta,contamos,cuentan
remember remembers remembered recordar trl present:recuerdo,recuerdas,recuerda,recordamos,recuerdan
catch catches caught atrapar t
throw throws threw lanzar t
push pushes pushed empujar tv
move moves moved mover tv present:muevo,mueves,mueve,movemos,mueven
keep keeps kept guardar tfr
run runs ran correr - ing:running
sleep sleeps slept dormir - present:duermo,duermes,duerme,dormimos,duermen preterite:dormí,dormiste,durmió,dormimos,durmieron gerund:durmiendo
walk walks walked caminar -
swim swims swam nadar - ing:swimming
sing sings sang cantar -
dance dances danced bailar -
work works worked trabajar -
play plays played jugar - present:juego,juegas,juega,jugamos,juegan
jump jumps jumped saltar -
cry cries cried llorar -
wait waits waited esperar -
study studies studied estudiar -
travel travels traveled viajar - ing:traveling
arrive arrives arrived llegar -
rest rests rested descansar -
listen listens listened escuchar -
win wins won ganar - ing:winning
fly flies flew volar - present:vuelo,vuelas,vuela,volamos,vuelan
live lives lived vivir -
speak speaks spoke hablar -
learn learns learned aprender -
help helps helped ayudar p
call calls called llamar p
meet meets met conocer p present:conozco,conoces,conoce,conocemos,conocen
love loves loved querer p present:quiero,quieres,quiere,queremos,quieren preterite:quería,querías,quería,queríamos,querían future:querr
invite invites invited invitar p
follow follows followed seguir p present:sigo,sigues,sigue,seguimos,siguen preterite:seguí,seguiste,siguió,seguimos,siguieron gerund:siguiendo
hug hugs hugged abrazar p ing:hugging
kiss kisses kissed besar p
make makes made hacer f present:hago,haces,hace,hacemos,hacen preterite:hice,hiciste,hizo,hicimos,hicieron future:har imperative:haz
understand understands understood entender r present:entiendo,entiendes,entiende,entendemos,entienden
finish finishes finished terminar fr
draw draws drew dibujar tlv
pay pays paid pagar tf
drive drives drove conducir v present:conduzco,conduces,conduce,conducimos,conducen preterite:conduje,condujiste,condujo,condujimos,condujeron
repeat repeats repeated repetir r present:repito,repites,repite,repetimos,repiten preterite:repetí,repetiste,repitió,repetimos,repitieron gerund:repitiendo
climb climbs climbed escalar l
forget forgets forgot olvidar tr ing:forgetting
hear hears heard oír t present:oigo,oyes,oye,oímos,oyen preterite:oí,oíste,oyó,oímos,oyeron gerund:oyendo future:oir
share shares shared compartir tf
touch touches touched tocar t
go goes went ir - present:voy,vas,va,vamos,van preterite:fui,fuiste,fue,fuimos,fueron gerund:yendo imperative:ve
come comes came venir - present:vengo,vienes,viene,venimos,vienen preterite:vine,viniste,vino,vinimos,vinieron future:vendr gerund:viniendo imperative:ven
know knows knew saber - present:sé,sabes,sabe,sabemos,saben preterite:sabía,sabías,sabía,sabíamos,sabían future:sabr
think thinks thought pensar - present:pienso,piensas,piensa,pensamos,piensan
ask asks asked preguntar -
answer answers answered responder -
return returns returned volver - present:vuelvo,vuelves,vuelve,volvemos,vuelven
talk talks talked hablar -
laugh laughs laughed reír - present:río,ríes,ríe,reímos,ríen preterite:reí,reíste,rio,reímos,rieron gerund:riendo future:reir
smile smiles smiled sonreír - present:sonrío,sonríes,sonríe,sonreímos,sonríen preterite:sonreí,sonreíste,sonrió,sonreímos,sonrieron gerund:sonriendo future:sonreir
shout shouts shouted gritar -
teach teaches taught enseñar -
practice practices practiced practicar -
"""
PERSONS = ("1sg", "2sg", "3sg", "1pl", "3pl")
_FUTURE = ("é", "ás", "á", "emos", "án")


@dataclass(frozen=True)
class Verb:
    """One verb: its English forms and its Spanish forms per person (``PERSONS`` order)."""

    en: str
    en_third: str
    en_past: str | None
    infinitive: str
    objects: str  # noun classes it takes as object; "" = intransitive only
    present: tuple[str, ...]
    preterite: tuple[str, ...]
    future: tuple[str, ...]
    gerund: str
    imperative: str
    en_ing: str


def regular(infinitive: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Present and preterite of a regular -ar/-er/-ir verb (with the -car/-gar/-zar spellings)."""
    stem, ending = infinitive[:-2], infinitive[-2:]
    if ending == "ar":
        present = ("o", "as", "a", "amos", "an")
        preterite = ["é", "aste", "ó", "amos", "aron"]
        first = {"c": "qu", "g": "gu", "z": "c"}.get(stem[-1])
        pret = tuple(stem + e for e in preterite)
        if first:
            pret = (stem[:-1] + first + "é", *pret[1:])
        return tuple(stem + e for e in present), pret
    present = ("o", "es", "e", "emos" if ending == "er" else "imos", "en")
    return tuple(stem + e for e in present), tuple(stem + e for e in ("í", "iste", "ió", "imos", "ieron"))


def _gerund(infinitive: str) -> str:
    stem = infinitive[:-2]
    if infinitive.endswith("ar"):
        return stem + "ando"
    return stem + ("yendo" if stem[-1:] in ("a", "e", "o", "u") else "iendo")


def _ing(base: str) -> str:
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        return base[:-1] + "ing"
    return base + "ing"


def _verb(row: list[str]) -> Verb:
    en, third, past, infinitive, objects, *overrides = row
    present, preterite = regular(infinitive)
    extra = dict(item.split(":") for item in overrides)
    present = tuple(extra["present"].split(",")) if "present" in extra else present
    preterite = tuple(extra["preterite"].split(",")) if "preterite" in extra else preterite
    stem = extra.get("future", infinitive)
    return Verb(en, third, None if past == "-" else past, infinitive, "" if objects == "-" else objects,
                present, preterite, tuple(stem + e for e in _FUTURE), extra.get("gerund", _gerund(infinitive)),
                extra.get("imperative", present[2]), extra.get("ing", _ing(en)))


def parse_verb(line: str) -> Verb:
    """One verb from a line in the table's format ("say says said decir r present:digo,… future:dir")."""
    return _verb(line.split())


VERBS: dict[str, Verb] = {row[0]: _verb(row) for row in (line.split() for line in _VERBS.strip().splitlines())}
