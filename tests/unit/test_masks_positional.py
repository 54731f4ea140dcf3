"""Masks (True = may attend) and the paper's sinusoidal positional encoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.model.masks import combine_masks, padding_mask, subsequent_mask
from core.model.positional import LearnedPositional, SinusoidalPositional, sinusoidal_encoding

LECTURE_TABLE = [
    [0.0, 1.0, 0.0, 1.0],
    [0.84147098, 0.54030231, 0.09983342, 0.99500417],
    [0.90929743, -0.41614684, 0.19866933, 0.98006658],
    [0.14112001, -0.9899925, 0.29552021, 0.95533649],
]


def paper_formula(seq_len: int, d_model: int, base: float) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(same), element by element in float64."""
    table = np.zeros((seq_len, d_model), dtype=np.float64)
    for pos in range(seq_len):
        for col in range(d_model):
            two_i = col - (col % 2)
            angle = pos / base ** (two_i / d_model)
            table[pos, col] = np.sin(angle) if col % 2 == 0 else np.cos(angle)
    return table


# ---------------------------------------------------------------- masks
@pytest.mark.parametrize("n", [1, 2, 5])
def test_subsequent_mask_is_lower_triangular_true(n: int) -> None:
    mask = subsequent_mask(n)
    assert mask.dtype == torch.bool and mask.shape == (n, n)
    for query in range(n):
        for key in range(n):
            assert bool(mask[query, key]) == (key <= query)


def test_subsequent_mask_needs_a_positive_length() -> None:
    with pytest.raises(ValueError):
        subsequent_mask(0)


def test_padding_mask_marks_real_keys_with_shape_b_1_t() -> None:
    ids = torch.tensor([[5, 6, 7, 0], [5, 0, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [[True, True, True, False], [True, False, False, False]]


def test_padding_mask_uses_the_given_pad_id() -> None:
    assert padding_mask(torch.tensor([[0, 3, 3]]), pad_id=3)[0, 0].tolist() == [True, False, False]


def test_padding_mask_rejects_non_batched_ids() -> None:
    with pytest.raises(ValueError):
        padding_mask(torch.tensor([1, 2, 3]), pad_id=0)


def test_combine_masks_broadcasts_causal_and_padding_to_b_t_t() -> None:
    ids = torch.tensor([[5, 6, 0], [5, 6, 7]])
    combined = combine_masks(subsequent_mask(3), padding_mask(ids, 0))
    assert combined.shape == (2, 3, 3)
    expected_row0 = [[True, False, False], [True, True, False], [True, True, False]]
    assert combined[0].tolist() == expected_row0
    assert combined[1].tolist() == subsequent_mask(3).tolist()


def test_combine_masks_skips_none() -> None:
    causal = subsequent_mask(3)
    assert combine_masks() is None
    assert combine_masks(None, None) is None
    assert torch.equal(combine_masks(None, causal, None), causal)


# ---------------------------------------------------------------- sinusoidal encoding
def test_sinusoidal_matches_the_lecture_table() -> None:
    table = sinusoidal_encoding(4, 4, base=100)
    assert table.dtype == torch.float32 and table.shape == (4, 4)
    np.testing.assert_allclose(table.numpy(), np.array(LECTURE_TABLE), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    ("seq_len", "d_model", "base"),
    [(50, 16, 10000.0), (30, 7, 10000.0), (9, 1, 10000.0), (12, 5, 100.0), (64, 64, 10000.0), (3, 2, 2.0)],
)
def test_sinusoidal_matches_the_paper_formula(seq_len: int, d_model: int, base: float) -> None:
    table = sinusoidal_encoding(seq_len, d_model, base=base)
    assert table.shape == (seq_len, d_model)
    np.testing.assert_allclose(table.numpy(), paper_formula(seq_len, d_model, base), atol=1e-6, rtol=0)


def test_odd_d_model_ends_with_a_sine_column() -> None:
    table = sinusoidal_encoding(10, 7).numpy().astype(np.float64)
    frequency = 1.0 / 10000 ** (6 / 7)
    np.testing.assert_allclose(table[:, 6], np.sin(np.arange(10) * frequency), atol=1e-6)


def test_default_base_is_the_papers_10000() -> None:
    assert torch.equal(sinusoidal_encoding(20, 8), sinusoidal_encoding(20, 8, base=10000.0))
    assert not torch.equal(sinusoidal_encoding(20, 8), sinusoidal_encoding(20, 8, base=100.0))


@pytest.mark.parametrize(("d_model", "base", "offset"), [(8, 10000.0, 1), (8, 10000.0, 5), (6, 100.0, 3)])
def test_shift_by_k_is_a_fixed_rotation_per_frequency_pair(d_model: int, base: float, offset: int) -> None:
    table = sinusoidal_encoding(40, d_model, base=base).double()
    for pair in range(d_model // 2):
        omega = 1.0 / base ** (2 * pair / d_model)
        c, s = np.cos(omega * offset), np.sin(omega * offset)
        rotation = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)  # acts on (sin, cos) rows
        now = table[: 40 - offset, 2 * pair : 2 * pair + 2]  # (T, 2)
        later = table[offset:, 2 * pair : 2 * pair + 2]
        torch.testing.assert_close(now @ rotation.T, later, atol=1e-5, rtol=0)


def test_each_position_has_a_distinct_encoding() -> None:
    table = sinusoidal_encoding(24, 16)
    distances = torch.cdist(table, table) + torch.eye(24) * 10
    assert distances.min() > 1e-3


@pytest.mark.parametrize(("seq_len", "d_model", "base"), [(-1, 4, 100.0), (4, 0, 100.0), (4, 4, 1.0)])
def test_sinusoidal_rejects_bad_arguments(seq_len: int, d_model: int, base: float) -> None:
    with pytest.raises(ValueError):
        sinusoidal_encoding(seq_len, d_model, base=base)


def test_sinusoidal_module_adds_the_table_and_is_not_saved() -> None:
    module = SinusoidalPositional(max_len=10, d_model=4, base=100.0)
    x = torch.zeros(2, 4, 4)
    torch.testing.assert_close(module(x), sinusoidal_encoding(4, 4, 100.0).expand(2, 4, 4))
    assert module.state_dict() == {}


def test_learned_module_adds_its_weight_per_position() -> None:
    torch.manual_seed(0)
    module = LearnedPositional(max_len=10, d_model=4)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(module(x), x + module.table.weight[:3])
