"""Issue 22, the concept table's last "missing" rows: Adam's settings and update rule on screen, the
residual-width requirement and the heads' split and concatenation with the model's numbers, PyTorch's
nn.MultiheadAttention loaded with the model's weights, and what the cross-attention output reads —
each checked against torch, the trainer or a hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from core import make_optimizer
from core.lessons import paper_recipe
from tests.helpers.apptest_helpers import open_page


# ----------------------------------------------------------------------------- Adam
def test_adam_table_and_rule_show_the_optimizer_the_trainer_builds(runs):
    group = make_optimizer(torch.nn.Linear(2, 2)).param_groups[0]
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
    optimizer = make_optimizer(layer)  # the trainer's own Adam; its step sets the rate
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
