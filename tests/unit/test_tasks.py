"""Tests for the built-in classroom tasks in ``core.tasks``."""

from __future__ import annotations

import datetime
import functools
import random
import re
import time
from collections import Counter

import pytest

from core.tasks import (
    TASKS,
    Example,
    Task,
    TaskData,
    copy,
    dates,
    get_task,
    letters,
    reverse,
    sentiment,
    sort,
    translation,
)

NAMES = ["copy", "reverse", "sort", "dates", "addition", "translation", "sentiment", "lm"]
SMALL = (300, 40, 40)


@functools.cache
def default_data(name: str) -> TaskData:
    """The task's data at its default sizes and seed 0, generated once per test run."""
    return TASKS[name].generate(0)


def all_examples(data: TaskData) -> list[Example]:
    return (
        data.train + data.validation + data.test + [e for extra in data.extra_tests.values() for e in extra]
    )


# ---------------------------------------------------------------- registry


def test_registry_order_and_lookup():
    assert list(TASKS) == NAMES
    for name in NAMES:
        assert get_task(name) is TASKS[name]
        assert TASKS[name].name == name
        assert isinstance(TASKS[name], Task)


def test_unknown_task_lists_valid_names():
    with pytest.raises(ValueError) as error:
        get_task("nope")
    for name in NAMES:
        assert name in str(error.value)


EXPECTED_KINDS = {
    "copy": ("encoder-decoder", "char", "exact_match"),
    "reverse": ("encoder-decoder", "char", "exact_match"),
    "sort": ("encoder-decoder", "char", "exact_match"),
    "dates": ("encoder-decoder", "char", "exact_match"),
    "addition": ("encoder-decoder", "char", "exact_match"),
    "translation": ("encoder-decoder", "word", "exact_match"),
    "sentiment": ("encoder", "word", "accuracy"),
    "lm": ("decoder", "char", "perplexity"),
}


@pytest.mark.parametrize("name", NAMES)
def test_task_metadata(name):
    task = TASKS[name]
    assert (task.architecture, task.tokenizer_kind, task.metric) == EXPECTED_KINDS[name]
    assert task.description.strip() and task.description.endswith(".")
    assert 4 <= len(task.examples) <= 6 and all(isinstance(e, str) and e for e in task.examples)
    assert isinstance(task.probe, str) and task.probe
    assert task.labels == (("negative", "positive") if name == "sentiment" else None)


# ---------------------------------------------------------------- every task


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_from_seed(name):
    task = TASKS[name]
    first = task.generate(7, SMALL)
    assert first == task.generate(7, SMALL)
    assert first != task.generate(8, SMALL)


@pytest.mark.parametrize("name", NAMES)
def test_leaves_global_random_alone(name):
    random.seed(1234)
    state = random.getstate()
    TASKS[name].generate(3, SMALL)
    assert random.getstate() == state


@pytest.mark.parametrize("name", NAMES)
def test_sizes_as_requested(name):
    task = TASKS[name]
    data = default_data(name)
    count = (lambda split: len({e.source for e in split})) if name == "sort" else len  # sort repeats short ones
    assert (count(data.train), len(data.validation), len(data.test)) == task.default_sizes
    small = task.generate(1, (50, 7, 9))
    assert (count(small.train), len(small.validation), len(small.test)) == (50, 7, 9)
    assert all(isinstance(e, Example) for e in all_examples(data))


def test_sort_repeats_its_shortest_training_strings_and_nothing_else():
    data = TASKS["sort"].generate(0, (60000, 500, 500))
    counts = Counter(e.source for e in data.train)
    assert {counts[letter] for letter in letters.ALPHABET} == {sort.SHORT_REPEATS[1]}
    for length in range(2, letters.MAX_LENGTH + 1):
        assert {n for s, n in counts.items() if len(s) == length} == {sort.SHORT_REPEATS.get(length, 1)}
    assert {e.source for e in data.validation + data.test}.isdisjoint(counts)


