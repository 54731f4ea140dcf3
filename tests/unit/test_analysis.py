"""core.analysis against small hand-computed examples."""

from __future__ import annotations

import numpy as np
import pytest

from core.inspect.analysis import (
    difference, head_entropy, head_statistics, knockout_mask, max_weight, mean_distance, mean_over_heads, rollout,
    rollout_by_layer,
)


def stack(*heads_per_layer: list[np.ndarray]) -> np.ndarray:
    """(L, H, T, T) from lists of 2-D maps, one list per layer."""
    return np.array([np.stack(layer) for layer in heads_per_layer], dtype=np.float32)


EYE = np.eye(4)
UNIFORM = np.full((4, 4), 0.25)
# Causal uniform: row i spreads evenly over keys 0..i.
CAUSAL = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]


def test_identity_attention_has_zero_entropy_distance_and_rollout_identity():
    maps = stack([EYE, EYE], [EYE, EYE])
    np.testing.assert_allclose(head_entropy(maps), np.zeros((2, 2)))
    np.testing.assert_allclose(mean_distance(maps), np.zeros((2, 2)))
    np.testing.assert_allclose(max_weight(maps), np.ones((2, 2)))
    np.testing.assert_allclose(rollout(maps), EYE)
    np.testing.assert_allclose(rollout(maps, residual=False), EYE)


def test_uniform_attention_has_entropy_log2_t_and_hand_computed_distance():
    maps = stack([UNIFORM])
    assert head_entropy(maps)[0, 0] == pytest.approx(2.0)  # log2(4)
    # Row distances |i-j| summed: row0 0+1+2+3=6, row1 1+0+1+2=4, row2 4, row3 6 → mean (6+4+4+6)/4/4 = 1.25
    assert mean_distance(maps)[0, 0] == pytest.approx(1.25)
    assert max_weight(maps)[0, 0] == pytest.approx(0.25)


def test_causal_uniform_entropy_and_distance():
    maps = stack([CAUSAL])
    # Row i has i+1 equal weights: entropies 0, 1, log2(3).
    assert head_entropy(maps)[0, 0] == pytest.approx((0 + 1 + np.log2(3)) / 3)
    # Row distances: 0; (1+0)/2; (2+1+0)/3 → mean (0 + 0.5 + 1) / 3
    assert mean_distance(maps)[0, 0] == pytest.approx(0.5)


def test_fully_masked_rows_are_ignored():
    one_hot_then_zero = np.array([[0.0, 1.0], [0.0, 0.0]])  # row 1: every key masked
    maps = stack([one_hot_then_zero])
    assert head_entropy(maps)[0, 0] == 0.0
    assert mean_distance(maps)[0, 0] == pytest.approx(1.0)  # only row 0: weight 1 at distance 1
    all_zero = stack([np.zeros((2, 2))])
    assert head_entropy(all_zero)[0, 0] == 0.0 and mean_distance(all_zero)[0, 0] == 0.0


def test_mean_over_heads():
    a, b = np.eye(2), np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(mean_over_heads(stack([a, b])), [[[0.5, 0.5], [0.5, 0.5]]])


def test_rollout_of_two_known_layers_is_the_manual_product():
    a1 = np.array([[1.0, 0.0], [0.5, 0.5]])
    a2 = np.array([[0.2, 0.8], [0.0, 1.0]])
    maps = stack([a1], [a2])
    np.testing.assert_allclose(rollout(maps, residual=False), a2 @ a1)
    # With the residual: (A + I) renormalised = (A + I) / 2 for row-stochastic A.
    r1, r2 = (a1 + np.eye(2)) / 2, (a2 + np.eye(2)) / 2
    np.testing.assert_allclose(rollout(maps), r2 @ r1)
    by_layer = rollout_by_layer(maps)
    np.testing.assert_allclose(by_layer[0], r1)
    np.testing.assert_allclose(by_layer[1], r2 @ r1)
    np.testing.assert_allclose(rollout(maps).sum(-1), [1.0, 1.0])  # still a distribution per row


def test_rollout_averages_heads_first():
    a, b = np.eye(2), np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(rollout(stack([a, b]), residual=False), np.full((2, 2), 0.5))


def test_self_attention_only_functions_refuse_rectangular_maps():
    cross = np.full((1, 1, 2, 3), 1 / 3)
    with pytest.raises(ValueError, match="Tq == Tk"):
        rollout(cross)
    with pytest.raises(ValueError, match="Tq == Tk"):
        mean_distance(cross)
    with pytest.raises(ValueError, match="4-D"):
        head_entropy(np.ones((2, 2)))
    assert head_entropy(cross)[0, 0] == pytest.approx(np.log2(3))


def test_head_statistics_records():
    maps = stack([EYE, UNIFORM])
    records = head_statistics(maps)
    assert [(r["layer"], r["head"]) for r in records] == [(0, 0), (0, 1)]
    assert records[0] == {"layer": 0, "head": 0, "entropy_bits": 0.0, "mean_distance": 0.0, "max_weight": 1.0}
    assert records[1]["entropy_bits"] == pytest.approx(2.0)
    assert records[1]["mean_distance"] == pytest.approx(1.25)
    cross = head_statistics(np.full((1, 1, 2, 3), 1 / 3), self_attention=False)
    assert cross[0]["mean_distance"] is None and cross[0]["entropy_bits"] == pytest.approx(np.log2(3))


def test_knockout_mask():
    assert knockout_mask(2, 3, [(0, 1), (1, 2)]) == [[1, 0, 1], [1, 1, 0]]
    assert knockout_mask(1, 2, []) == [[1, 1]]
    with pytest.raises(ValueError, match="outside"):
        knockout_mask(2, 2, [(2, 0)])


def test_difference_crops_to_the_shared_block():
    after, before = np.ones((3, 2)), np.zeros((2, 2))
    diff, same = difference(after, before)
    assert diff.shape == (2, 2) and not same and diff.sum() == 4
    diff, same = difference(np.eye(2), np.eye(2))
    assert same and not diff.any()
