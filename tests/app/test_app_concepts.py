"""The "Self-attention: strengths and limits" page and the core lessons behind it, checked against core."""

from __future__ import annotations

import numpy as np
import pytest
from tests.helpers.apptest_helpers import as_matrix, open_page
from tests.helpers.paths import SHIPPED
from tests.helpers.apptest_helpers import find_chart as chart

from app import routes
from core import get_task, load_checkpoint
from core.lessons import length_accuracy, model_projection, path_comparison, pe_beyond, permutation_demo


def table_with(at, *columns):
    return next(df.value for df in at.dataframe if all(c in df.value.columns for c in columns))


def test_recurrence_table_follows_n_and_d(runs):
    at = open_page("self-attention")
    table = table_with(at, "sequential steps", "longest path between two tokens")
    assert list(table["sequential steps"]) == [50, 1] and list(table["longest path between two tokens"]) == [49, 1]
    assert list(table["work per layer (multiply-adds)"]) == [50 * 512 ** 2, 50 ** 2 * 512]
    at.slider(key="cc_n").set_value(300).run()
    at.select_slider(key="cc_d").set_value(64).run()
    table = table_with(at, "sequential steps")
    expected = path_comparison([300], 64)
    assert list(table["work per layer (multiply-adds)"]) == [expected.work_rnn[0], expected.work_attention[0]]
    _, frame = chart(at, "Work per layer at d = 64")
    assert 300 in set(frame["n"])


def test_shuffling_permutes_the_maps_exactly_without_positions(runs):
    at = open_page("self-attention", ckpt="shipped:reverse", query={"cc_text": "abcdefg"})
    assert any("same map, only permuted" in s.value for s in at.success)
    ckpt = load_checkpoint(SHIPPED / "reverse.safetensors")
    demo = permutation_demo(ckpt, "abcdefg")
    assert demo.largest_difference < 1e-5
    unshuffled = chart(at, "PᵀA(Px)P: put back")[-1]
    np.testing.assert_allclose(as_matrix(unshuffled, "weight"), demo.original[0, 0], atol=1e-5)
    at.toggle(key="cc_pos").set_value(True).run()
    assert any("order now matters" in w.value for w in at.warning)
    assert permutation_demo(ckpt, "abcdefg", positions=True).largest_difference > 1e-3


def test_positions_beyond_the_trained_length_are_measured():
    ckpt = load_checkpoint(SHIPPED / "reverse.safetensors")
    acc = length_accuracy(ckpt, per_length=4)
    assert acc.trained == get_task("reverse").trained_lengths
    assert acc.lengths[0] == acc.trained[0] and acc.lengths[-1] == ckpt.config.max_len - 1
    seen = [a for n, a in zip(acc.lengths, acc.exact_match) if n <= acc.trained[1]]
    unseen = [a for n, a in zip(acc.lengths, acc.exact_match) if n > acc.trained[1] + 2]
    assert np.mean(seen) > 0.9 > 0.2 > np.mean(unseen)
    beyond = pe_beyond(ckpt)
    assert beyond.similarity.shape == (ckpt.config.max_len,) * 2
    np.testing.assert_allclose(np.diag(beyond.similarity), 1.0, atol=1e-6)
    assert beyond.nearest_seen[beyond.trained:].min() < beyond.nearest_seen[:beyond.trained].min()


def test_the_page_measures_accuracy_by_length_on_request(runs):
    at = open_page("self-attention", ckpt="shipped:reverse")
    assert chart(at, "Cosine similarity of the model's position vectors")
    at.button(key="cc_measure").click().run()
    _, frame = chart(at, "reverse: accuracy by input length (8 strings each)")
    assert frame["length"].min() == get_task("reverse").trained_lengths[0]
    assert any("unseen lengths" in c.value for c in at.caption)


def test_quadratic_cost_table(runs):
    at = open_page("self-attention", query={"cc_max": "256"})
    table = table_with(at, "milliseconds", "map memory (MB)")
    assert list(table["n"]) == [16, 32, 64, 128, 256]
    np.testing.assert_allclose(table["map memory (MB)"], 4 * 4 * np.array([16, 32, 64, 128, 256]) ** 2 / 1e6)
    assert (table["milliseconds"] > 0).all()


def test_coreference_points_to_minilm(runs):
    at = open_page("self-attention")
    links = at.get("page_link")
    assert any(link.proto.page.endswith(routes.MINILM.rsplit("/", 1)[-1]) or "MiniLM" in link.proto.label
               for link in links)


@pytest.mark.parametrize("mode", ["encoder self", "decoder self", "cross"])
def test_model_projection_rebuilds_the_models_own_map(mode):
    ckpt = load_checkpoint(SHIPPED / "translation.safetensors")
    proj = model_projection(ckpt, "i have cats", "yo tengo gatos", mode, head=1)
    assert proj.max_error < 1e-5
    np.testing.assert_allclose(proj.scaled, proj.dot / np.sqrt(ckpt.config.head_dim))
    np.testing.assert_allclose(proj.q, proj.x @ proj.w_q + proj.b_q, atol=1e-9)
    if mode == "decoder self":
        assert not proj.mask[np.triu_indices(len(proj.mask), 1)].any()
        assert np.all(np.triu(proj.weights, 1) == 0)
    with pytest.raises(ValueError):
        model_projection(load_checkpoint(SHIPPED / "sentiment.safetensors"), "a", "b", mode)
