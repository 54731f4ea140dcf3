"""The English -> Spanish word lists behind the translation task (European Spanish: "coche", "ordenador").

Every form is written out (nothing is guessed from spelling rules except regular verb
endings), so irregular plurals ("men", "lápices", "leones") and feminine nouns in -o
("la mano") are exact. Noun classes decide where a noun may appear:
``p`` person, ``a`` animal, ``t`` object, ``f`` food, ``d`` drink, ``r`` something to read or
write, ``l`` place, ``v`` vehicle.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.tasks.numbers import BIG_NUMBERS


# English singular, English plural, Spanish singular, Spanish plural, gender, class
_NOUNS = """
boy boys niño niños m p|girl girls niña niñas f p|man men hombre hombres m p|woman women mujer mujeres f p
friend friends amigo amigos m p|teacher teachers profesor profesores m p|student students estudiante estudiantes m p
doctor doctors médico médicos m p|brother brothers hermano hermanos m p|sister sisters hermana hermanas f p
mother mothers madre madres f p|father fathers padre padres m p|baby babies bebé bebés m p|king kings rey reyes m p
queen queens reina reinas f p|neighbor neighbors vecino vecinos m p|farmer farmers granjero granjeros m p
singer singers cantante cantantes m p|writer writers escritor escritores m p|grandmother grandmothers abuela abuelas f p
grandfather grandfathers abuelo abuelos m p|son sons hijo hijos m p|daughter daughters hija hijas f p
uncle uncles tío tíos m p|aunt aunts tía tías f p|waiter waiters camarero camareros m p|nurse nurses enfermera enfermeras f p
pilot pilots piloto pilotos m p|soldier soldiers soldado soldados m p|worker workers trabajador trabajadores m p
driver drivers conductor conductores m p|player players jugador jugadores m p|lawyer lawyers abogado abogados m p
person people persona personas f p|guest guests invitado invitados m p|tourist tourists turista turistas m p
dog dogs perro perros m a|cat cats gato gatos m a|horse horses caballo caballos m a|bird birds pájaro pájaros m a
mouse mice ratón ratones m a|cow cows vaca vacas f a|pig pigs cerdo cerdos m a|goat goats cabra cabras f a
hen hens gallina gallinas f a|duck ducks pato patos m a|rabbit rabbits conejo conejos m a|lion lions león leones m a
tiger tigers tigre tigres m a|bear bears oso osos m a|wolf wolves lobo lobos m a|fox foxes zorro zorros m a
frog frogs rana ranas f a|snake snakes serpiente serpientes f a|monkey monkeys mono monos m a
elephant elephants elefante elefantes m a|giraffe giraffes jirafa jirafas f a|turtle turtles tortuga tortugas f a
spider spiders araña arañas f a|bee bees abeja abejas f a|butterfly butterflies mariposa mariposas f a
ant ants hormiga hormigas f a|owl owls búho búhos m a|whale whales ballena ballenas f a|shark sharks tiburón tiburones m a
dolphin dolphins delfín delfines m a|donkey donkeys burro burros m a|camel camels camello camellos m a
animal animals animal animales m a|puppy puppies cachorro cachorros m a|kitten kittens gatito gatitos m a
car cars coche coches m v|train trains tren trenes m v|bus buses autobús autobuses m v|plane planes avión aviones m v
bicycle bicycles bicicleta bicicletas f v|truck trucks camión camiones m v|boat boats barco barcos m v
house houses casa casas f l|city cities ciudad ciudades f l|street streets calle calles f l|bridge bridges puente puentes m l
road roads camino caminos m l|river rivers río ríos m l|mountain mountains montaña montañas f l|lake lakes lago lagos m l
beach beaches playa playas f l|island islands isla islas f l|garden gardens jardín jardines m l|park parks parque parques m l
school schools escuela escuelas f l|church churches iglesia iglesias f l|hospital hospitals hospital hospitales m l
shop shops tienda tiendas f l|market markets mercado mercados m l|restaurant restaurants restaurante restaurantes m l
hotel hotels hotel hoteles m l|museum museums museo museos m l|library libraries biblioteca bibliotecas f l
office offices oficina oficinas f l|kitchen kitchens cocina cocinas f l|room rooms habitación habitaciones f l
farm farms granja granjas f l|castle castles castillo castillos m l|tower towers torre torres f l
village villages pueblo pueblos m l|country countries país países m l|airport airports aeropuerto aeropuertos m l
station stations estación estaciones f l|cinema cinemas cine cines m l|theater theaters teatro teatros m l
factory factories fábrica fábricas f l|building buildings edificio edificios m l|forest forests bosque bosques m l
field fields campo campos m l|desert deserts desierto desiertos m l|tree trees árbol árboles m l
book books libro libros m r|letter letters carta cartas f r|newspaper newspapers periódico periódicos m r
magazine magazines revista revistas f r|story stories historia historias f r|map maps mapa mapas m r
note notes nota notas f r|page pages página páginas f r|card cards tarjeta tarjetas f r|notebook notebooks cuaderno cuadernos m r
word words palabra palabras f r|song songs canción canciones f r|ticket tickets billete billetes m r
table tables mesa mesas f t|flower flowers flor flores f t|shoe shoes zapato zapatos m t|door doors puerta puertas f t
hat hats sombrero sombreros m t|window windows ventana ventanas f t|chair chairs silla sillas f t|bed beds cama camas f t
ball balls pelota pelotas f t|box boxes caja cajas f t|cup cups taza tazas f t|glass glasses vaso vasos m t
plate plates plato platos m t|spoon spoons cuchara cucharas f t|knife knives cuchillo cuchillos m t
fork forks tenedor tenedores m t|bottle bottles botella botellas f t|key keys llave llaves f t|bag bags bolsa bolsas f t
pen pens bolígrafo bolígrafos m t|pencil pencils lápiz lápices m t|phone phones teléfono teléfonos m t
computer computers ordenador ordenadores m t|clock clocks reloj relojes m t|lamp lamps lámpara lámparas f t
painting paintings cuadro cuadros m t|photo photos foto fotos f t|shirt shirts camisa camisas f t
dress dresses vestido vestidos m t|coat coats abrigo abrigos m t|jacket jackets chaqueta chaquetas f t
sock socks calcetín calcetines m t|skirt skirts falda faldas f t|ring rings anillo anillos m t|gift gifts regalo regalos m t
toy toys juguete juguetes m t|game games juego juegos m t|guitar guitars guitarra guitarras f t|piano pianos piano pianos m t
camera cameras cámara cámaras f t|radio radios radio radios f t|problem problems problema problemas m t
idea ideas idea ideas f t|paper papers papel papeles m t|desk desks escritorio escritorios m t|sofa sofas sofá sofás m t
mirror mirrors espejo espejos m t|towel towels toalla toallas f t|soap soaps jabón jabones m t|candle candles vela velas f t
stone stones piedra piedras f t|hand hands mano manos f t|wheel wheels rueda ruedas f t|tool tools herramienta herramientas f t
hammer hammers martillo martillos m t|ladder ladders escalera escaleras f t|rope ropes cuerda cuerdas f t
coin coins moneda monedas f t|wallet wallets cartera carteras f t|basket baskets cesta cestas f t|pot pots olla ollas f t
carpet carpets alfombra alfombras f t|pillow pillows almohada almohadas f t|blanket blankets manta mantas f t
boot boots bota botas f t|glove gloves guante guantes m t|belt belts cinturón cinturones m t|button buttons botón botones m t
flag flags bandera banderas f t|kite kites cometa cometas f t|leaf leaves hoja hojas f t|rose roses rosa rosas f t
apple apples manzana manzanas f f|bread breads pan panes m f|cake cakes pastel pasteles m f|cheese cheeses queso quesos m f
egg eggs huevo huevos m f|banana bananas plátano plátanos m f|lemon lemons limón limones m f
tomato tomatoes tomate tomates m f|potato potatoes patata patatas f f|soup soups sopa sopas f f
sandwich sandwiches bocadillo bocadillos m f|cookie cookies galleta galletas f f|pizza pizzas pizza pizzas f f
coffee coffees café cafés m d|tea teas té tés m d|milk milks leche leches f d|juice juices zumo zumos m d
cousin cousins primo primos m p|family families familia familias f p|husband husbands marido maridos m p
wife wives esposa esposas f p|classmate classmates compañero compañeros m p|dentist dentists dentista dentistas m p
artist artists artista artistas m p|engineer engineers ingeniero ingenieros m p|baker bakers panadero panaderos m p
firefighter firefighters bombero bomberos m p|parrot parrots loro loros m a|hamster hamsters hámster hámsteres m a
lesson lessons lección lecciones f r|exam exams examen exámenes m r|question questions pregunta preguntas f r
dictionary dictionaries diccionario diccionarios m r|sentence sentences frase frases f r|poem poems poema poemas m r
number numbers número números m r|message messages mensaje mensajes m r|email emails correo correos m r
picture pictures dibujo dibujos m r|board boards pizarra pizarras f t|ruler rulers regla reglas f t
eraser erasers goma gomas f t|backpack backpacks mochila mochilas f t|television televisions televisión televisiones f t
wall walls pared paredes f t|floor floors suelo suelos m t
film films película películas f t|scarf scarves bufanda bufandas f t|tooth teeth diente dientes m t
face faces cara caras f t|eye eyes ojo ojos m t|head heads cabeza cabezas f t|foot feet pie pies m t
arm arms brazo brazos m t|leg legs pierna piernas f t|heart hearts corazón corazones m t|nose noses nariz narices f t
ear ears oreja orejas f t|mouth mouths boca bocas f t|fridge fridges nevera neveras f t|moon moons luna lunas f t
star stars estrella estrellas f t|cloud clouds nube nubes f t|plant plants planta plantas f t
bike bikes bici bicis f v|motorbike motorbikes moto motos f v|taxi taxis taxi taxis m v
helicopter helicopters helicóptero helicópteros m v|supermarket supermarkets supermercado supermercados m l
zoo zoos zoo zoos m l|bank banks banco bancos m l|pool pools piscina piscinas f l|bakery bakeries panadería panaderías f l
apartment apartments piso pisos m l|sea seas mar mares m l|square squares plaza plazas f l|bathroom bathrooms baño baños m l
bedroom bedrooms dormitorio dormitorios m l|university universities universidad universidades f l
gym gyms gimnasio gimnasios m l|playground playgrounds patio patios m l|class classes clase clases f l
orange oranges naranja naranjas f f|strawberry strawberries fresa fresas f f|carrot carrots zanahoria zanahorias f f
onion onions cebolla cebollas f f|salad salads ensalada ensaladas f f|chicken chickens pollo pollos m f
sausage sausages salchicha salchichas f f|hamburger hamburgers hamburguesa hamburguesas f f
chocolate chocolates chocolate chocolates m f|candy candies caramelo caramelos m f|pear pears pera peras f f
grape grapes uva uvas f f|peach peaches melocotón melocotones m f|pie pies tarta tartas f f
breakfast breakfasts desayuno desayunos m f|dinner dinners cena cenas f f|meat meats carne carnes f f
water waters agua aguas f d|lemonade lemonades limonada limonadas f d
grandson grandsons nieto nietos m p|granddaughter granddaughters nieta nietas f p|prince princes príncipe príncipes m p
princess princesses princesa princesas f p|scientist scientists científico científicos m p
nephew nephews sobrino sobrinos m p|niece nieces sobrina sobrinas f p|captain captains capitán capitanes m p
sheep sheep oveja ovejas f a|eagle eagles águila águilas f a|penguin penguins pingüino pingüinos m a|zebra zebras cebra cebras f a
squirrel squirrels ardilla ardillas f a|crocodile crocodiles cocodrilo cocodrilos m a|kangaroo kangaroos canguro canguros m a
dragon dragons dragón dragones m a|dinosaur dinosaurs dinosaurio dinosaurios m a|insect insects insecto insectos m a
fish fish pez peces m a|worm worms gusano gusanos m a|chick chicks pollito pollitos m a
necklace necklaces collar collares m t|bracelet bracelets pulsera pulseras f t
sweater sweaters jersey jerséis m t|cap caps gorra gorras f t|trousers trousers pantalón pantalones m t
sandal sandals sandalia sandalias f t
brush brushes cepillo cepillos m t|comb combs peine peines m t
bucket buckets cubo cubos m t|shovel shovels pala palas f t|bell bells campana campanas f t|drum drums tambor tambores m t
violin violins violín violines m t|trumpet trumpets trompeta trompetas f t|doll dolls muñeca muñecas f t
puzzle puzzles puzle puzles m t|robot robots robot robots m t|balloon balloons globo globos m t|tent tents tienda tiendas f t
envelope envelopes sobre sobres m r|stamp stamps sello sellos m t|calendar calendars calendario calendarios m r
diary diaries diario diarios m r|comic comics cómic cómics m r|novel novels novela novelas f r|recipe recipes receta recetas f r
list lists lista listas f r|postcard postcards postal postales f r|report reports informe informes m r
rice rices arroz arroces m f|cherry cherries cereza cerezas f f
watermelon watermelons sandía sandías f f|melon melons melón melones m f|pineapple pineapples piña piñas f f
cucumber cucumbers pepino pepinos m f|pepper peppers pimiento pimientos m f|bean beans judía judías f f
pea peas guisante guisantes m f|nut nuts nuez nueces f f
omelette omelettes tortilla tortillas f f|steak steaks filete filetes m f|muffin muffins magdalena magdalenas f f
smoothie smoothies batido batidos m d|soda sodas refresco refrescos m d
"""

# English, masculine singular, feminine singular, masculine plural, feminine plural, copula
# (``ser`` for what something is, ``estar`` for a state it is in). No adjective is spelt like an
# English verb form of the grammar ("open", "clean", "closed" are verbs here) and no Spanish
# adjective form is a verb form ("limpia"), so pairs and agreement can be read off the words.
_ADJECTIVES = """
red rojo roja rojos rojas ser|black negro negra negros negras ser|white blanco blanca blancos blancas ser
green verde verde verdes verdes ser|blue azul azul azules azules ser|yellow amarillo amarilla amarillos amarillas ser
brown marrón marrón marrones marrones ser|gray gris gris grises grises ser|purple morado morada morados moradas ser
big grande grande grandes grandes ser|small pequeño pequeña pequeños pequeñas ser|new nuevo nueva nuevos nuevas ser
old viejo vieja viejos viejas ser|young joven joven jóvenes jóvenes ser|long largo larga largos largas ser
short corto corta cortos cortas ser|tall alto alta altos altas ser|fast rápido rápida rápidos rápidas ser
slow lento lenta lentos lentas ser|good bueno buena buenos buenas ser|bad malo mala malos malas ser
beautiful bonito bonita bonitos bonitas ser|ugly feo fea feos feas ser|expensive caro cara caros caras ser
cheap barato barata baratos baratas ser|rich rico rica ricos ricas ser|poor pobre pobre pobres pobres ser
strong fuerte fuerte fuertes fuertes ser|weak débil débil débiles débiles ser|heavy pesado pesada pesados pesadas ser
light ligero ligera ligeros ligeras ser|easy fácil fácil fáciles fáciles ser|difficult difícil difícil difíciles difíciles ser
funny divertido divertida divertidos divertidas ser|smart inteligente inteligente inteligentes inteligentes ser
famous famoso famosa famosos famosas ser|modern moderno moderna modernos modernas ser
round redondo redonda redondos redondas ser|soft blando blanda blandos blandas ser|hard duro dura duros duras ser
sweet dulce dulce dulces dulces ser|dark oscuro oscura oscuros oscuras ser|wide ancho ancha anchos anchas ser
narrow estrecho estrecha estrechos estrechas ser|deep profundo profunda profundos profundas ser
tired cansado cansada cansados cansadas estar|sick enfermo enferma enfermos enfermas estar
angry enfadado enfadada enfadados enfadadas estar|busy ocupado ocupada ocupados ocupadas estar
happy contento contenta contentos contentas estar|sad triste triste tristes tristes estar
full lleno llena llenos llenas estar|empty vacío vacía vacíos vacías estar|dirty sucio sucia sucios sucias estar
wet mojado mojada mojados mojadas estar|dry seco seca secos secas estar|hot caliente caliente calientes calientes estar
cold frío fría fríos frías estar|quiet tranquilo tranquila tranquilos tranquilas estar
pink rosa rosa rosa rosa ser|nice simpático simpática simpáticos simpáticas ser|kind amable amable amables amables ser
interesting interesante interesante interesantes interesantes ser|boring aburrido aburrida aburridos aburridas ser
important importante importante importantes importantes ser|delicious delicioso deliciosa deliciosos deliciosas ser
huge enorme enorme enormes enormes ser|dangerous peligroso peligrosa peligrosos peligrosas ser
favorite favorito favorita favoritos favoritas ser|fat gordo gorda gordos gordas ser|thin delgado delgada delgados delgadas ser
lazy perezoso perezosa perezosos perezosas ser|brave valiente valiente valientes valientes ser|shy tímido tímida tímidos tímidas ser
ready listo lista listos listas estar|bored aburrido aburrida aburridos aburridas estar|nervous nervioso nerviosa nerviosos nerviosas estar
worried preocupado preocupada preocupados preocupadas estar|excited emocionado emocionada emocionados emocionadas estar
"""

# verbs that also stand alone ("the dog eats" -> "el perro come")
ALSO_INTRANSITIVE = ("eat", "drink", "read", "write", "cook", "lose", "understand", "draw", "pay", "drive")

PRONOUNS: dict[str, tuple[str, str, str]] = {  # English -> (Spanish, person, gender used for agreement)
    "i": ("yo", "1sg", "m"), "you": ("tú", "2sg", "m"), "he": ("él", "3sg", "m"), "she": ("ella", "3sg", "f"),
    "we": ("nosotros", "1pl", "m"), "they": ("ellos", "3pl", "m"),
}
BE = {"ser": ("soy", "eres", "es", "somos", "son"), "estar": ("estoy", "estás", "está", "estamos", "están")}
ENGLISH_BE = {"1sg": "am", "2sg": "are", "3sg": "is", "1pl": "are", "3pl": "are"}
GOING = ("voy", "vas", "va", "vamos", "van")  # "going to" + infinitive -> "ir a" + infinitive
NUMBERS = {  # English -> Spanish (plural nouns only; "one" is the singular article un/una)
    "two": "dos", "three": "tres", "four": "cuatro", "five": "cinco", "six": "seis", "seven": "siete",
    "eight": "ocho", "nine": "nueve", "ten": "diez", "eleven": "once", "twelve": "doce", "thirteen": "trece",
    "fourteen": "catorce", "fifteen": "quince", "sixteen": "dieciséis", "seventeen": "diecisiete",
    "eighteen": "dieciocho", "nineteen": "diecinueve", "twenty": "veinte",
}
# determiner -> (masc. singular, fem. singular, masc. plural, fem. plural); None = not used in that number
DETERMINERS: dict[str, tuple[str | None, str | None, str | None, str | None]] = {
    "the": ("el", "la", "los", "las"), "a": ("un", "una", None, None), "one": ("un", "una", None, None),
    "some": (None, None, "unos", "unas"), "this": ("este", "esta", None, None),
    "these": (None, None, "estos", "estas"), "that": ("ese", "esa", None, None),
    "those": (None, None, "esos", "esas"), "my": ("mi", "mi", "mis", "mis"), "your": ("tu", "tu", "tus", "tus"),
    "his": ("su", "su", "sus", "sus"), "her": ("su", "su", "sus", "sus"),
    "our": ("nuestro", "nuestra", "nuestros", "nuestras"), "their": ("su", "su", "sus", "sus"),
    **{en: (None, None, es, es) for en, es in (NUMBERS | BIG_NUMBERS).items()},
}


@dataclass(frozen=True)
class Noun:
    en: str
    en_plural: str
    es: str
    es_plural: str
    gender: str  # "m" or "f"
    kind: str  # one of "patfdrlv"


@dataclass(frozen=True)
class Adjective:
    en: str
    forms: tuple[str, str, str, str]  # masc. sg, fem. sg, masc. pl, fem. pl
    copula: str  # "ser" or "estar"

    def agree(self, gender: str, plural: bool) -> str:
        return self.forms[2 * plural + (gender == "f")]


def _rows(table: str) -> list[list[str]]:
    return [row.split() for line in table.strip().splitlines() for row in line.split("|")]


NOUNS: dict[str, Noun] = {row[0]: Noun(*row) for row in _rows(_NOUNS)}
ADJECTIVES: dict[str, Adjective] = {row[0]: Adjective(row[0], tuple(row[1:5]), row[5]) for row in _rows(_ADJECTIVES)}
