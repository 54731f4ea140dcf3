"""The app in four languages under AppTest: the Attention playground and Masks in Japanese, Russian and Chinese
show no English sentence of their English messages (prose, captions, widget labels and help, chart titles and axes,
exports), and do show their own; the sidebar and the navigation are translated; the share link keeps ``lang``
and the browser's Accept-Language sets the default."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from google.protobuf.json_format import MessageToDict

from app import i18n, routes
from app.ui import language
from tests.helpers.apptest_helpers import open_page

PAGES = ["playground", "masks", "positional", "architecture", "self-attention"]
SHARED = ["glossary", "common", "charts"]  # words the two pages show from the shared messages


def _strings(value) -> Iterator[str]:
    """Every string inside a proto's dict, JSON specs (charts) opened."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        if value[:1] in "{[":
            try:
                yield from _strings(json.loads(value))
                return
            except ValueError:
                pass
        yield value


def shown(block) -> str:
    """Everything the block sends the browser as text: its elements' values, labels, help, options and chart specs,
    and its containers' labels (sections, expanders, popovers)."""
    parts: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.extend(_strings(MessageToDict(proto)))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(block)
    return "\n".join(parts)


def sentences(page: str, lang: str = i18n.DEFAULT) -> list[str]:
    """The literal pieces of ``page``'s messages in ``lang`` that read as a sentence (four words or more, outside
    the placeholders, the code and the Markdown marks)."""
    found = []
    for message in i18n.catalog(lang, page).values():
        prose = re.sub(r"`[^`]*`", "|", message.replace("{{", "{").replace("}}", "}"))  # code stays as written
        for piece in re.split(r"\{[^{}]*\}|\*\*|\*|\|", prose):
            piece = piece.strip(" .,:;()")
            if len(piece.split()) >= 4:
                found.append(piece)
    return found


@pytest.fixture(scope="module")
def english():
    return {page: sentences(page) for page in PAGES + SHARED + ["sidebar"]}


def _left_in_english(text: str, english: dict, pages: list[str]) -> list[str]:
    return [s for page in pages for s in english[page] if s in text]


def test_the_english_pages_show_their_english_sentences(runs, english):
    """The detector works: in English the same pages show many of these sentences."""
    for page in PAGES:
        at = open_page(page, query={"lang": "en"})
        assert len(_left_in_english(shown(at.main), english, [page])) > 15, page


@pytest.mark.parametrize("lang", ["ja", "ru", "zh"])
@pytest.mark.parametrize("page", PAGES)
def test_a_translated_page_shows_no_english_sentence(runs, english, page, lang):
    at = open_page(page, query={"lang": lang})  # every section open
    main, side = shown(at.main), shown(at.sidebar)
    assert _left_in_english(main, english, [page, *SHARED]) == []
    assert _left_in_english(side, english, ["sidebar"]) == []
    own = sentences(page, lang) if lang == "ru" else []
    title = i18n.text(lang, page, "opening.title")
    assert at.title[0].value == title
    assert i18n.text(lang, page, "opening.intro")[:40] in main
    assert sum(s in main for s in own) >= len(own) // 2, "the Russian prose is shown"
    assert i18n.text(lang, "sidebar", "checkpoint.header") in side
    assert at.query_params["lang"] == lang  # the share link keeps it


def test_a_chart_is_titled_in_the_language(runs):
    at = open_page("masks", query={"lang": "ja"})
    text = shown(at.main)
    for key in ("demo.without", "demo.key_position", "padding.chart_title"):
        assert i18n.text("ja", "masks", key) in text, key
    assert i18n.text("ja", "charts", "mask.may_attend") in text  # a mask's colour bar and hover


def test_the_navigation_is_in_the_language(runs, monkeypatch):
    built = []
    real = routes.navigation

    def navigation(lang=i18n.DEFAULT):
        sections = real(lang)
        built.append({name: [(p.title, p.url_path) for p in pages] for name, pages in sections.items()})
        return sections

    monkeypatch.setattr(routes, "navigation", navigation)
    open_page("masks", query={"lang": "zh"})
    at = open_page("masks", query={"lang": "en"})
    chinese, english = built[0], built[-1]
    assert list(chinese) == ["探索", "学习", "预训练模型"] and list(english) == ["Explore", "Learn", "Pretrained models"]
    assert [title for title, _ in chinese["学习"]][3:5] == ["注意力实验场", "掩码"]
    assert [path for pages in chinese.values() for _, path in pages] == \
        [path for pages in english.values() for _, path in pages]  # the same addresses in every language
    assert not at.exception


def test_the_picker_switches_the_language_and_the_link(runs):
    at = open_page("masks", query={"lang": "en"})
    assert at.title[0].value == "Masks"
    at.selectbox(key=language.KEY).set_value("ru").run()
    assert not at.exception
    assert at.title[0].value == "Маски" and at.query_params["lang"] == "ru"


def test_a_link_with_an_unknown_language_is_ignored(runs):
    at = open_page("masks", query={"lang": "xx"})
    assert at.title[0].value == "Masks" and at.session_state[language.KEY] == "en"


@pytest.mark.parametrize(("header", "title"), [("ja-JP,ja;q=0.9,en;q=0.5", "マスク"), ("fr-FR,fr", "Masks"),
                                                ("de;q=0.9,zh-CN;q=0.8", "掩码")])
def test_the_browsers_language_is_the_default(runs, monkeypatch, header, title):
    monkeypatch.setattr(language, "_accept_language", lambda: header)
    at = open_page("masks")
    assert at.title[0].value == title
    assert at.query_params["lang"] == at.session_state[language.KEY]  # the link carries it on from there


def test_the_link_wins_over_the_browser(runs, monkeypatch):
    monkeypatch.setattr(language, "_accept_language", lambda: "ja")
    at = open_page("masks", query={"lang": "ru"})
    assert at.title[0].value == "Маски"
