"""The one side-by-side component (app/charts/comparison.py): one figure, one label column, one colour bar
per scale, titles that fit their panel, x labels that never touch."""

from __future__ import annotations

import numpy as np
import pytest

from app.charts import comparison
from core import analysis


def _maps(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random((n, n))
    return weights / weights.sum(axis=1, keepdims=True)  # (Tq, Tk), rows sum to 1


def _labels(n: int, word: str = "tok") -> list[str]:
    return [f"{i}:{word}{i}" for i in range(n)]


def _triptych(first, second, first_axes, second_axes, *, titles, difference_title, y_title, font_scale=1.0):
    """First | second | second − first as the comparison figures draw them (the research page's layout)."""
    diff, same = analysis.difference(second, first)
    queries, keys = second_axes
    panels = [comparison.Panel(first, *first_axes, title=titles[0]), comparison.Panel(second, *second_axes, title=titles[1]),
              comparison.Panel(diff, list(queries)[:diff.shape[0]], list(keys)[:diff.shape[1]], title=difference_title,
                               scale="change")]
    return comparison.figure(panels, y_title=y_title, font_scale=font_scale), diff, same


def test_triptych_is_one_figure_with_one_weight_scale_and_one_diverging_scale():
    first, second = _maps(5, 0), _maps(5, 1)
    axes = (_labels(5), _labels(5))
    figure, diff, same = _triptych(first, second, axes, axes, titles=("Before", "After"),
                                             difference_title="Difference", y_title="query")
    assert same and np.allclose(diff, second - first)
    assert [t.type for t in figure.data] == ["heatmap"] * 3
    assert [t.coloraxis for t in figure.data] == ["coloraxis", "coloraxis", "coloraxis2"]
    weights, change = figure.layout.coloraxis, figure.layout.coloraxis2
    assert (weights.cmin, weights.cmax) == (0.0, 1.0)
    assert -change.cmin == change.cmax == pytest.approx(np.abs(second - first).max())
    assert np.allclose(np.asarray(figure.data[2].z), second - first)
    # one label column: the later panels share the first one's y axis and print no labels of their own
    assert figure.layout.yaxis2.matches == "y" and figure.layout.yaxis2.showticklabels is False
    assert figure.layout.yaxis3.showticklabels is False
    assert [a.text for a in figure.layout.annotations] == ["Before", "After", "Difference"]
    assert all(axis.tickangle == -90 for axis in (figure.layout.xaxis, figure.layout.xaxis2, figure.layout.xaxis3))


def test_different_rows_keep_their_own_labels_with_room_between_panels():
    first, second = _maps(4, 0), _maps(6, 1)
    figure, diff, same = _triptych(first, second, (_labels(4, "a"), _labels(4, "a")),
                                             (_labels(6, "bb"), _labels(6, "bb")), titles=("One", "Two"),
                                             difference_title="Difference", y_title="query")
    assert not same and diff.shape == (4, 4)
    assert figure.layout.yaxis2.matches is None and figure.layout.yaxis2.showticklabels is not False
    gap = figure.layout.xaxis2.domain[0] - figure.layout.xaxis.domain[1]
    longest = max(len(label) for label in _labels(6, "bb"))
    size = figure.layout.yaxis2.tickfont.size
    assert gap * comparison.NOMINAL_WIDTH >= comparison.CHAR * size * longest  # room for the second's labels


@pytest.mark.parametrize("font_scale", [1.0, 1.5])
def test_long_titles_wrap_and_many_columns_are_thinned(font_scale):
    first, second = _maps(40, 0), _maps(40, 1)
    axes = (_labels(40), _labels(40))
    title = "Step 4,000 · Cross-attention (decoder reads encoder) · layer 2, head 3"
    figure, _, _ = _triptych(first, second, axes, axes, titles=(title, title), difference_title=title,
                                       y_title="query", font_scale=font_scale)
    assert all("<br>" in a.text for a in figure.layout.annotations)
    # every character kept, only line breaks added (a word longer than a line is split)
    assert [a.text.replace("<br>", "").replace(" ", "") for a in figure.layout.annotations] == [title.replace(" ", "")] * 3
    for axis in (figure.layout.xaxis, figure.layout.xaxis2, figure.layout.xaxis3):
        panel_px = (axis.domain[1] - axis.domain[0]) * comparison.NOMINAL_WIDTH
        assert len(axis.tickvals) < 40
        assert len(axis.tickvals) * 1.3 * axis.tickfont.size <= panel_px * 1.01


def test_weights_and_scores_share_rows_and_take_a_signed_scale():
    weights, scores = _maps(3, 0), np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0], [2.0, 2.0, -4.0]])
    figure = comparison.figure([comparison.Panel(weights, _labels(3), _labels(3), title="Head"),
                                comparison.Panel(scores, _labels(3), _labels(3), title="Scores", scale="score")],
                               y_title="query")
    assert (figure.layout.coloraxis.cmin, figure.layout.coloraxis.cmax) == (0.0, 1.0)
    assert (figure.layout.coloraxis2.cmin, figure.layout.coloraxis2.cmax) == (-4.0, 4.0)
    assert figure.layout.coloraxis2.colorbar.title.text == "score"
