"""Issue 13's wrong-or-misleading items, each with a test that would have caught it: the PE wavelength
range, the notes' mixed-base example, β defined once, the LayerNorm shift b, label smoothing (log scale,
V−1 for classifiers, KL = CE − H), the Noam step-0 guard and where the LayerNorms are drawn."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from tests.helpers.apptest_helpers import diagram_lines, open_page
from tests.helpers.paths import SHIPPED
from tests.helpers.apptest_helpers import find_chart as chart
from tests.helpers.tiny import tiny_model

from app.ui import glossary
from app.charts import teaching as charts
from app.charts.architecture import architecture_diagram, has_final_norm
from app.charts.diagram import svg
from core import attention, load_checkpoint, training
from core.lessons import (kl_check, lecture_comparison, other_share, pe_table, smoothing_example,
                          trace_translation, wavelength_range)
from core.training.objectives import smoothed_targets


# ----------------------------------------------------------------------------- positional
@pytest.mark.parametrize("d_model, base", [(128, 10000.0), (4, 100.0), (6, 2.0)])
def test_longest_wavelength_is_that_of_the_last_pair(d_model, base):
    shortest, longest = wavelength_range(d_model, base)
    assert shortest == pytest.approx(2 * math.pi)
    assert longest == pytest.approx(2 * math.pi * base ** ((d_model - 2) / d_model))
    pe = pe_table(int(round(longest)) + 1, d_model, base)  # the last sine column is periodic with it
    omega = 2 * math.pi / longest
    np.testing.assert_allclose(pe[:, d_model - 2], np.sin(np.arange(len(pe)) * omega), atol=1e-6)


def test_positional_caption_states_the_right_range(runs):
    at = open_page("positional")  # 20 × 128, base 10000
    caption = next(c.value for c in at.caption if "Wavelengths run" in c.value)
    assert "2π·base^((d−2)/d)" in caption
    assert f"{2 * math.pi * 10000 ** (126 / 128):,.1f}" in caption  # 54,410.1, not 2π·10000 = 62,832
    assert "62,832" not in caption


def test_the_notes_example_mixes_two_bases():
    lecture = lecture_comparison()
    assert lecture.matches[1, 2] == "10000" and lecture.matches[2, 2] == "10000"  # sin(0.01), sin(0.02)
    assert lecture.matches[3, 2] == "100" and lecture.matches[3, 3] == "100"  # sin(0.3), cos(0.3)
    assert set(lecture.matches[:, :2].ravel()) == {"both"}  # pair 0 does not depend on the base
    assert lecture.base100[3, 2] == pytest.approx(0.6 + math.sin(0.3))


def test_positional_page_shows_the_notes_numbers_beside_ours(runs):
    at = open_page("positional")
    table = next(df.value for df in at.dataframe if "notes (printed)" in df.value.columns)
    assert list(table["cell"]) == ["pos 1, dim 2", "pos 2, dim 2", "pos 3, dim 2", "pos 3, dim 3"]
    assert list(table["notes used base"]) == ["10000", "10000", "100", "100"]
    np.testing.assert_allclose(table["app, base 100"], lecture_comparison().base100[[1, 2, 3, 3], [2, 2, 2, 3]])
    assert any("mix two bases" in m.value for m in at.markdown)


# ----------------------------------------------------------------------------- β and b
def test_beta_is_defined_once_on_the_scaled_scores():
    q, k = torch.tensor([[1.0, 0.0, 2.0, 1.0]]), torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    _, weights = attention(q, k, k, temperature=3.0)
    expected = torch.softmax(3.0 * (q @ k.T) / math.sqrt(4), dim=-1)  # β · q·k/√d_k, as the text says
    torch.testing.assert_close(weights, expected)
    assert "q·k/√dₖ" in glossary.BETA_TEXT and r"\beta\cdot\frac{q\cdot k}{\sqrt{d_k}}" in glossary.BETA_LATEX


def test_playground_says_where_beta_applies_and_layernorm_uses_b(runs):
    at = open_page("playground")
    assert any(glossary.BETA_TEXT == m.value for m in at.markdown)
    assert any(c.value.startswith("Where it applies here:") for c in at.caption)
    arch = open_page("architecture")
    text = " ".join(m.value for m in arch.markdown) + " ".join(c.value for c in arch.caption)
    assert "shift b" in text and "shift β" not in text
    assert any(glossary.LAYERNORM_LATEX in latex.value for latex in arch.latex)


# ----------------------------------------------------------------------------- label smoothing
def test_classifier_smoothing_uses_v_minus_1_and_sequences_v_minus_2():
    cls = smoothing_example(0.1, classifier=True)
    assert cls.vocab == ("negative", "positive")  # the shipped classifier's own two classes, none invented
    assert cls.matrix.shape == (3, 2)
    np.testing.assert_allclose(np.sort(cls.matrix, axis=1), [[0.1, 0.9]] * 3, atol=1e-6)  # ε/(V − 1) = ε at V = 2
    assert other_share(0.1, 2, classifier=True) == pytest.approx(0.1)
    seq = smoothing_example(0.1)
    assert seq.matrix[0, 1] == pytest.approx(0.1 / 4) == other_share(0.1, 6, classifier=False)
    np.testing.assert_allclose(seq.matrix.sum(axis=1), [1, 1, 1, 1, 0], atol=1e-6)


def test_kl_form_equals_cross_entropy_minus_entropy():
    check = kl_check(0.1)
    assert check.kl == pytest.approx(check.cross_entropy - check.entropy, abs=1e-12)
    assert check.trainer_loss == pytest.approx(check.cross_entropy, abs=1e-6)
    q, p = torch.tensor(check.target), torch.tensor(check.predicted)
    kl = torch.nn.functional.kl_div(p.log(), q, reduction="sum")  # the notes' nn.KLDivLoss(reduction="sum")
    assert float(kl) == pytest.approx(check.kl, abs=1e-9)
    logits = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    targets = torch.tensor([1, 2, 3, 0])
    ce = training.smoothed_loss(logits, targets, 0.2, pad_id=0)
    q = smoothed_targets(targets, 6, 0.2, pad_id=0)
    logp = logits.log_softmax(-1)
    rows = q.sum(-1) > 0
    kl_rows = torch.nn.functional.kl_div(logp[rows], q[rows], reduction="sum") / rows.sum()
    entropy = -(q[q > 0] * q[q > 0].log()).sum() / rows.sum()
    assert float(kl_rows) == pytest.approx(float(ce - entropy), abs=1e-5)


def test_smoothing_chart_makes_the_small_share_visible():
    example = smoothing_example(0.1)
    figure = charts.smoothing_log_chart(example.matrix, [str(t) for t in example.targets], list(example.vocab),
                                        smoothing=0.1).to_dict()
    scale = figure["layer"][0]["encoding"]["color"]["scale"]
    assert scale["type"] == "symlog" and scale["constant"] <= 0.025  # ε/(V−2) = 0.025 sits mid-scale
    assert "log" in figure["layer"][0]["title"]["subtitle"]


def test_train_page_shows_the_guard_the_classifier_case_and_the_kl_check(runs):
    at = open_page("train")
    latex = [x.value for x in at.latex]
    assert any(r"s = \max(\mathrm{step},\,1)" in x for x in latex)
    guard = next(c.value for c in at.caption if "guard" in c.value)
    assert f"{training.noam_lr(1, 512, 100):.3e}" in guard or "step 1's rate" in guard
    assert training.noam_lr(0, 512, 100) == training.noam_lr(1, 512, 100) > 0
    assert any(r"\dfrac{\varepsilon}{V-2}" in x for x in latex)
    check = kl_check(0.1)
    assert any(f"{check.kl:.4f} = {check.cross_entropy:.4f}" in x for x in latex)
    assert chart(at, "Label-smoothed targets")
    at.selectbox(key="train_task").set_value("sentiment").run()
    latex = [x.value for x in at.latex]
    assert any(r"\dfrac{\varepsilon}{V-1}" in x for x in latex)
    assert not any(r"V-2" in x for x in latex)


# ----------------------------------------------------------------------------- LayerNorm placement
def _final_norms(config, norm: str | None = None) -> int:
    """How many boxes of the drawn diagram are a final LayerNorm (a line starting so)."""
    return sum(line.startswith("final LayerNorm") for line in diagram_lines(svg(architecture_diagram(config, norm))))


def test_post_norm_has_no_final_layernorm_and_pre_norm_has_one():
    post = tiny_model("encoder-decoder").config
    pre = replace(post, norm="pre")
    textbook_post = diagram_lines(svg(architecture_diagram(post, norm="post")))
    assert _final_norms(post, "post") == 0 and "Add & Norm" in textbook_post
    assert "no final LayerNorm)" in textbook_post
    assert _final_norms(post, "pre") == 2  # after the encoder stack and after the decoder stack
    assert has_final_norm(pre) is True
    assert has_final_norm(post) is False and _final_norms(post) == 0
    legacy = replace(post, final_norm=True)  # a post-norm checkpoint trained with a closing LayerNorm
    assert has_final_norm(legacy) is True and _final_norms(legacy) == 2


def test_architecture_page_says_where_the_norms_are(runs):
    at = open_page("architecture")
    ckpt = load_checkpoint(SHIPPED / "translation.safetensors")
    final = ckpt.config.has_final_norm
    note = next(i.value for i in at.info if "Add & Norm" in i.value or "LayerNorm before" in i.value)
    assert ("also a final LayerNorm" in note) == final
    at.radio(key="arch_norm").set_value("pre").run()
    note = next(i.value for i in at.info if "pre-norm" in i.value)
    assert "a final LayerNorm after each stack" in note
    at.radio(key="arch_norm").set_value("post").run()
    note = next(i.value for i in at.info if "post-norm" in i.value)
    assert "no final LayerNorm" in note


# ----------------------------------------------------------------------------- one direction
def test_one_translation_direction_and_a_default_the_model_reads():
    ckpt = load_checkpoint(SHIPPED / "translation.safetensors")
    assert "<unk>" not in ckpt.source_tokenizer.encode(glossary.SOURCE_SENTENCE).tokens
    assert "<unk>" not in ckpt.target_tokenizer.encode(glossary.TARGET_SENTENCE).tokens
    assert trace_translation(ckpt, "i have cats").output_text == glossary.TARGET_SENTENCE  # the Lesson's default


def test_masks_page_decoder_writes_spanish(runs):
    at = open_page("masks")
    table = next(df.value for df in at.dataframe if "decoder input" in df.value.columns)
    assert list(table["decoder input"]) == ["<bos>", "Yo", "tengo", "gatos"]
    assert list(table["must predict"]) == ["Yo", "tengo", "gatos", "<eos>"]
