"""Issue 22: every statement on the Learn pages agrees with the numbers beside it. Each test recomputes
the value from the model (or scans the page's text) instead of comparing with a snapshot."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from app import i18n
from app.ui import glossary
from app.views.lesson import STAGES
from core import explain, load_checkpoint
from core.inspect.records import row_labels
from core.lessons import head_links, model_encoding, model_projection, permutation_demo, trace_translation
from tests.helpers.apptest_helpers import as_matrix, chart, find_chart, open_page
from tests.helpers.paths import SHIPPED

TRANSLATION = SHIPPED / "translation.safetensors"
LOWER = "The input was lower-cased"
ZERO_BASED = re.compile(r"\b(head|layer)\s+0\b", re.IGNORECASE)


@pytest.fixture(scope="module")
def ckpt():
    return load_checkpoint(TRANSLATION)


@pytest.fixture(scope="module")
def trace(ckpt):
    return trace_translation(ckpt, "I have cats", head=0)


def page_text(at) -> str:
    """Everything a student reads on the page: prose, formulas, notes, widget choices and chart titles."""
    parts = [e.value for group in (at.title, at.header, at.markdown, at.latex, at.caption, at.info, at.success,
                                   at.warning, at.text) for e in group]
    parts += [str(o) for box in at.selectbox for o in box.options]
    parts += [str(o) for radio in at.radio for o in radio.options]
    parts += [e.proto.spec for e in at._tree if getattr(e, "type", None) in ("arrow_vega_lite_chart",
                                                                             "vega_lite_chart")]
    return "\n".join(parts)


# ----------------------------------------------------------------------------- the lecture sentence
def test_the_lecture_sentence_is_lower_cased_as_explore_does(ckpt):
    encoding = model_encoding(ckpt, "I have cats")
    assert encoding.tokens == ["i", "have", "cats"] and any(LOWER in n for n in encoding.notes)
    demo = permutation_demo(ckpt, "I have cats")
    assert demo.tokens == ("i", "have", "cats") and any(LOWER in n for n in demo.notes)
    assert "<unk>" not in explain(str(TRANSLATION), "I have cats").source_tokens


def test_positional_and_self_attention_pages_read_i_have_cats(runs):
    for page in ("positional", "self-attention"):
        at = open_page(page, ckpt="shipped:translation")
        text = page_text(at)
        assert "unknown" not in " ".join(i.value for i in at.info), page
        assert LOWER in text, page
        assert not ZERO_BASED.search(text), (page, ZERO_BASED.search(text))


# ----------------------------------------------------------------------------- the Lesson's numbers
def test_lesson_trace_biases_norm_and_ffn_agree_with_the_model(ckpt, trace):
    layer, d, dk, h = ckpt.model.encoder_layers[0], trace.d_model, trace.d_k, trace.head
    x = trace.embedded
    xw = x @ trace.qkv_weight[:, h * dk:(h + 1) * dk]  # x W^Q_h from the stacked matrix
    np.testing.assert_allclose(xw + trace.q_bias, trace.encoder_head.q, atol=1e-5)
    assert np.abs(trace.q_bias).max() > 0.1  # the bias is really there: x W^Q alone is another vector
    w_o = layer.self_attn.out_proj.weight.detach().numpy().T  # (H·dk, D)
    np.testing.assert_allclose(trace.heads_concat @ w_o + trace.out_bias, trace.attention_out, atol=1e-5)
    np.testing.assert_allclose(trace.norm_hat1.mean(-1), 0.0, atol=1e-6)
    np.testing.assert_allclose(trace.norm_hat1.var(-1), 1.0, atol=1e-4)
    np.testing.assert_allclose(trace.norm_gain1 * trace.norm_hat1 + trace.norm_shift1, trace.add_norm1, atol=1e-5)
    assert np.abs(trace.add_norm1 - trace.norm_hat1).max() > 0.1  # γ and b change it: the page shows both
    with torch.no_grad():
        expected = layer.norm2(torch.from_numpy(trace.add_norm1 + trace.ffn_out)).numpy()
    np.testing.assert_allclose(trace.layer_out, expected, atol=1e-5)
    assert trace.heads_concat.shape == (3, trace.n_heads * dk) == (3, d)


def test_lesson_cross_rows_and_head_mean(trace):
    assert trace.row_labels == tuple(row_labels(trace.target_tokens, trace.generated_tokens))
    assert trace.row_labels[1] == "after ‹yo› → predicts ‹tengo›"
    np.testing.assert_allclose(trace.cross_mean, trace.cross_heads.mean(0))
    np.testing.assert_allclose(trace.cross_mean.sum(-1), 1.0, atol=1e-5)
    src = trace.source_tokens
    aligned = [src[int(np.argmax(trace.cross_mean[t]))] for t in range(3)]
    assert aligned == ["i", "have", "cats"]  # the mean aligns yo:i, tengo:have, gatos:cats
    assert len({tuple(trace.cross_peaks(t)) for t in range(len(trace.target_tokens))}) > 1
    assert len(set(trace.cross_peaks(1))) > 1  # heads differ on "after yo → predicts tengo"


def open_stage(stage: int, head: int = 0):
    return open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": str(stage),
                                      "lesson_head": str(head)}, state={"lesson_ask": False}, timeout=60)


def test_lesson_numbers_heads_and_layers_from_one(runs):
    at = open_stage(0)
    for stage in range(len(STAGES)):
        at.selectbox(key="lesson_stage").set_value(stage).run()
        text = page_text(at)
        assert not ZERO_BASED.search(text), (stage, ZERO_BASED.search(text))
        if stage == 0:
            assert LOWER in text and list(at.dataframe[0].value["token"]) == ["i", "have", "cats"]


def test_lesson_formulas_show_biases_and_the_normalised_vector(runs, trace):
    at = open_stage(2)
    q_line = next(l.value for l in at.latex if "q_{0}" in l.value and "b^Q" in l.value)
    xw = trace.encoder_head.q[0] - trace.q_bias
    assert f"{xw[0]:.2f}" in q_line and f"{trace.encoder_head.q[0][0]:.2f}" in q_line
    spec, frame = find_chart(at, "stacked W_qkv")
    assert len(frame) == trace.qkv_weight.size
    at.selectbox(key="lesson_stage").set_value(9).run()
    latex = " ".join(l.value for l in at.latex)
    hat = trace.norm_hat1[0]
    assert f"[{hat[0]:.2f}, {hat[1]:.2f}" in latex and r"\gamma \odot" in latex
    assert r"\text{variance } 1.00" in latex and r"\text{mean } 0.00" in latex
    at.selectbox(key="lesson_stage").set_value(10).run()
    np.testing.assert_allclose(as_matrix(chart(at, "FFN(x)")[0], "value"), trace.ffn_out[:, :32], atol=1e-4)
    assert f"{trace.layer_out[0][0]:.2f}" in " ".join(l.value for l in at.latex)


def test_lesson_draws_the_concatenation_and_the_cross_mean(runs, trace):
    at = open_stage(8)
    _, frame = find_chart(at, "the heads side by side")
    np.testing.assert_allclose(as_matrix(frame, "value"), trace.heads_concat, atol=1e-5)
    assert any("+ b^O" in l.value for l in at.latex)
    at.selectbox(key="lesson_stage").set_value(13).run()
    assert at.radio(key="lesson_cross").value == "mean"
    _, frame = find_chart(at, "mean of 4 heads")
    np.testing.assert_allclose(as_matrix(frame), trace.cross_mean, atol=1e-5)
    assert "after ‹yo› → predicts ‹tengo›" in frame["row"].str.cat().replace("\u00a0", " ")  # spaces, not ␣
    assert "Heads differ" in " ".join(m.value for m in at.markdown)
    at.selectbox(key="lesson_stage").set_value(14).run()
    latex = " ".join(l.value for l in at.latex)
    assert r"P(w \mid y_0,\, x)" in latex  # the source x is in the condition (one history token at step 1)
    assert "last decoder layer's vector at this step" in " ".join(m.value for m in at.markdown)


def test_lesson_mask_stage_uses_the_mask_legend(runs):
    at = open_stage(5)
    spec, _ = find_chart(at, "encoder mask")
    assert "may attend" in str(spec)


# ----------------------------------------------------------------------------- Playground §5
def test_playground_cross_rows_name_the_prediction_and_heads_count_from_one(runs, ckpt):
    at = open_page("playground", ckpt="shipped:translation")
    assert not ZERO_BASED.search(page_text(at))
    at.radio(key="pg_qkv_mode").set_value("cross").run()
    real = model_projection(ckpt, glossary.SOURCE_SENTENCE, glossary.TARGET_SENTENCE, "cross", 0)
    assert real.row_labels[1] == "after ‹yo› → predicts ‹tengo›"
    table = next(df.value for df in at.dataframe if "1:have" in df.value.columns)
    np.testing.assert_allclose(table.to_numpy(), real.weights, atol=1e-6)
    assert list(table.index)[1].replace("\u00a0", " ").endswith("after ‹yo› → predicts ‹tengo›")  # not ␣
    assert not ZERO_BASED.search(page_text(at))


def test_playground_random_mode_has_no_bias_and_a_second_sequence(runs):
    at = open_page("playground", ckpt="shipped:reverse")
    at.radio(key="pg_qkv_mode").set_value("cross").run()
    formula = next(l.value for l in at.latex if "Q = XW_Q" in l.value)
    assert "b_Q" not in formula and "second sequence" in formula


# ----------------------------------------------------------------------------- other pages' statements
def test_positional_caption_at_small_d_states_the_real_factor(runs):
    at = open_page("positional", query={"pe_dim": "4", "pe_base": "100"})
    caption = next(c.value for c in at.caption if "Wavelengths run" in c.value)
    assert "just below" not in caption
    assert f"{2 * math.pi * 100 ** 0.5:,.1f}" in caption and f"{2 * math.pi * 100:,.1f}" in caption
    assert "base^(2/d) = 10" in caption


def test_architecture_says_two_convolutions_and_masks_explains_pad_rows(runs):
    at = open_page("architecture")
    assert any("two convolutions with kernel size 1" in m.value for m in at.markdown)
    find_chart(at, "two Conv1d, kernel 1,")  # its title wraps in its third of the page
    at = open_page("masks")
    assert any("`<pad>` queries" in m.value and "loss ignores" in m.value for m in at.markdown)


# ----------------------------------------------------------------------------- MiniLM's measured heads
@pytest.fixture(scope="module")
def minilm():
    from core import pretrained_models
    found = [e for e in pretrained_models() if e.name == "all-MiniLM-L6-v2"]
    if not found:
        pytest.skip("MiniLM is not installed (requirements-pretrained.txt)")
    return str(found[0].path)


def _links(path: str, adjective: str, target: str):
    exp = explain(path, f"The animal didn't cross the street because it was too {adjective}.")
    return head_links(exp.attention["encoder"], exp.source_tokens, "it", target)


def test_the_coreference_claims_are_what_minilm_does(minilm):
    from app.views.self_attention import CORE_MEASURED as said
    tired = _links(minilm, "tired", "animal")
    assert [l.name for l in tired.links[:2]] == [f"layer {said['layer_a']} head {said['head_a']}",
                                                 f"layer {said['layer_b']} head {said['head_b']}"]
    assert [l.rank for l in tired.links[:2]] == [said["rank_a"], said["rank_b"]] and tired.n_heads == said["n_heads"]
    assert [t[3] for t in tired.top[:3]] == ["because", "was", "tired"]
    street = _links(minilm, "wide", "street")
    assert not street.links_in_top(8) and street.links[0].rank == said["street_rank"]
    assert f"{street.links[0].weight:.2f}" == f"{said['street']:.2f}"
    animal = _links(minilm, "wide", "animal")
    assert animal.links[0].name == f"layer {said['layer_b']} head {said['head_b']}"
    assert f"{animal.links[0].weight:.2f}" == f"{said['animal']:.2f}"
    english = i18n.text("en", "self-attention", "coreference.intro", example="", **said)
    assert "layer 4 head 2 and layer 6 head 12, ranked 4th and 5th of 72" in english
    assert "17th, at 0.24" in english and "still links it → animal (0.56)" in english


def test_minilm_page_states_the_measured_ranks(runs, minilm):
    at = open_page("minilm")
    text = page_text(at)
    assert "rise to the top" not in text and "not an explanation" in text
    tired = _links(minilm, "tired", "animal")
    info = next(i.value for i in at.info if "Measured on this sentence" in i.value)
    assert f"{tired.links[0].name} (#{tired.links[0].rank}, {tired.links[0].weight:.2f})" in info
    assert f"{len(tired.links)} of 72 heads" in info


def test_explore_scores_and_beta_use_the_shared_words(runs):
    at = open_page("explore", ckpt="shipped:translation")
    at.session_state["interventions_open"] = True  # the interventions build nothing while closed
    at.run()
    assert at.slider(key="beta").help == glossary.BETA_TEXT
    assert "raw" not in at.toggle(key="show_scores").help.split("not raw")[0]
