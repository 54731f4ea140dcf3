"""How tokens are written on the charts (``app.charts.base.visible`` and the axis labels built on it): a
whitespace or control character is never invisible, and every other character is itself."""

from __future__ import annotations

from app.charts.attention import row_labels
from app.charts.base import label_tokens, visible


def test_whitespace_and_control_characters_are_drawn_as_symbols():
    assert visible(" the") == "␣the" and visible("\n") == "⏎" and visible("\t\r") == "⇥␍"
    assert visible("a\x00b\x1f") == "a␀b␟"  # the other controls as their Unicode control pictures
    assert visible("") == "∅"  # an empty token still has a label
    assert visible("日本 ✓\x7f") == "日本␣✓\x7f"  # beyond U+001F nothing is replaced


def test_repeated_tokens_keep_their_own_labels_and_decoder_rows_say_what_they_predict():
    assert label_tokens(["a", " ", "a"]) == ["0:a", "1:␣", "2:a"]
    assert row_labels("decoder", ["<bos>", "yo"], ["yo", " tengo"]) == ["0:<bos> → yo", "1:yo → ␣tengo"]
    assert row_labels("encoder", ["x", "y"], ["z", "w"]) == ["0:x", "1:y"]
