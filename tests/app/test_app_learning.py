"""Lesson: how it learns — every stage draws from one real training step of the shipped translation model: its
numbers on the page are core.lessons.learning_step's, the step number and stage travel in the link, and the last
stage opens Train with the same recipe."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import lessons
from tests.helpers.apptest_helpers import open_page, plotly_array, spec
from tests.helpers.paths import SHIPPED


@pytest.fixture(scope="module")
def step():
    ckpt = core.load_checkpoint(SHIPPED / "translation.safetensors")
    return lessons.learning_step(ckpt, lessons.training_pairs(ckpt), step=8001, seed=0)


def _next(at):
    at.button(key="learn_next").click().run()
    assert not at.exception and not at.error, [e.message for e in at.exception]


def test_every_stage_draws_the_real_steps_numbers(step):
    at = open_page("how-it-learns")
    assert "encoder reads" in at.table[0].value.index[0] and "yo" in at.table[0].value.iloc[1].tolist()
    _next(at)  # the masks
    masks = [spec(e) for e in at.get("plotly_chart")]
    np.testing.assert_array_equal(plotly_array(masks[0]["data"][0]["z"]).astype(bool), step.causal)
    _next(at)  # the loss
    latex = " ".join(e.value for e in at.latex)
    for value in (step.cross_entropy, step.kl, step.target_entropy):
        assert f"{value:.4f}" in latex
    probs = plotly_array(spec(at.get("plotly_chart")[0])["data"][0]["z"]).astype(float)
    np.testing.assert_allclose(probs[~step.padded], step.true_prob_before[~step.padded], atol=1e-6)
    assert np.isnan(probs[step.padded]).all()  # padding is not scored: blank, not 0
    _next(at)  # Adam at the Noam rate
    assert at.number_input(key="learn_step").value == 8001  # the step after the model's 8,000
    assert r"9.88 \times 10^{-4}" in " ".join(e.value for e in at.latex)
    _next(at)  # before and after
    shown = {m.label: m.value for m in at.metric}
    assert shown["Loss before (no dropout)"] == f"{step.loss_before:.4f}"
    assert shown["Loss after (no dropout)"] == f"{step.loss_after:.4f}"
    assert shown["The step's own loss (dropout on)"] == f"{step.step_loss:.4f}"
    _next(at)  # Train with the same settings
    assert at.button(key="learn_next").disabled
    assert at.query_params["learn_stage_n"] == "6"


def test_a_linked_step_near_the_warm_up_peak_is_taken_and_an_absurd_one_clamped():
    at = open_page("how-it-learns", query={"learn_stage_n": "5", "learn_step": "400"})
    ckpt = core.load_checkpoint(SHIPPED / "translation.safetensors")
    want = lessons.learning_step(ckpt, lessons.training_pairs(ckpt), step=400, seed=0)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Loss after (no dropout)"] == f"{want.loss_after:.4f}"
    assert want.loss_after > want.loss_before and "rose" in " ".join(m.value for m in at.markdown)
    at = open_page("how-it-learns", query={"learn_stage_n": "99", "learn_step": "10000000"})
    assert not at.exception
    assert at.session_state["learn_stage"] == 5 and at.session_state["learn_step"] == 20_000
