"""The message files (app/i18n): every key of every page in every language, with the same placeholders; the
English fallback with its warning; the Accept-Language choice; CJK titles wrapped between characters."""

from __future__ import annotations

import logging
import string

import pytest

from app import i18n
from app.charts import grids

OTHERS = [lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT]


def test_the_four_languages_each_have_every_page():
    assert list(i18n.LANGUAGES) == ["en", "ja", "ru", "zh"]
    assert {"nav", "sidebar", "playground", "masks", "glossary", "charts", "common", "lesson", "lesson-stages",
            "lesson-decoder", "lesson-quiz"} <= set(i18n.pages())
    for lang in i18n.LANGUAGES:
        assert sorted(p.stem for p in (i18n.MESSAGES / lang).glob("*.toml")) == i18n.pages(), lang


@pytest.mark.parametrize("lang", OTHERS)
@pytest.mark.parametrize("page", i18n.pages())
def test_every_key_exists_with_the_same_placeholders(lang, page):
    english, other = i18n.catalog(i18n.DEFAULT, page), i18n.catalog(lang, page)
    assert sorted(set(english) - set(other)) == [], "missing"
    assert sorted(set(other) - set(english)) == [], "not in English"
    for key, message in english.items():
        assert i18n.placeholders(other[key]) == i18n.placeholders(message), key
        assert other[key].strip(), key


@pytest.mark.parametrize("lang", OTHERS)
@pytest.mark.parametrize("page", ["playground", "masks", "glossary", "sidebar", "nav", "lesson", "lesson-stages",
                                  "lesson-decoder", "lesson-quiz", "charts", "positional", "architecture",
                                  "self-attention", "lesson-whisper"])
def test_the_prose_is_translated_not_copied(lang, page):
    """A sentence of four words or more is never left in English (short names such as "softmax" may be)."""
    english, other = i18n.catalog(i18n.DEFAULT, page), i18n.catalog(lang, page)
    copied = [k for k, v in english.items() if len(v.split()) >= 4 and other[k] == v]
    assert copied == []


def test_every_message_formats_with_its_named_placeholders():
    """No positional ``{}`` and no stray brace (a LaTeX brace is doubled): each message formats with its names."""
    for lang in i18n.LANGUAGES:
        for page in i18n.pages():
            for key, message in i18n.catalog(lang, page).items():
                fields = [f for _, f, _, _ in string.Formatter().parse(message) if f is not None]
                assert all(fields), (lang, page, key)
                message.format(**dict.fromkeys(fields, 0.5))


def test_numbers_are_the_codes_in_every_language():
    for lang in i18n.LANGUAGES:
        shown = i18n.text(lang, "masks", "demo.result", n_zero=15, n_masked=15, future=0.3456)
        assert "15" in shown and "35%" in shown, lang


def test_a_missing_key_falls_back_to_english_with_a_warning(tmp_path, monkeypatch, caplog):
    for lang, body in (("en", 'a = "English only"\nb = "both {n}"\n'), ("ja", 'b = "両方 {n}"\n')):
        (tmp_path / lang).mkdir()
        (tmp_path / lang / "page.toml").write_text(f"[s]\n{body}", encoding="utf-8")
    monkeypatch.setattr(i18n, "MESSAGES", tmp_path)
    i18n.catalog.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="app.i18n"):
            assert i18n.text("ja", "page", "s.b", n=3) == "両方 3"
            assert caplog.records == []
            assert i18n.text("ja", "page", "s.a") == "English only"
        assert "page/s.a missing in ja" in caplog.text
        with pytest.raises(KeyError):
            i18n.text("ja", "page", "s.nowhere")
    finally:
        i18n.catalog.cache_clear()


@pytest.mark.parametrize(("header", "expected"), [
    ("ja-JP,ja;q=0.9,en-US;q=0.8,en;q=0.7", "ja"),
    ("ru", "ru"),
    ("zh-CN,zh;q=0.9", "zh"),
    ("de-DE,de;q=0.9,ru;q=0.5,ja;q=0.3", "ru"),  # the best the app has, by weight
    ("en;q=0.2, ja;q=0.8", "ja"),
    ("fr-FR,fr;q=0.9", None),
    ("ja;q=0", None),  # q=0: "not this one"
    ("ja;q=abc", None),
    ("", None),
    (None, None),
])
def test_accept_language_picks_the_best_of_the_four(header, expected):
    assert i18n.from_accept_language(header) == expected


def test_cjk_titles_wrap_between_characters_and_latin_between_words():
    japanese = "マスクなし：重みが未来へ漏れます"
    lines = grids._wrapped(japanese, 14, 120)
    assert len(lines) > 1 and "".join(lines) == japanese
    assert all(grids._length(line) <= max(int(120 / (0.55 * 14)), 12) for line in lines)
    assert not any(line.startswith(("：", "。", "、")) for line in lines)  # no line opens with closing punctuation
    english = "Without the mask: weight leaks to the future"
    assert " ".join(grids._wrapped(english, 14, 120)) == english
    assert grids._wrapped("Без маски: вес утекает в будущее", 14, 150) == ["Без маски: вес", "утекает в будущее"]
