"""Issue 22, parts 2–3: sizes on the arrays, the stacked W_qkv, the notes' typos flagged, Adam's
settings, warm-up schedules side by side, label smoothing's confidence penalty, sampling on the
decoder's real distribution, and the code beside the maths — each checked against core or torch."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

from app.ui import glossary
from core import load_checkpoint, training
from core.lessons import (confidence_penalty, draw_tokens, paper_recipe, pe_table, sampling_step, trace_translation,
                          warmup_schedules)
from tests.helpers.apptest_helpers import charts, find_chart, open_page
from tests.helpers.paths import SHIPPED


@pytest.fixture(scope="module")
def trace():
    return trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), "I have cats", head=0)


# ----------------------------------------------------------------------------- sampling
def test_sampling_step_matches_temperature_top_k_and_top_p():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    tempered = sampling_step(p, temperature=0.5).final
    np.testing.assert_allclose(tempered, p ** 2 / (p ** 2).sum())  # softmax(log p / 0.5) ∝ p²
    logits = torch.log(torch.tensor(p))
    kth = logits.topk(2).values[-1]  # core.sample's own top-k rule
    expected = torch.where(logits >= kth, logits, torch.tensor(-math.inf)).softmax(-1).numpy()
    np.testing.assert_allclose(sampling_step(p, top_k=2).final, expected, atol=1e-12)
    nucleus = sampling_step(p, top_p=0.8)
    assert nucleus.kept.tolist() == [True, True, False, False]  # 0.5 + 0.3 reaches 0.8: the smallest set
    assert sampling_step(p, top_p=0.81).kept.tolist() == [True, True, True, False]
    np.testing.assert_allclose(nucleus.final.sum(), 1.0)
    with pytest.raises(ValueError):
        sampling_step(p, temperature=0)


def test_lesson_sampling_stage_draws_core_numbers(runs, trace):
    from app.views.lesson import STAGES
    stage = [name for name, _ in STAGES].index("Sampling instead of greedy")
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": str(stage)},
                   state={"lesson_ask": False}, timeout=60)
    at.slider(key="lesson_top_k").set_value(2).run()
    at.slider(key="lesson_temperature").set_value(0.5).run()
    expected = sampling_step(trace.probabilities[0], 0.5, 2, None)
    draws = draw_tokens(trace.probabilities[0], 100, 0, 0.5, 2, None)
    _, frame = find_chart(at, "100 draws (seed 0)")
    sampler = frame[frame["what"] == "sampler's P"]
    for token, value in zip(sampler["token"], sampler["share"]):
        assert value == pytest.approx(expected.final[trace.target_vocab.index(token)], abs=1e-6)
    assert (sampler["share"] > 0).sum() == 2
    shares = frame[frame["what"] == "share of the draws"]
    for token, value in zip(shares["token"], shares["share"]):
        assert value == pytest.approx(draws.frequencies[trace.target_vocab.index(token)])
    first = trace.target_vocab[int(draws.ids[0])]
    assert any(f"the sampler draws **{first}** (seed 0)" in m.value for m in at.markdown)
    assert any("2 of" in l.value for l in at.latex)
    assert not at.code  # the source waits in its closed expander
    at.session_state[glossary.code_key(draw_tokens)] = True
    at.run()
    assert inspect.getsource(draw_tokens).rstrip() in [c.value.rstrip() for c in at.code]


# ----------------------------------------------------------------------------- the training recipe
def test_recipe_is_the_trainers_own():
    recipe = paper_recipe()
    group = training.make_optimizer(torch.nn.Linear(2, 2)).param_groups[0]
    assert (recipe.beta1, recipe.beta2, recipe.eps) == (*group["betas"], group["eps"]) == (0.9, 0.98, 1e-9)
    curves = dict(warmup_schedules())
    peak = curves["d_model 512, warm-up 4000"]
    assert peak.peak_step == 4000 and peak.peak_lr == pytest.approx(training.noam_lr(4000, 512, 4000)) and \
        peak.peak_lr == pytest.approx(6.988e-4, rel=1e-3)
    assert curves["d_model 512, warm-up 8000"].peak_lr < peak.peak_lr < curves["d_model 256, warm-up 4000"].peak_lr


def test_confidence_penalty_is_lowest_at_one_minus_epsilon():
    penalty = confidence_penalty(0.1)
    assert penalty.best == pytest.approx(0.9, abs=0.01)
    i = int(np.argmin(np.abs(penalty.confidence - 0.6)))
    c = penalty.confidence[i]
    by_hand = -(0.9 * math.log(c) + 3 * (0.1 / 3) * math.log((1 - c) / 3))  # ε/(V−2) on the 3 other real tokens
    assert penalty.smoothed[i] == pytest.approx(by_hand, rel=1e-5)
    assert penalty.plain[i] == pytest.approx(-math.log(c), rel=1e-5)
    assert penalty.smoothed[-1] > penalty.smoothed.min() + 0.1  # confidence 0.995 is penalised
    assert np.all(np.diff(penalty.plain) < 0)  # without smoothing more confidence always helps


def test_architecture_page_shows_adam_schedules_penalty_and_width(runs):
    at = open_page("architecture")
    text = " ".join(m.value for m in at.markdown)
    assert "β₁ = 0.9, β₂ = 0.98 and ε = 1e-09" in text and "hurts perplexity" in text
    assert "same width d_model" in text and "Dropout" in text
    _, frame = find_chart(at, "Three warm-up schedules side by side")
    assert set(frame["schedule"]) == {label for label, _ in warmup_schedules()}
    find_chart(at, "Loss of one prediction vs its confidence")
    functions = (training.noam_lr, training.smoothed_loss, training.make_optimizer)
    for function in functions:
        at.session_state[glossary.code_key(function)] = True
    at.run()
    codes = [c.value.rstrip() for c in at.code]
    for function in functions:
        assert inspect.getsource(function).rstrip() in codes


# ----------------------------------------------------------------------------- sizes, W_qkv, errata
def test_lesson_shows_sizes_and_the_stacked_matrix(runs, trace):
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": "2"}, timeout=60)
    spec, frame = find_chart(at, "stacked W_qkv")
    assert "size 128 × 384" in str(spec) and len(frame) == 128 * 384  # d_model 128, 4 heads of 32
    np.testing.assert_allclose(frame.sort_values(["row_index", "col_index"])["value"].to_numpy(),
                               trace.qkv_weight.ravel(), atol=1e-6)
    latex = " ".join(l.value for l in at.latex)
    assert r"(B, S, 128)" in latex and r"(B, 4, S, 32)" in latex  # S: the source length (T is the decoder's)
    assert r"Q, K, V \in \mathbb{R}^{3 \times 32}" in latex


def test_the_notes_typos_are_flagged_where_the_app_is_right(runs):
    pe = pe_table(6, 8, 10000.0)
    pos, i = np.arange(6), 1
    np.testing.assert_allclose(pe[:, 2 * i + 1], np.cos(pos / 10000 ** (2 * i / 8)), atol=1e-6)  # not (2i+1)/d
    ckpt = load_checkpoint(SHIPPED / "translation.safetensors")
    layer = ckpt.model.encoder_layers[0].self_attn
    assert tuple(layer.out_proj.weight.T.shape) == (ckpt.config.n_heads * ckpt.config.head_dim, ckpt.config.d_model)
    captions = lambda at: " ".join(c.value for c in at.caption)  # noqa: E731
    at = open_page("positional")
    assert glossary.NOTES_ERRATA["pe_odd_exponent"] in captions(at) and glossary.NOTES_ERRATA["pe_index"] in captions(at)
    at = open_page("playground", query={"pg_qkv_mode": "cross"})
    assert glossary.NOTES_ERRATA["w_o_shape"] in captions(at) and glossary.NOTES_ERRATA["cross_sources"] in captions(at)


def test_kl_check_on_the_classifier_example_uses_its_own_row():
    from core.lessons import kl_check, smoothing_example
    check = kl_check(0.1, classifier=True)
    np.testing.assert_allclose(check.target, smoothing_example(0.1, classifier=True).matrix[0])
    assert check.entropy == pytest.approx(-(0.9 * math.log(0.9) + 0.1 * math.log(0.1)), abs=1e-6)  # 2 classes: 0.325
    assert check.kl == pytest.approx(check.cross_entropy - check.entropy, abs=1e-12)
    assert check.trainer_loss == pytest.approx(check.cross_entropy, abs=1e-6)
    assert kl_check(0.1).entropy != pytest.approx(check.entropy)  # the sequence row (with <pad>) differs


def test_lesson_sampling_stage_changes_its_draws_with_the_seed_and_compares_whole_outputs(runs, trace):
    from app.views.lesson import STAGES
    names = [name for name, _ in STAGES]
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": str(names.index(
        "Sampling instead of greedy"))}, state={"lesson_ask": False}, timeout=60)
    at.slider(key="lesson_temperature").set_value(3.0).run()
    drawn = {}
    for seed in (0, 1, 0):
        at.number_input(key="lesson_seed").set_value(seed).run()
        token = trace.target_vocab[int(draw_tokens(trace.probabilities[0], 100, seed, 3.0).ids[0])]
        assert any(f"the sampler draws **{token}** (seed {seed})" in m.value for m in at.markdown), seed
        drawn.setdefault(seed, []).append(at.dataframe[-1].value.to_dict())
    assert drawn[0][0] == drawn[0][1]  # the same seed, the same sampled sentence
    table = at.dataframe[-1].value
    assert list(table["decoder"]) == ["greedy", "sampled (seed 0)"] and table["output"][0] == "yo tengo gatos <eos>"
    at.selectbox(key="lesson_stage").set_value(names.index("Greedy and beam search")).run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["decoder"]) == ["greedy", "beam search, 4 beams"]
    assert not charts(at), "the greedy stage repeats the output chart"
    at.selectbox(key="lesson_stage").set_value(names.index("Output distribution")).run()
    assert charts(at)  # the chart the greedy stage no longer repeats
