"""Twelve everyday sentences a class types, with their Spanish, written before the grammar was extended to them.

They are the check of the extended grammar (:mod:`core.tasks.everyday_plus`): its splits keep every one of
them out of training and validation, and a model trained on it is held to getting at least eleven right. They use
the grammar's conventions (subject pronouns kept, a yes-no question in statement order inside "¿ ?", an object
pronoun before the conjugated verb, words and punctuation separated by spaces).
"""

from __future__ import annotations

NEW_EVERYDAY = {
    "Can you help me, please?": "¿ tú me puedes ayudar , por favor ?",
    "Yesterday I went to the market with my mother.": "ayer yo fui al mercado con mi madre .",
    "What do you want for your birthday?": "¿ qué quieres tú para tu cumpleaños ?",
    "Where does your brother live?": "¿ dónde vive tu hermano ?",
    "My sister is taller than my brother.": "mi hermana es más alta que mi hermano .",
    "I can't find my keys.": "yo no puedo encontrar mis llaves .",
    "We should go to school by bus.": "nosotros deberíamos ir a la escuela en autobús .",
    "She sees them every day.": "ella los ve todos los días .",
    "Who is your teacher?": "¿ quién es tu profesor ?",
    "He bought a book for his father.": "él compró un libro para su padre .",
    "When do you eat?": "¿ cuándo comes tú ?",
    "I am reading a book about animals.": "yo estoy leyendo un libro sobre animales .",
}
