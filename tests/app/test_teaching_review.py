"""Regression tests of the teaching review's findings (shared/reviews/teaching.md, turn 4): each reads the page's
text or a chart's labels, and where a sentence states a fact about the model or PyTorch, checks the fact too."""

from __future__ import annotations

import json

import pytest
import torch

from app import i18n
from app.ui import glossary
from app.views.lesson import STAGES
from app.views.parts import architecture_whisper
from core import load_checkpoint
from tests.app.test_lessons_claims import page_text
from tests.helpers.apptest_helpers import charts, frames, open_page, spec
from tests.helpers.paths import SHIPPED

NAMES = [name for name, _ in STAGES]


@pytest.fixture(scope="module")
def lesson(tmp_path_factory):
    """One Lesson page for the module's stage checks (an empty runs folder of its own, the catalog forgotten as
    the ``runs`` fixture does)."""
    from app import resources
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNSCOPE_RUNS", str(tmp_path_factory.mktemp("review-runs")))
        resources.entries.clear()
        yield open_page("lesson", query={"lesson_text": "I have cats"}, state={"lesson_ask": False}, timeout=60)
        resources.entries.clear()


def _stage(at, name: str):
    at.selectbox(key="lesson_stage").set_value(NAMES.index(name)).run()
    assert not at.exception and not at.error, at.error
    return page_text(at)


def _labels(at) -> list[str]:
    """Every row and column label of the stage's Altair charts."""
    return [str(label) for chart in charts(at) for frame in frames(chart) for column in ("row", "col")
            if column in frame for label in frame[column]]


def test_t1_stage_1_says_an_unknown_word_is_spelled_out_as_the_tokenizer_does(lesson):
    text = _stage(lesson, "Tokens")
    assert "An unknown word becomes `<unk>`" not in text and "spells it out" in text
    pieces = load_checkpoint(SHIPPED / "translation.safetensors").source_tokenizer.encode("zorblax").ids
    strings = load_checkpoint(SHIPPED / "translation.safetensors").source_tokenizer.token_strings(pieces)
    assert strings[:3] == ["z", "##o", "##r"] and "<unk>" not in strings


def test_t2_masks_caption_gives_the_right_reason_for_a_fully_masked_row(runs):
    at = open_page("masks")
    text = page_text(at)
    assert "so a fully masked row gives zeros instead of NaN" not in text
    assert "uniform row with −1e9" in text and "zeroes such rows explicitly" in text
    scores = torch.randn(4)
    assert torch.allclose(scores.masked_fill(torch.ones(4, dtype=torch.bool), -1e9).softmax(-1), torch.full((4,), .25))
    assert torch.isnan(scores.masked_fill(torch.ones(4, dtype=torch.bool), float("-inf")).softmax(-1)).all()
    from core.model.attention import attention_weights
    dead = attention_weights(torch.randn(2, 3), torch.tensor([[True, False, True], [False, False, False]]))
    assert torch.all(dead[1] == 0) and dead[0, 1] == 0 and abs(float(dead[0].sum()) - 1) < 1e-6


def test_t3_t15_stage_14_reads_the_output_as_values_on_the_full_cosine_scale(lesson):
    text = _stage(lesson, "Cross-attention")
    assert "resembles" not in text and "the attended tokens' *values*, mixed by W^O" in text
    cosine = next(spec(c) for c in charts(lesson) if "cos(cross-attention output" in json.dumps(spec(c)))
    assert [-1.0, 1.0] in [e.get("scale", {}).get("domain") for e in _encodings(cosine)]
    assert any(r"\begin{aligned} \cos(c_{0}, m_" in latex.value for latex in lesson.latex)  # broken into lines