@pytest.mark.parametrize("name", NAMES)
def test_no_overlap_between_splits(name):
    data = default_data(name)
    train = list({e.source: e for e in data.train}) if name == "sort" else [e.source for e in data.train]
    parts = [data.validation, data.test, *data.extra_tests.values()]
    sources = train + [e.source for part in parts for e in part]
    assert len(sources) == len(set(sources))


@pytest.mark.parametrize("name", NAMES)
def test_generation_is_fast(name):
    start = time.process_time()  # this process's CPU time: other load on the machine does not count
    TASKS[name].generate(11)
    # a guard against accidental blow-ups, not a benchmark: about 1.5 CPU-s per 30,000 examples
    assert time.process_time() - start < 3.0 * max(1.0, sum(TASKS[name].default_sizes) / 30_000)


@pytest.mark.parametrize("name", NAMES)
def test_examples_and_probe_use_training_characters(name):
    data = default_data(name)
    unit = (lambda s: re.findall(r"\w+|[^\w\s]+", s)) if TASKS[name].tokenizer_kind == "word" else list
    vocab = {token for e in data.train for token in unit(e.source)}
    for text in (*TASKS[name].examples, TASKS[name].probe):
        text = TASKS[name].normalize_input(text)[0]  # e.g. "I have cats" -> "i have cats"
        assert set(unit(text)) <= vocab, text


# ---------------------------------------------------------------- copy / reverse / sort


@pytest.mark.parametrize(
    "name, transform",
    [
        ("copy", lambda s: s),
        ("reverse", lambda s: s[::-1]),
        ("sort", lambda s: "".join(sorted(s))),
    ],
)
def test_letter_tasks(name, transform):
    data = default_data(name)
    lengths = set()
    for e in data.train + data.validation + data.test:
        assert e.target == transform(e.source)
        assert set(e.source) <= set(letters.ALPHABET) and " " not in e.source
        lengths.add(len(e.source))
    assert lengths == set(range(letters.MIN_LENGTH, letters.MAX_LENGTH + 1))
    assert TASKS[name].trained_lengths == (letters.MIN_LENGTH, letters.MAX_LENGTH) == (1, 24)
    # longer strings: every length up to twice the longest trained, to report generalisation
    longer = letters.longer_examples(TASKS[name])
    assert longer == letters.longer_examples(TASKS[name]) and not data.extra_tests  # splits unchanged
    assert all(e.target == transform(e.source) for e in longer)
    counts = Counter(len(e.source) for e in longer)
    assert counts == dict.fromkeys(range(letters.MAX_LENGTH + 1, 2 * letters.MAX_LENGTH + 1), letters.LONGER_PER_LENGTH)
    for text in (*TASKS[name].examples, TASKS[name].probe):
        assert set(text) <= set(letters.ALPHABET)
        assert letters.MIN_LENGTH <= len(text) <= letters.MAX_LENGTH


@pytest.mark.parametrize("sizes", [None, (60000, 500, 500)])  # the defaults and sort's shipped run
def test_letter_splits_stay_disjoint_with_the_few_shortest_strings_in_training(sizes):
    # one letter gives only 12 strings and two letters 144: drawn many times, they are seen first
    # and land in the training split, so the held-out splits stay disjoint from it
    data = TASKS["copy"].generate(0, sizes)
    train, held_out = {e.source for e in data.train}, [e.source for e in data.validation + data.test]
    assert train.isdisjoint(held_out) and len(set(held_out)) == len(held_out)
    assert set(letters.ALPHABET) <= train
    assert sum(len(s) == 2 for s in train) >= 128
    test_lengths = Counter(len(e.source) for e in data.test)
    assert sum(test_lengths[n] for n in range(3, letters.MAX_LENGTH + 1)) >= 0.98 * len(data.test)
    assert test_lengths[letters.MAX_LENGTH] >= 10


