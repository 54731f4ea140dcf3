"""core.lessons.self_attention: permutation equivariance, Table 1 counts, measured attention cost."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core import explain, load_checkpoint
from core.lessons.self_attention import attention_cost, path_comparison, permutation_demo

CHECKPOINTS = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"


@pytest.fixture(scope="module")
def translation():
    return load_checkpoint(CHECKPOINTS / "translation.safetensors")


def test_without_positions_the_maps_permute_exactly(translation):
    demo = permutation_demo(translation, "the red car", permutation=[2, 0, 1], positions=False)
    assert demo.shuffled_tokens == (demo.tokens[2], demo.tokens[0], demo.tokens[1])
    assert demo.largest_difference < 1e-5
    # the shuffled map is the original with rows and columns permuted: A(Px) = P A(x) Pᵀ
    np.testing.assert_allclose(demo.shuffled[0, 0], demo.original[0, 0][[2, 0, 1]][:, [2, 0, 1]], atol=1e-5)


def test_with_positions_the_maps_change(translation):
    demo = permutation_demo(translation, "the red car", permutation=[2, 0, 1], positions=True)
    assert demo.largest_difference > 1e-2
    np.testing.assert_allclose(demo.original, explain(translation, "the red car").attention["encoder"], atol=1e-5)


def test_default_permutation_moves_tokens_and_bad_ones_are_refused(translation):
    demo = permutation_demo(translation, "the red car")
    assert sorted(demo.permutation) == [0, 1, 2] and list(demo.permutation) != [0, 1, 2]
    with pytest.raises(ValueError):
        permutation_demo(translation, "the red car", permutation=[0, 0, 1])
    with pytest.raises(ValueError):
        permutation_demo(translation, "car")
    with pytest.raises(ValueError, match="encoder"):
        permutation_demo(load_checkpoint(CHECKPOINTS / "lm.safetensors"), "hello")


def test_path_comparison_counts_table_one():
    table = path_comparison([4, 16], d_model=8)
    assert table.sequential_rnn == (4, 16) and table.sequential_attention == (1, 1)
    assert table.path_rnn == (3, 15) and table.path_attention == (1, 1)
    assert table.work_rnn == (4 * 64, 16 * 64) and table.work_attention == (16 * 8, 256 * 8)


def test_attention_cost_reports_quadratic_memory():
    cost = attention_cost([8, 16], d_model=16, n_heads=2, repeats=1)
    assert cost.map_bytes == (4 * 2 * 64, 4 * 2 * 256)
    assert all(ms >= 0 for ms in cost.milliseconds)
    with pytest.raises(ValueError):
        attention_cost([0])