def _encodings(chart_spec: dict) -> list[dict]:
    found, stack = [], [chart_spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "color" in node.get("encoding", {}):
                found.append(node["encoding"]["color"])
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    return found


def test_t4_t17_stage_3_reads_notes_000_s_code_and_splits_the_source_length(lesson):
    text = _stage(lesson, "Q, K, V of one head")
    assert "their code, like the paper, splits d_model into h slices" in text
    assert "(B, S, 128)" in text and "(B, T, 128)" not in text and "(B, 4, S, 32)" in text
    text = _stage(lesson, "Heads concatenated")
    assert "(B, S, 4, 32)" in text and "(B, T, 4, 32)" not in text


def test_t5_n16_train_says_what_label_smoothing_does_and_a_classifier_s_own_form(runs):
    at = open_page("train")
    text = page_text(at)
    assert "which helps accuracy and BLEU." not in text and "hurts perplexity but improves accuracy and BLEU" in text
    at.selectbox(key="train_task").set_value("sentiment").run()
    text = page_text(at)
    assert "The same identity for a classifier" in text and "The notes train with a KL-divergence" not in text
    assert "neutral" not in text and "V = 2" in text


def test_t6_positional_does_not_state_a_reason_the_paper_does_not_give(runs):
    text = page_text(open_page("positional"))
    assert "so neither drowns the other" not in text and "The paper gives no reason for the scaling" in text


def test_t8_whisper_s_encoder_positions_are_not_the_paper_s_table():
    text = " ".join(v for k, v in i18n.catalog("en", "architecture").items() if k.startswith("whisper."))
    assert "the encoder keeps sinusoidal ones, as in the paper" not in text and "sines then cosines" in text
    assert set(architecture_whisper.DIFFERENCES) <= {k.removeprefix("whisper.") for k in i18n.catalog("en", "architecture")}


def test_t9_to_t13_the_notes_own_contradictions_are_flagged_where_they_are_taught(runs, lesson):
    assert "The notes disagree here" in page_text(open_page("architecture")) and "SublayerConnection" in \
        page_text(open_page("architecture"))
    assert glossary.NOTES_CONFLICTS["pe_all_components"] in page_text(open_page("positional"))
    assert glossary.NOTES_CONFLICTS["example_direction"].split(";")[0][:60] in _stage(lesson, "Tokens")
    assert "`10000^{2i+1/d_{model}}`" in glossary.NOTES_ERRATA["pe_odd_exponent"]
    assert "the pair's index" in glossary.NOTES_ERRATA["pe_odd_exponent"]
    classifier = open_page("architecture", ckpt="shipped:sentiment")
    assert "TransformerClassifier.forward" in page_text(classifier)


def test_t14_decoder_rows_are_drawn_with_spaces_not_glyphs(lesson):
    for name in ("Decoder masked self-attention", "Cross-attention"):
        _stage(lesson, name)
        labels = _labels(lesson)
        rows = [label for label in labels if "predicts" in label]
        assert rows and not any("␣" in label for label in rows), rows[:2]
        assert any("after\u00a0‹<bos>›\u00a0→\u00a0predicts\u00a0‹yo›" in label for label in rows)


def test_t16_the_masked_stage_counts_steps_from_one_as_the_picker(lesson):
    text = _stage(lesson, "Decoder masked self-attention")
    assert "steps 0…t" not in text and "steps 1…t" in text and r"\text{step 1: } a_{1j} = 0" in text


def test_t18_n24_the_output_stage_writes_one_history_token_at_step_1(lesson):
    text = _stage(lesson, "Output distribution")
    assert r"P(w \mid y_0,\, x)" in text and r"y_0 \dots y_{0}" not in text


def test_t20_sizes_are_written_without_latex_braces(lesson):
    for name, size in (("Embeddings + positional encoding", "x ∈ ℝ^(S × d_model) = 3 × 128"),
                       ("Softmax", "A ∈ ℝ^(S × S) = 3 × 3")):
        _stage(lesson, name)
        drawn = " ".join(json.dumps(spec(c), ensure_ascii=False) for c in charts(lesson))
        assert f'"subtitle": "{size}"' in drawn and "ℝ^{" not in drawn


def test_t21_stage_3_marks_the_head_slices_and_the_followed_head_s_columns(runs):
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": "2", "lesson_head": "1"},
                   state={"lesson_ask": False}, timeout=60)
    figure = next(spec(c) for c in charts(at) if "stacked W_qkv" in json.dumps(spec(c)))
    shapes = figure["layout"]["shapes"]
    dotted = sorted(s["x0"] for s in shapes if s["type"] == "line" and s["line"].get("dash") == "dot")
    boxes = sorted((s["x0"], s["x1"]) for s in shapes if s["type"] == "rect")
    d, heads, dk = 128, 4, 32  # the shipped model: 4 heads of d_k = 32 in each 128-column block
    assert dotted == sorted(b * d + s * dk - 0.5 for b in range(3) for s in range(1, heads))
    assert boxes == [(b * d + dk - 0.5, b * d + 2 * dk - 0.5) for b in range(3)]  # head 2 = slice 2 of Q, K and V
    assert "dashed: head 2" in json.dumps(figure, ensure_ascii=False)


def test_t7_whisper_s_prompt_is_named_from_the_model():
    from dataclasses import replace

    from app.charts.architecture import whisper_diagram
    from app.charts.diagram import svg
    from core.model.families.whisper import WhisperConfig
    from tests.helpers.apptest_helpers import diagram_lines
    english = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=3, n_heads=2, d_ff=32,
                            eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=20, max_len=12)
    multilingual = replace(english, translate_id=33)
    assert not english.multilingual and multilingual.multilingual
    en_text = " ".join(diagram_lines(svg(whisper_diagram(english))))
    multi_text = " ".join(diagram_lines(svg(whisper_diagram(multilingual))))
    assert "<|lang|>" not in en_text and "<|notimestamps|>" in en_text
    assert "<|lang|> <|task|> <|notimestamps|>" in multi_text
    from tests.helpers.paths import ROOT
    page = (ROOT / "app" / "views" / "whisper.py").read_text()  # the page itself needs a Whisper model (slow tests)
    assert "(start, language, task, no timestamps)" not in page and 'exp.options["prompt_tokens"]' in page
