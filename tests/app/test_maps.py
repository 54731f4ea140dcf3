"""The model view's thumbnails (SmolLM2's 352-token thumbnails were uniformly dark): blocks keep the weight
their keys hold together, and one shared colour scale tops out where the blocks are (app/ui/canvas/payload.py)."""

from __future__ import annotations

import numpy as np

from app.charts import maps
from app.ui.canvas import payload


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
    thumbs, top = payload.thumbnails(list(maps_))
    assert top == 1.0 and thumbs.shape == (3, 2, 12, 12)
    np.testing.assert_array_equal(thumbs[0, 0], payload.quantise(_causal_uniform(12)))


def test_long_thumbnails_share_one_readable_scale():
    t, s = 352, payload.THUMB
    maps_ = np.stack([np.stack([_causal_uniform(t), _sink(t)])] * 2)  # (L=2, H=2, 352, 352)
    thumbs, top = payload.thumbnails(list(maps_))
    assert 0.01 <= top < 0.5  # on 0–1 the spread-out head's blocks (≈ 1/32 each) were all but black
    spread = thumbs[0, 0].astype(np.float32) / 255 * top  # layer 1, head 1, in weight per block
    lit = np.tril(np.ones((s, s), dtype=bool))
    assert np.median(spread[lit]) / top > 0.25  # most of its blocks get a visible colour
    sink = thumbs[0, 1]  # layer 1, head 2: its first column holds 0.8 of every row, above the scale's top
    assert (sink[:, 0] == 255).all() and sink[1:, 1:][~np.eye(s - 1, dtype=bool)].max() == 0
    np.testing.assert_allclose(maps.block_mass(maps_[0, 1], s, s)[1:, 0], 0.8, atol=1e-6)


def test_the_thinned_labels_note_counts_in_english_ordinals():
    """"every 2nd position", never "every 2th"."""
    matrix = np.full((4, 4), 0.25)
    for step, said in ((2, "every 2nd position"), (3, "every 3rd position"), (4, "every 4th position"),
                       (11, "every 11th position"), (21, "every 21st position")):
        assert said in maps._note(matrix, matrix, step, 1)