def test_the_app_says_what_a_letter_model_was_trained_on():
    from core.text.inputs import TextInput, length_note, trained_lengths_note
    from core.text.tokenizer import Tokenizer

    shortest, longest = TASKS["reverse"].trained_lengths
    assert trained_lengths_note("reverse") == f"Trained on inputs of {shortest}–{longest} characters."
    assert trained_lengths_note("translation") is None and trained_lengths_note(None) is None
    tokenizer = Tokenizer.train("char", [letters.ALPHABET])
    for text, warned in (("a", False), ("a" * longest, False), ("a" * (longest + 1), True)):
        item = TextInput(text, text, [], tokenizer.encode(text))
        length_note(item, "reverse")
        assert bool(item.notes) == warned, text


def test_letter_spot_checks():
    assert reverse.reverse_letters("gbdka") == "akdbg"
    assert sort.sort_letters("gbdka") == "abdgk"
    assert copy.copy_letters("gbdka") == "gbdka"
    sample = TASKS["sort"].make(random.Random(2), 50)
    assert any(e.source != e.target for e in sample)


# ---------------------------------------------------------------- addition


def test_addition():
    data = default_data("addition")
    widths = set()
    for e in all_examples(data):
        match = re.fullmatch(r"(0|[1-9]\d{0,2})\+(0|[1-9]\d{0,2})", e.source)
        assert match, e.source
        assert e.target == str(int(match[1]) + int(match[2]))
        widths.update((len(match[1]), len(match[2])))
    assert widths == {1, 2, 3}
    assert any(len(e.target) == 4 for e in data.train)


# ---------------------------------------------------------------- dates

MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
DAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def month_number(word: str) -> int:
    word = word.lower()
    for number, name in enumerate(MONTH_NAMES, 1):
        if word in (name, name[:3]):
            return number
    raise ValueError(word)


def full_year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        return 1900 + year if year >= 50 else 2000 + year
    return year


def parse_date(text: str) -> tuple[datetime.date, str]:
    """Independent parser: the date a source means, and the shape it was written in."""
    lower = text.lower()
    weekday = None
    if m := re.fullmatch(r"([a-z]+),? (\d{1,2}) ([a-z]+) (\d{4})", lower):
        weekday, day, month, year, shape = m[1], m[2], m[3], m[4], "weekday"
    elif m := re.fullmatch(r"(\d{1,2}) ([a-z]+) (\d{4})", lower):
        day, month, year, shape = m[1], m[2], m[3], "day month year"
    elif m := re.fullmatch(r"([a-z]+) (\d{1,2}), (\d{4}|\d{2})", lower):
        month, day, year, shape = m[1], m[2], m[3], "month day, year"
    elif m := re.fullmatch(r"(\d{2})/(\d{2})/(\d{4})", lower):
        day, month, year, shape = m[1], int(m[2]), m[3], "dd/mm/yyyy"
    elif m := re.fullmatch(r"(\d{1,2})\.(\d{1,2})\.(\d{4}|\d{2})", lower):
        day, month, year, shape = m[1], int(m[2]), m[3], "d.m.y"
    elif m := re.fullmatch(r"(\d{4})/(\d{2})/(\d{2})", lower):
        year, month, day, shape = m[1], int(m[2]), m[3], "yyyy/mm/dd"
    elif m := re.fullmatch(r"(\d{1,2})(st|nd|rd|th) of ([a-z]+) (\d{4})", lower):
        day, month, year, shape = m[1], m[3], m[4], "ordinal"
        expected = (
            {"1": "st", "2": "nd", "3": "rd"}.get(day[-1], "th") if day not in ("11", "12", "13") else "th"
        )
        assert m[2] == expected, text
    elif m := re.fullmatch(r"(\d{2})-([a-z]{3})-(\d{4})", lower):
        day, month, year, shape = m[1], m[2], m[3], "dd-mon-yyyy"
    else:
        raise AssertionError(f"unparseable date {text!r}")
    if isinstance(month, str):
        month = month_number(month)
    if text == lower:
        shape += " (lowercase)"
    date = datetime.date(full_year(year), month, int(day))
    if weekday is not None:
        assert weekday in (DAY_NAMES[date.weekday()], DAY_NAMES[date.weekday()][:3]), (
            f"wrong weekday in {text!r}"
        )
    return date, shape


