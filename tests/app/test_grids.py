"""The Learn pages' matrices (``app.charts.grids``) as figures: what each panel holds and where it is drawn."""

from __future__ import annotations

import numpy as np
import pytest

from app.charts import grids, look


def test_two_matrices_side_by_side_are_one_figure_with_one_row_axis_and_one_colour_bar():
    unmasked, masked = np.full((3, 3), 1 / 3), np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    positions = ["0", "1", "2"]
    pair = grids.side_by_side((unmasked, masked), ("Without the mask", "With the look-ahead mask"),
                              x_title="key position", y_title="query position", rows=positions, cols=positions,
                              domain=(0.0, 1.0), annotate=True)
    left, right = pair.data
    np.testing.assert_array_equal(left.z, unmasked)
    np.testing.assert_array_equal(right.z, masked)
    assert (left.xaxis, right.xaxis, left.yaxis, right.yaxis) == ("x", "x2", "y", "y")  # rows labelled once
    assert left.showscale is False and right.showscale is not False  # one colour bar, for both
    assert (left.zmin, left.zmax) == (right.zmin, right.zmax) == (0.0, 1.0)  # one colour scale
    first, second = pair.layout.xaxis.domain, pair.layout.xaxis2.domain
    assert first[0] == 0 and second[1] == 1 and first[1] < second[0]  # a gap between the panels
    assert second[1] - second[0] == pytest.approx(first[1] - first[0])
    assert [a.text.replace("<br>", " ") for a in pair.layout.annotations] == ["Without the mask",
                                                                             "With the look-ahead mask"]
    assert [a.x for a in pair.layout.annotations] == [first[0], second[0]]  # each title over its panel
    assert list(left.text[2]) == ["0.33", "0.33", "0.33"] and list(right.text[0]) == ["1.00", "0", "0"]
    assert look.meta(pair)["settled"] and pair.layout.margin.r >= 75  # the colour bar's room
    with pytest.raises(ValueError, match="must be 3 × 3"):
        grids.side_by_side((unmasked, masked[:2]), ("a", "b"), x_title="k", y_title="q", rows=positions,
                           cols=positions)


def test_three_signed_matrices_share_one_scale_symmetric_about_zero_over_all_of_them():
    x, y = np.array([[-0.5, 0.25]]), np.array([[2.0, -1.0]])
    figure = grids.side_by_side((x, y, y), ("x", "f(x)", "g(x)"), x_title="d", y_title="t", value="value",
                                rows=["t0"], cols=["d0", "d1"], scheme="diverging", annotate=True)
    assert [t.xaxis for t in figure.data] == ["x", "x2", "x3"] and {t.yaxis for t in figure.data} == {"y"}
    assert [t.showscale for t in figure.data] == [False, False, True]
    assert {(t.zmin, t.zmax) for t in figure.data} == {(-2.0, 2.0)}  # the largest |value| of all three
    domains = [figure.layout[name].domain for name in ("xaxis", "xaxis2", "xaxis3")]
    assert domains[0][0] == 0 and domains[-1][1] == pytest.approx(1)
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:]))  # in order, apart
    assert [a.x for a in figure.layout.annotations] == [d[0] for d in domains]


def test_a_mask_beside_its_weights_is_the_first_panel_of_one_figure_drawn_as_a_mask():
    mask = np.tril(np.ones((3, 3), dtype=bool))
    unmasked, masked = np.full((3, 3), 1 / 3), np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]
    positions = ["0", "1", "2"]
    figure = grids.mask_beside(mask, (unmasked, masked), ("Without the mask", "With the mask"),
                               mask_title="Look-ahead mask, 3 × 3", x_title="key position", y_title="query position",
                               rows=positions, cols=positions, annotate=True)
    allowed, left, right = figure.data
    titles = [a.text.replace("<br>", " ") for a in figure.layout.annotations]
    assert titles == ["Look-ahead mask, 3 × 3", "Without the mask", "With the mask"]
    assert (allowed.xaxis, left.xaxis, right.xaxis) == ("x", "x2", "x3") and {t.yaxis for t in figure.data} == {"y"}
    assert allowed.name == "allowed" and np.array_equal(allowed.z, mask.astype(float))
    assert [list(row) for row in allowed.text] == [["✓", "✗", "✗"], ["✓", "✓", "✗"], ["✓", "✓", "✓"]]
    assert allowed.colorscale[0][1] == grids.MASKED and allowed.colorscale[-1][1] == grids.MAY_ATTEND
    assert allowed.showscale is False and left.showscale is False and right.showscale is not False  # the weights' bar
    assert (left.zmin, left.zmax) == (right.zmin, right.zmax) == (0.0, 1.0)
    np.testing.assert_array_equal(right.z, masked)
    assert list(right.text[0]) == ["1.00", "0", "0"]
