"""The neuron view's payload (app/ui/canvas/neurons.py): the float16 queries and keys the browser reads give back
the model's own maps, softmax(q·kᵀ/√d_k) with the mask, to 1e-3; past the budget one layer travels; maps held
as plain arrays carry none."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.ui import canvas
from app.ui.canvas import neurons, payload
from core import explain
from tests.helpers.paths import REVERSE


@pytest.fixture(scope="module")
def explained():
    return explain(REVERSE, "abcde", maps="on_demand"), explain(REVERSE, "abcde", maps="exact")


def _payload(exp, kind: str, layer: int = 0) -> tuple[dict, dict]:
    shape = exp.attention[kind].shape
    labels = [f"{i}" for i in range(shape[2])], [f"{j}" for j in range(shape[3])]
    data = canvas.maps_payload(exp.attention[kind], *labels, kind=kind, layer=layer, head=0, view="neuron",
                               look=payload.Look())
    return payload.decode(data)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_the_browsers_queries_and_keys_give_the_models_maps(explained, kind):
    traced, exact = explained
    header, arrays = _payload(traced, kind)
    info = header["neurons"]
    q, k = arrays["q"].astype(np.float64), arrays["k"].astype(np.float64)  # (l, H, Tq, dk), (l, Hkv, Tk, dk)
    assert arrays["q"].dtype == np.float16 and info["layers"] == [0, 1] and info["plain"] is True
    assert info["scale"] == pytest.approx([1 / np.sqrt(info["dk"])] * 2)  # the paper's 1/√d_k
    keys = k[:, info["kv_head_of"]]  # (l, H, Tk, dk)
    scores = np.einsum("lhqd,lhkd->lhqk", q, keys) * np.asarray(info["scale"])[:, None, None, None]
    mask = traced.attention[kind].masks[0] if kind == "decoder" else np.ones(scores.shape[-2:], bool)
    scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    assert np.abs(weights - exact.attention[kind]).max() < 1e-3
    assert not np.allclose(weights[:, 0], weights[:, 1], atol=1e-2)  # the heads differ: each has its own q and k


def test_past_the_budget_the_opening_layer_alone_travels(explained, monkeypatch):
    traced, _ = explained
    monkeypatch.setattr(neurons, "NEURON_VALUES", traced.attention["encoder"].q[0].size * 2)
    header, arrays = _payload(traced, "encoder", layer=1)
    assert header["neurons"]["layers"] == [1] and arrays["q"].shape[0] == 1
    assert np.array_equal(arrays["q"][0], traced.attention["encoder"].q[1].astype(np.float16))


def test_maps_held_whole_carry_no_neurons_unless_given(explained):
    traced, exact = explained
    header, arrays = _payload(exact, "encoder")
    assert header["neurons"] is None and "q" not in arrays
    given = canvas.neurons_of(traced.attention["encoder"])
    shape = exact.attention["encoder"].shape
    data = canvas.maps_payload(exact.attention["encoder"], ["a"] * shape[2], ["b"] * shape[3], kind="encoder",
                               layer=0, head=0, view="head", look=payload.Look(), neurons=given)
    header, arrays = payload.decode(data)
    assert header["neurons"]["dk"] == 16 and arrays["k"].shape == (2, 4, 5, 16)
    assert canvas.neurons_of(dataclasses.replace(traced.attention["encoder"], scores=True)) is None  # not weights
