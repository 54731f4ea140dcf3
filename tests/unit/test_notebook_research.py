"""The Research views in a notebook (attnscope/research.py): each grid holds core's single-run numbers — the last
lens stage is the model's own output distribution, a sweep cell is one head knocked out alone — for a path or a
loaded model, and a measure the model lacks is one clear error."""

from __future__ import annotations

import numpy as np
import pytest

import core
from attnscope import research
from tests.helpers.paths import SHIPPED

LM = SHIPPED / "lm.safetensors"
TEXT = "the cat sat"


def _z(figure) -> np.ndarray:
    return np.asarray(figure.data[0].z, dtype=float)


@pytest.fixture(scope="module")
def lm():
    return core.load_checkpoint(LM)


def test_the_lens_grid_ends_with_the_models_own_choice(lm):
    figure = research.lens(LM, TEXT)  # from the path
    lens = core.logit_lens(lm, TEXT)
    np.testing.assert_allclose(_z(figure), lens.final_prob, atol=1e-6)
    prediction = core.explain(lm, TEXT).prediction  # the last stage after the last token is the model's output
    assert lens.top_tokens[-1][-1] == prediction.labels[:5]
    np.testing.assert_allclose(lens.top_probs[-1, -1], prediction.probabilities[:5], atol=1e-6)
    assert figure.data[0].text[-1][-1] == "␣"  # each cell writes its stage's top token (here a space, shown)
    assert figure.data[0].colorbar.title.text == "probability"


def test_a_sweep_cell_is_that_head_knocked_out_alone(lm):
    grid = _z(research.sweep(lm, TEXT))  # (L, H) of the decoder
    layers, heads = grid.shape
    intact = core.head_sweep(lm, TEXT)
    np.testing.assert_allclose(grid, intact.change["decoder"], atol=1e-6)
    # one cell again by hand: knock out (1, 2) alone and measure the intact prediction's log-probability
    mask = {"decoder": core.analysis.knockout_mask(layers, heads, [(1, 2)])}
    alone = core.head_sweep(lm, TEXT, cells=(1 * heads + 2, 1 * heads + 3))
    assert np.isnan(alone.change["decoder"]).sum() == layers * heads - 1
    np.testing.assert_allclose(alone.change["decoder"][1, 2], grid[1, 2], atol=1e-5)
    before, after = core.explain(lm, TEXT), core.explain(lm, TEXT, head_mask=mask)
    np.testing.assert_array_equal(after.attention["decoder"][1, 2], before.attention["decoder"][1, 2])  # its map stays
    assert not np.allclose(after.prediction.probabilities, before.prediction.probabilities)  # its output does not


def test_head_types_are_the_three_measures_on_their_scale(lm):
    grids = research.head_types(lm, TEXT, seed=3)
    exp = core.explain(lm, TEXT)
    np.testing.assert_allclose(_z(grids["sink"]), core.head_types.sink_share(exp.attention["decoder"]), atol=1e-6)
    np.testing.assert_allclose(_z(grids["previous"]),
                               core.head_types.previous_token_score(exp.attention["decoder"]), atol=1e-6)
    repeat = min(20, max(2, (lm.config.max_len - 2) // 2))
    np.testing.assert_allclose(_z(grids["induction"]), core.induction_probe(lm, repeat=repeat, seed=3).score,
                               atol=1e-6)
    assert all(g.data[0].zmin == 0.0 and g.data[0].zmax == 1.0 for g in grids.values())


def test_a_diff_against_itself_is_zero_and_other_tokens_are_refused(lm):
    assert np.allclose(_z(research.diff(lm, LM, TEXT)), 0.0, atol=1e-7)
    with pytest.raises(ValueError, match="shape"):
        research.diff(SHIPPED / "translation.safetensors", SHIPPED / "reverse.safetensors", "abc")
    with pytest.raises(ValueError, match="no 'cross'"):
        research.head_types(lm, TEXT, kind="cross")
    with pytest.raises(ValueError):
        research.lens(SHIPPED / "sentiment.safetensors", "i love it")  # an encoder predicts no next token