def test_date_parser_catches_wrong_weekday():
    assert parse_date("Friday, 5 March 2021")[0] == datetime.date(2021, 3, 5)
    with pytest.raises(AssertionError):
        parse_date("Thursday, 5 March 2021")


def test_dates_every_example_maps_to_its_iso_date():
    data = default_data("dates")
    shapes = set()
    for e in all_examples(data):
        date, shape = parse_date(e.source)
        shapes.add(shape)
        assert e.target == date.isoformat()
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", e.target)
        assert datetime.date(1900, 1, 1) <= date <= datetime.date(2099, 12, 31)
        assert len(e.source) <= 32
    assert len(shapes) >= 8
    years = {e.target[:2] for e in data.train}
    assert years == {"19", "20"}


def test_dates_cover_every_decade_1900_to_2099_evenly():
    data = default_data("dates")
    decades = [f"{year}s" for year in range(1900, 2100, 10)]
    train = Counter(dates.decade(e) for e in data.train)
    assert sorted(train) == decades
    assert min(train.values()) >= 0.8 * len(data.train) / 20  # uniform by day, so about 5 % each
    test = Counter(dates.decade(e) for e in data.test)
    assert test == {decade: len(data.test) // 20 for decade in decades}  # the same number per decade


def test_two_digit_years_only_where_they_are_unambiguous():
    data = default_data("dates")
    two_digit = [e for e in all_examples(data) if not re.search(r"\d{4}", e.source)]
    assert len(two_digit) > 1000
    assert all(1950 <= int(e.target[:4]) <= 2049 for e in two_digit)
    early = [e for e in data.train if e.target < "1950"]
    assert early and all(re.search(r"\d{4}", e.source) for e in early)


@pytest.mark.parametrize("form", list(dates.FORMS))
def test_each_date_form_parses_back(form):
    days = [
        datetime.date(1950, 1, 1),
        datetime.date(1999, 12, 31),
        datetime.date(2000, 2, 29),
        datetime.date(2011, 11, 12),
        datetime.date(2021, 3, 5),
        datetime.date(2022, 8, 23),
        datetime.date(2049, 12, 31),
    ]
    if form not in dates.TWO_DIGIT_FORMS:
        days += [datetime.date(1900, 1, 1), datetime.date(1929, 2, 28), datetime.date(2099, 12, 31)]
    for day in days:
        text = dates.FORMS[form](day)
        assert parse_date(text)[0] == day, text


def test_date_conventions():
    rendered = {form(datetime.date(2021, 3, 5)) for form in dates.FORMS.values()}
    for expected in [
        "5 March 2021",
        "March 5, 2021",
        "Mar 5, 21",
        "05/03/2021",
        "5.3.2021",
        "2021/03/05",
        "Friday, 5 March 2021",
        "5th of March 2021",
        "05-Mar-2021",
    ]:
        assert expected in rendered
    assert len(dates.FORMS) >= 8
    assert "day-first" in dates.TASK.description and "50-99" in dates.TASK.description
    for text in (*dates.TASK.examples, dates.TASK.probe):
        parse_date(text)


# ---------------------------------------------------------------- translation

from core.tasks import activities, lexicon, names, phrases, verbs  # noqa: E402

ES_NOUNS = {  # Spanish noun form -> (gender, plural)
    form: (noun.gender, plural)
    for noun in lexicon.NOUNS.values()
    for plural, form in ((False, noun.es), (True, noun.es_plural))
}
EN_NOUNS = {form: singular for singular, noun in lexicon.NOUNS.items() for form in (noun.en, noun.en_plural)}
ES_ADJECTIVES = {form: name for name, adj in lexicon.ADJECTIVES.items() for form in adj.forms}
ES_DETERMINERS: dict[str, set[tuple[str, bool]]] = {}  # form -> the (gender, plural) it may go with
for _forms in lexicon.DETERMINERS.values():
    for _i, _form in enumerate(_forms):
        if _form:
            ES_DETERMINERS.setdefault(_form, set()).add(("mf"[_i % 2], _i >= 2))
ES_VERB_PERSON: dict[str, set[str]] = {}  # conjugated form -> persons
for _verb in verbs.VERBS.values():
    for _forms in (_verb.present, _verb.preterite):
        for _person, _form in zip(verbs.PERSONS, _forms):
            ES_VERB_PERSON.setdefault(_form, set()).add(_person)
for _forms in lexicon.BE.values():
    for _person, _form in zip(verbs.PERSONS, _forms):
        ES_VERB_PERSON.setdefault(_form, set()).add(_person)
ES_PRONOUNS = {es: (person, gender) for es, person, gender in lexicon.PRONOUNS.values()}
ES_FEMININE_FORMS = {form for forms in activities.FEMININE.values() for form in forms}  # said of a woman


def english_pairs(text: str) -> set[tuple[str, str]]:
    """(noun, adjective) pairs in an English sentence: an adjective right before a noun."""
    words = text.replace("?", " ").replace(".", " ").replace(",", " ").split()
    return {(EN_NOUNS[words[i + 1]], w) for i, w in enumerate(words[:-1])
            if w in lexicon.ADJECTIVES and words[i + 1] in EN_NOUNS}


def test_translation_spot_checks():
    assert translation.noun_phrase(("the", "red", "car", False)) == ("the red car", "el coche rojo")
    assert translation.noun_phrase(("the", "black", "cat", False)) == ("the black cat", "el gato negro")
    assert translation.noun_phrase(("the", "red", "house", True)) == ("the red houses", "las casas rojas")
    assert translation.noun_phrase(("a", "old", "house", False)) == ("an old house", "una casa vieja")
    assert translation.noun_phrase(("my", "green", "flower", True)) == ("my green flowers", "mis flores verdes")
    assert translation.noun_phrase(("our", None, "hand", False)) == ("our hand", "nuestra mano")
    assert translation.noun_phrase(("three", "young", "lion", True)) == ("three young lions", "tres leones jóvenes")
    assert translation.noun_phrase(("these", None, "map", True)) == ("these maps", "estos mapas")
    assert translation.clause("i", "have", ("", None, "cat", True)) == ("i have cats", "yo tengo gatos")
    assert translation.clause(("the", "big", "dog", False), "see", ("a", "small", "cat", False)) == (
        "the big dog sees a small cat", "el perro grande ve un gato pequeño")
    animal, street = ("the", None, "animal", False), ("the", None, "street", False)
    assert translation.clause(animal, "cross", street, tense="past", negated=True, contracted=True) == (
        "the animal didn't cross the street", "el animal no cruzó la calle")
    assert translation.clause(animal, "cross", street, negated=True) == (
        "the animal does not cross the street", "el animal no cruza la calle")
    assert translation.clause("we", "cross", street, tense="past") == (
        "we crossed the street", "nosotros cruzamos la calle")
    assert translation.clause("i", "cross", street, tense="past") == ("i crossed the street", "yo crucé la calle")
    assert translation.clause("you", "have", ("", None, "cat", True), question=True) == (
        "do you have cats?", "¿ tú tienes gatos ?")
    assert translation.clause("she", "sleep", tense="past") == ("she slept", "ella durmió")
    assert translation.predicate("she", "tired") == ("she is tired", "ella está cansada")
    assert translation.predicate(("the", "red", "car", False), "fast") == (
        "the red car is fast", "el coche rojo es rápido")
    assert translation.predicate(("the", None, "house", True), "old", negated=True, contracted=True) == (
        "the houses aren't old", "las casas no son viejas")
    assert translation.predicate("we", "happy", question=True) == ("are we happy?", "¿ nosotros estamos contentos ?")
    with pytest.raises(ValueError):
        translation.noun_phrase(("a", None, "cat", True))


def test_translation_lecture_examples_are_in_the_training_split():
    data = default_data("translation")
    for english, spanish in translation.LECTURE_EXAMPLES.items():
        assert Example(translation.normalize(english), spanish) in data.train
    assert translation.LECTURE_EXAMPLES["I have cats"] == "yo tengo gatos"


def test_translation_input_is_lower_cased_and_says_so():
    task = TASKS["translation"]
    assert task.normalize_input("I have cats") == ("i have cats", True)
    assert task.normalize_input("i have cats") == ("i have cats", False)
    assert task.normalize_input("The Animal Didn\u2019t Cross") == ("the animal didn't cross", True)
    assert task.normalize_input("İ") == ("İ", False)  # lower() would change the length: left alone
    assert TASKS["copy"].normalize_input("AbC") == ("AbC", False)


def _check_agreement(e: Example) -> None:
    es = e.target.split()
    for i, word in enumerate(es):
        if word in ES_NOUNS and not (i > 0 and (es[i - 1] in ES_PRONOUNS or es[i - 1] in ES_NOUNS)):
            gender, plural = ES_NOUNS[word]
            if i > 0 and es[i - 1] in ES_DETERMINERS:
                stressed_a = word in phrases.STRESSED_A and es[i - 1] in ("el", "un")  # "el agua"
                woman = word in ES_FEMININE_FORMS and ("f", plural) in ES_DETERMINERS[es[i - 1]]  # "la dentista"
                assert stressed_a or woman or (gender, plural) in ES_DETERMINERS[es[i - 1]], e
            if i + 1 < len(es) and es[i + 1] in ES_ADJECTIVES:
                adjective = lexicon.ADJECTIVES[ES_ADJECTIVES[es[i + 1]]]
                assert es[i + 1] == adjective.agree(gender, plural), e
    words = [w for w in es if w not in ("¿", "?", ".", "no", "dónde")]
    if words and words[0] in ES_PRONOUNS and len(words) > 1 and words[1] in ES_VERB_PERSON:
        person, gender = ES_PRONOUNS[words[0]]
        assert person in ES_VERB_PERSON[words[1]], e
        copula = any(words[1] in forms for forms in lexicon.BE.values())  # not "tenemos frío" (a noun)
        if len(words) == 3 and copula and words[2] in ES_ADJECTIVES:  # "ella está cansada"
            adjective = lexicon.ADJECTIVES[ES_ADJECTIVES[words[2]]]
            assert words[2] == adjective.agree(gender, person in ("1pl", "3pl")), e


def test_translation_agreement_in_all_data():
    data = default_data("translation")
    for e in all_examples(data):
        assert e.source == e.source.lower() and e.target == e.target.lower(), e
        assert ("?" in e.target) == (e.target.startswith("¿ ") and e.target.endswith(" ?")), e
        _check_agreement(e)


def test_translation_held_out_pairs_and_length_buckets():
    data = default_data("translation")
    held = translation.HELD_OUT_PAIRS
    total = len(lexicon.NOUNS) * len(lexicon.ADJECTIVES)
    assert 0.08 * total <= len(held) <= 0.25 * total
    held_names = lambda text: set(re.findall(r"\w+", text)) & names.HELD_OUT_NAMES  # noqa: E731
    for e in data.train + data.validation:
        assert not english_pairs(e.source) & held and not held_names(e.source), e
    for e in data.test:
        assert english_pairs(e.source) & held or held_names(e.source), e
    assert sum(bool(held_names(e.source)) for e in data.test) > len(data.test) // 20  # unseen names are tested
    seen_pairs = {pair for e in data.train for pair in english_pairs(e.source)}
    assert {noun for noun, _ in seen_pairs} == set(lexicon.NOUNS)
    assert {adjective for _, adjective in seen_pairs} == set(lexicon.ADJECTIVES)
    for text in (*translation.TASK.examples, translation.TASK.probe, *translation.LECTURE_EXAMPLES):
        assert not english_pairs(translation.normalize(text)) & held
    buckets = Counter(translation.length_bucket(e) for e in data.test)
    assert buckets == {bucket: len(data.test) // 4 for bucket in translation.TEST_BUCKETS}
    assert translation.length_bucket(Example("the black cat", "")) == "2-4"
    assert translation.length_bucket(Example("the animal didn't cross the street", "")) == "5-7"
    assert translation.length_bucket(Example("my mother reads a book every night.", "")) == "5-7"
    assert translation.length_bucket(Example("the animal didn't cross the street because it was too tired", "")) == "8-11"
    assert translation.length_bucket(Example("i am very hungry and my brother wants to play football now", "")) == "12+"


def test_translation_vocabulary_and_every_test_word_seen_in_training():
    data = default_data("translation")
    spelled = translation.TASK.spelled  # names and digits: read letter by letter, never in the vocabulary
    words = lambda text: {w for w in re.findall(r"\w+|[^\w\s]+", text) if not spelled(w)}  # noqa: E731
    source_vocab = {w for e in data.train for w in words(e.source)}
    target_vocab = {w for e in data.train for w in words(e.target)}
    for e in data.validation + data.test:
        assert words(e.source) <= source_vocab, e
        assert words(e.target) <= target_vocab, e
    assert len({w for w in source_vocab if w.isalpha()}) >= 1300  # English word forms a class can type
    assert len(lexicon.NOUNS) >= 300 and len(lexicon.ADJECTIVES) >= 75 and len(verbs.VERBS) >= 90
    for kind in ("pronouns", "negation", "questions", "numbers", "possessives", "past", "future", "because",
                 "please", "like", "weather", "digits"):
        marker = {"pronouns": " i ", "negation": "n't", "questions": "?", "numbers": " three ",
                  "possessives": " my ", "past": " no cruzó ", "future": " will ", "because": " porque ",
                  "please": " por favor ", "like": " me gusta ", "weather": " hace mucho frío ", "digits": " 3 "}[kind]
        text = " ".join(f" {e.source} {e.target} " for e in data.train)
        assert marker in text, kind


# ---------------------------------------------------------------- sentiment

PAST = {past: verb for verb, (past, _) in sentiment.VERBS.items()}


def oracle_label(text: str) -> str:
    """Independent labelling: polarity word, flipped once by a negation word."""
    words = text.split()
    positive_words = set(sentiment.POSITIVE) | {
        w for v, (p, pos) in sentiment.VERBS.items() if pos for w in (v, p)
    }
    polarity = any(w in positive_words for w in words)
    negated = "not" in words or "never" in words
    return "positive" if polarity != negated else "negative"


def subject_predicate(text: str) -> tuple[str, str] | None:
    words = text.split()
    if "the" not in words:
        return None
    subject = "the " + words[words.index("the") + 1]
    predicate = next(
        w for w in words if w in sentiment.POSITIVE + sentiment.NEGATIVE or w in sentiment.VERBS or w in PAST
    )
    return subject, PAST.get(predicate, predicate)


def is_negated(text: str) -> bool:
    return bool({"not", "never"} & set(text.split()))


@pytest.mark.parametrize(
    "plain, negated, label",
    [
        ("the movie was really great", "the movie was not really great", "positive"),
        ("the food was terrible", "the food was not terrible at all", "negative"),
        ("bad", "not bad", "negative"),
        ("i liked the acting", "i did not like the acting", "positive"),
        ("i hated the plot", "i never hated the plot", "negative"),
        ("the ending is boring", "the ending is never boring", "negative"),
    ],
)
def test_negation_flips_label(plain, negated, label):
    other = "positive" if label == "negative" else "negative"
    assert sentiment.label_of(plain) == label
    assert sentiment.label_of(negated) == other


def test_sentiment_labels_and_balance():
    data = default_data("sentiment")
    for part in (data.train, data.validation, data.test, data.extra_tests["negation"]):
        positives = sum(e.target == "positive" for e in part)
        assert abs(2 * positives - len(part)) <= max(1, len(part) // 500)  # train: short phrases added
        for e in part:
            assert e.target == oracle_label(e.source) == sentiment.label_of(e.source), e
    negated_share = sum(is_negated(e.source) for e in data.train) / len(data.train)
    assert 0.3 <= negated_share <= 0.7
    assert any(e.source == "not bad" for e in all_examples(data))


def test_sentiment_single_words_and_short_phrases_are_trained_on():
    data = default_data("sentiment")
    train = {e.source: e.target for e in data.train}
    for text, label in [("boring", "negative"), ("very boring", "negative"), ("not boring", "positive"),
                        ("great", "positive"), ("boring movie", "negative"), ("i loved it", "positive"),
                        ("i did not like it", "negative"), ("not bad", "positive")]:
        assert train.get(text) == label, text
    for word in sentiment.POSITIVE + sentiment.NEGATIVE:
        assert word in train
    short = data.extra_tests["short"]
    assert len(short) >= 100 and abs(2 * sum(e.target == "positive" for e in short) - len(short)) <= 1
    for e in short:
        assert e.source not in train and e.target == oracle_label(e.source)
        noun, adjective = e.source.split()[-1], e.source.split()[-2]
        assert (noun, adjective) in sentiment.SHORT_HELD_OUT
    assert TASKS["sentiment"].normalize_input("Boring") == ("boring", True)


def test_sentiment_negation_set_is_held_out():
    data = default_data("sentiment")
    negation = data.extra_tests["negation"]
    assert len(negation) == sentiment.NEGATION_SIZE == 300
    for e in negation:
        assert is_negated(e.source), e
        assert subject_predicate(e.source) in sentiment.HELD_OUT_PAIRS, e
    for e in data.train + data.validation + data.test:
        if is_negated(e.source):
            assert subject_predicate(e.source) not in sentiment.HELD_OUT_PAIRS, e
    plain_train = {subject_predicate(e.source) for e in data.train if not is_negated(e.source)}
    used = {subject_predicate(e.source) for e in negation}
    assert len(used & plain_train) >= 0.9 * len(used)
    for text in (*sentiment.TASK.examples, sentiment.TASK.probe):
        assert not (is_negated(text) and subject_predicate(text) in sentiment.HELD_OUT_PAIRS)
        sentiment.label_of(text)


# ---------------------------------------------------------------- lm


def test_lm_mixes_the_grammars():
    data = default_data("lm")
    spanish = {"el", "la", "los", "las", "un", "una", "yo", "tú", "él", "ella", "nosotros", "ellos"}
    reviews = set(sentiment.POSITIVE + sentiment.NEGATIVE) | set(PAST) | set(sentiment.VERBS)
    counts = {"spanish": 0, "review": 0, "english": 0}
    for e in all_examples(data):
        assert e.target == "" and 0 < len(e.source) <= 60
        words = set(e.source.split())
        kind = "spanish" if words & spanish else "review" if words & reviews else "english"
        counts[kind] += 1
    for count in counts.values():
        assert count >= 0.2 * len(all_examples(data)), counts


def test_probe_targets_are_the_correct_outputs():
    assert TASKS["copy"].probe_example == Example("gbdkajc", "gbdkajc")
    assert TASKS["reverse"].probe_target == TASKS["reverse"].probe[::-1]
    assert TASKS["sort"].probe_target == "".join(sorted(TASKS["sort"].probe))
    left, right = TASKS["addition"].probe.split("+")
    assert int(TASKS["addition"].probe_target) == int(left) + int(right)
    assert TASKS["dates"].probe_target == "2021-03-05"
    assert sentiment.label_of(TASKS["sentiment"].probe) == TASKS["sentiment"].probe_target
    english, spanish = translation.clause(("the", "big", "dog", False), "see", ("a", "small", "cat", False))
    assert TASKS["translation"].probe_example == Example(english, spanish)
    assert TASKS["lm"].probe_target == ""


def test_nearest_known_words_for_unknown_input():
    from core.tasks.base import nearest_known
    from core.tasks.wordlist import GRAMMAR_WORDS

    # the grammar's words (training sources also hold made-up names such as "kais", copied letter by letter)
    vocabulary = GRAMMAR_WORDS
    assert "cats" in nearest_known("kats", vocabulary)
    assert nearest_known("Cats", vocabulary)[0] == "cats"
    assert nearest_known("qqqqqq", vocabulary) == []
