"""Issue 22, the concept table's last "missing" rows: Adam's settings and update rule on screen, the
residual-width requirement and the heads' split and concatenation with the model's numbers, PyTorch's
nn.MultiheadAttention loaded with the model's weights, and what the cross-attention output reads —
each checked against torch, the trainer or a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from app.ui import glossary
from core import load_checkpoint, training
from core.lessons import (as_torch_mha, compare_torch_mha, cross_reading, paper_recipe, torch_mha,
                          trace_translation)
from tests.helpers.apptest_helpers import find_chart, open_page
from tests.helpers.paths import SHIPPED
from tests.helpers.tiny import PAD, random_ids, tiny_model


# ----------------------------------------------------------------------------- Adam
def test_adam_table_and_rule_show_the_optimizer_the_trainer_builds(runs):
    group = training.make_optimizer(torch.nn.Linear(2, 2)).param_groups[0]
    (beta1, beta2), eps = group["betas"], group["eps"]
    at = open_page("architecture")
    table = next(d.value for d in at.dataframe if "this trainer" in d.value.columns)
    assert [float(x) for x in table["this trainer"]] == [beta1, beta2, eps]
    assert [float(x) for x in table["the paper (§5.3)"]] == [0.9, 0.98, 1e-9]
    rule = next(l.value for l in at.latex if r"\theta_t" in l.value)
    assert f"m_t = {beta1:g}" in rule and f"v_t = {beta2:g}" in rule and "10^{-9}" in rule


def test_the_adam_rule_on_screen_is_what_torch_does():
    recipe = paper_recipe()
    layer = torch.nn.Linear(2, 1, bias=False)
    optimizer = training.make_optimizer(layer)  # the trainer's own Adam; its step sets the rate
    optimizer.param_groups[0]["lr"] = 0.01
    weight = layer.weight  # (1, 2)
    with torch.no_grad():
        weight.copy_(torch.tensor([[0.5, -1.0]]))
    theta, m, v = weight.detach().clone(), torch.zeros(1, 2), torch.zeros(1, 2)
    for t, g in enumerate((torch.tensor([[0.3, -2.0]]), torch.tensor([[-0.1, 0.7]])), start=1):
        weight.grad = g.clone()
        optimizer.step()
        m = recipe.beta1 * m + (1 - recipe.beta1) * g  # the formula the page writes
        v = recipe.beta2 * v + (1 - recipe.beta2) * g ** 2
        theta = theta - 0.01 * (m / (1 - recipe.beta1 ** t)) / ((v / (1 - recipe.beta2 ** t)).sqrt() + recipe.eps)
        torch.testing.assert_close(weight.detach(), theta, atol=1e-7, rtol=0)
    assert not math.isclose(float(theta[0, 0]), 0.5)


# ----------------------------------------------------------------------------- widths and heads on the Lesson
@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(SHIPPED / "translation.safetensors")


def _stage(name: str) -> str:
    from app.views.lesson import STAGES
    return str([stage for stage, _ in STAGES].index(name))


def test_add_and_norm_states_the_residual_width_with_the_models_d_model(runs, shipped):
    d, tokens = shipped.config.d_model, len(trace_translation(shipped, "I have cats", head=0).source_tokens)
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": _stage("Add & Norm")}, timeout=60)
    text = " ".join(m.value for m in at.markdown)
    assert f"maps back to d_model = {d}" in text and "same width as x" in text
    latex = " ".join(l.value for l in at.latex)
    assert latex.count(f"{{{tokens} \\times {d}}}") >= 2 and f"\\mathbb{{R}}^{{{tokens} \\times {d}}}" in latex


def test_heads_concatenated_draws_the_split_undone_with_the_models_shapes(runs, shipped):
    cfg = shipped.config
    h, dk, d = cfg.n_heads, cfg.head_dim, cfg.d_model
    trace = trace_translation(shipped, "I have cats", head=1)
    np.testing.assert_array_equal(trace.heads_concat[:, dk:2 * dk], trace.encoder_head.output.astype(np.float32))
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_head": "1",
                                    "lesson_stage": _stage("Heads concatenated")}, state={"lesson_ask": False},
                   timeout=60)
    latex = " ".join(l.value for l in at.latex)
    assert f"(B, {h}, S, {dk})" in latex and f"(B, S, {h}, {dk})" in latex
    assert f"(B, S, {h}\\cdot{dk} = {h * dk})" in latex and f"(B, S, {d})" in latex and h * dk == d


# ----------------------------------------------------------------------------- nn.MultiheadAttention
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_torch_mha_with_a_tiny_random_models_weights_gives_its_maps_and_output(norm):
    model = tiny_model(norm=norm, seed=3)
    src = random_ids(1, 7)
    src[0, -2:] = PAD  # padded keys: nn.MultiheadAttention's key_padding_mask must hide them as ours does
    result = compare_torch_mha(model, src)
    assert result.map_error <= 1e-6 and result.output_error <= 1e-6
    assert result.torch_maps.shape == (4, 7, 7) and np.all(result.torch_maps[:, :, -2:] == 0)
    np.testing.assert_allclose(result.torch_maps.sum(-1), 1.0, atol=1e-6)
    own = model.encoder_layers[0].self_attn
    mha = as_torch_mha(own)
    assert torch.equal(mha.in_proj_weight, own.qkv_proj.weight)
    assert torch.equal(mha.out_proj.weight, own.out_proj.weight)
    with torch.no_grad():  # a wrong copy would show: W_k and W_v swapped changes the output
        mha.in_proj_weight[16:48] = torch.cat([own.qkv_proj.weight[32:48], own.qkv_proj.weight[16:32]])
        x = torch.randn(1, 7, 16)
        swapped, _ = mha(x, x, x)
        assert (swapped - own(x).output).abs().max() > 1e-3


def test_torch_mha_refuses_a_cross_attention_and_another_score():
    with pytest.raises(ValueError, match="stacked"):
        as_torch_mha(tiny_model().decoder_layers[0].cross_attn)
    with pytest.raises(ValueError, match="scaled dot"):
        as_torch_mha(tiny_model(score="additive").encoder_layers[0].self_attn)


def test_playground_runs_nn_multihead_attention_on_the_shipped_model(runs, shipped):
    result = torch_mha(shipped, glossary.SOURCE_SENTENCE)
    assert result.map_error <= 1e-6 and result.output_error <= 1e-6
    cfg = shipped.config
    assert (result.embed_dim, result.num_heads, result.in_proj_shape) == (cfg.d_model, cfg.n_heads,
                                                                          (3 * cfg.d_model, cfg.d_model))
    at = open_page("playground")
    code = next(c.value for c in at.code if "nn.MultiheadAttention(" in c.value)
    assert f"embed_dim={cfg.d_model}, num_heads={cfg.n_heads}, batch_first=True" in code
    assert "average_attn_weights=False" in code and f"({3 * cfg.d_model}, {cfg.d_model})" in code
    message = next(s.value for s in at.success if "nn.MultiheadAttention" in s.value)
    assert f"{result.map_error:.1e}" in message and f"{result.output_error:.1e}" in message
    table = next(d.value for d in at.dataframe if d.value.index.name == "query token" and
                 list(d.value.columns) == list(result.tokens))
    np.testing.assert_allclose(table.to_numpy(), result.own_maps[0], atol=1e-6)


# ----------------------------------------------------------------------------- what the cross-attention output reads
def test_cross_output_and_its_reading_equal_a_hand_computation(shipped):
    trace = trace_translation(shipped, "I have cats", head=0)
    attn, cfg = shipped.model.decoder_layers[-1].cross_attn, shipped.config
    d, h, dk = cfg.d_model, cfg.n_heads, cfg.head_dim
    w_v, b_v = (p.detach().double().numpy()[d:] for p in (attn.kv_proj.weight, attn.kv_proj.bias))  # W_v: (D, D)
    values = trace.memory.astype(np.float64) @ w_v.T + b_v  # (S, D)
    heads = [trace.cross_heads[n].astype(np.float64) @ values[:, n * dk:(n + 1) * dk] for n in range(h)]  # (T, dk)
    by_hand = np.concatenate(heads, axis=1) @ attn.out_proj.weight.detach().double().numpy().T \
        + attn.out_proj.bias.detach().double().numpy()  # (T, D)
    np.testing.assert_allclose(trace.cross_output, by_hand, atol=1e-5)
    similarity = cross_reading(trace.cross_output, trace.memory)
    for t, c in enumerate(trace.cross_output.tolist()):
        for j, m in enumerate(trace.memory.tolist()):  # Python floats: double precision, no numpy
            cosine = sum(a * b for a, b in zip(c, m)) / math.sqrt(sum(a * a for a in c) * sum(b * b for b in m))
            assert similarity[t, j] == pytest.approx(cosine, abs=1e-9)
    assert similarity.shape == (len(trace.target_tokens), len(trace.source_tokens))
    with pytest.raises(ValueError):
        cross_reading(trace.cross_output, trace.memory[:, :-1])


def test_lesson_cross_stage_draws_what_each_step_reads(runs, shipped):
    trace = trace_translation(shipped, "I have cats", head=0)
    similarity = cross_reading(trace.cross_output, trace.memory)
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": _stage("Cross-attention")},
                   state={"lesson_ask": False}, timeout=60)
    _, frame = find_chart(at, "cos(cross-attention output")
    shown = frame.sort_values(["row_index", "col_index"])
    np.testing.assert_allclose(shown["cosine"].to_numpy(), similarity.ravel(), atol=1e-6)
    text = " ".join(m.value for m in at.markdown)
    assert "the attended tokens' *values*, mixed by W^O" in text
    j = int(np.argmax(np.abs(similarity[0])))
    assert any(f"= {similarity[0, j]:.2f}" in l.value and r"\cos(c_{0}" in l.value for l in at.latex)
    assert any(f"largest |cosine| here is {np.abs(similarity).max():.2f}" in c.value for c in at.caption)
