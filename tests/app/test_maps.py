"""The model grid's thumbnails (issue 24: SmolLM2's 352-token thumbnails were uniformly dark): blocks keep
the weight their keys hold together, and one shared colour scale tops out where the blocks are."""

from __future__ import annotations

import numpy as np

from app.charts import look, maps


def _causal_uniform(t: int) -> np.ndarray:
    """(T, T): query i spreads its weight evenly over keys 0..i (a causal head that looks everywhere)."""
    weights = np.tril(np.ones((t, t), dtype=np.float32))
    return weights / weights.sum(1, keepdims=True)


def _sink(t: int, parked: float = 0.8) -> np.ndarray:
    """(T, T): a causal head parking ``parked`` of every row on the first token, the rest on the diagonal."""
    weights = np.eye(t, dtype=np.float32) * (1 - parked)
    weights[:, 0] += parked
    weights[0, 0] = 1.0
    return weights


def test_a_block_holds_the_weight_of_its_keys_averaged_over_its_queries():
    rng = np.random.default_rng(0)
    matrix = rng.random((50, 70)).astype(np.float32)
    matrix /= matrix.sum(1, keepdims=True)
    blocks = maps.block_mass(matrix, 5, 7)  # 10 × 10 cells per block
    expected = matrix.reshape(5, 10, 7, 10).sum(3).mean(1)
    np.testing.assert_allclose(blocks, expected, rtol=1e-5)
    np.testing.assert_allclose(blocks.sum(1), 1.0, rtol=1e-5)  # each thumbnail row still sums to 1


def test_small_maps_are_drawn_as_they_are_on_the_0_to_1_scale():
    maps_ = np.stack([np.stack([_causal_uniform(12)] * 2)] * 3)  # (L=3, H=2, 12, 12)
    figure = maps.model_grid(maps_, title="grid")
    heat = figure.data[0]
    assert (heat.zmin, heat.zmax) == (0, 1.0) and look.meta(figure)["value"] == "weight"
    grid = np.asarray(heat.z)
    np.testing.assert_array_equal(grid[:12, :12], _causal_uniform(12))


def test_long_thumbnails_share_one_readable_scale():
    t = 352
    maps_ = np.stack([np.stack([_causal_uniform(t), _sink(t)])] * 2)  # (L=2, H=2, 352, 352)
    figure = maps.model_grid(maps_, title="grid")
    heat, top = figure.data[0], look.meta(figure)["top"]
    grid = np.asarray(heat.z, dtype=np.float32)
    assert heat.zmax == top and look.meta(figure)["value"] == "weight per block"
    assert 0.01 <= top < 0.5  # on 0–1 the spread-out head's blocks (≈ 1/24 each) were all but black
    spread = grid[:24, :24]  # layer 1, head 1
    lit = np.tril(np.ones((24, 24), dtype=bool))
    assert np.median(spread[lit]) / top > 0.25  # most of its blocks get a visible colour
    sink = grid[:24, 25:49]  # layer 1, head 2: its first column holds 0.8 of every row, above the scale's top
    assert sink[:, 0].min() > top and sink[1:, 1:][~np.eye(23, dtype=bool)].max() == 0.0


def test_the_thinned_labels_note_counts_in_english_ordinals():
    """"every 2nd position", never "every 2th"."""
    matrix = np.full((4, 4), 0.25)
    for step, said in ((2, "every 2nd position"), (3, "every 3rd position"), (4, "every 4th position"),
                       (11, "every 11th position"), (21, "every 21st position")):
        assert said in maps._note(matrix, matrix, step, 1)
