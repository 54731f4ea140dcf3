"""The attention canvas's payload (app/ui/canvas/payload.py): what the browser decodes is what Python drew,
within float16 (hover) and 1/255 (colour) quantisation; the colour path costs about one byte a cell."""

from __future__ import annotations

import numpy as np
import pytest

from app.ui.canvas import payload

ROWS = [f"{i}:q{i}" for i in range(6)]
COLS = [f"{j}:k{j}" for j in range(9)]


def _maps(layers: int = 3, heads: int = 4, tq: int = 6, tk: int = 9, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((layers, heads, tq, tk)).astype(np.float32) * 3
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)  # (L, H, Tq, Tk) rows summing to 1


def test_maps_round_trip_within_quantisation():
    every = _maps()
    data = payload.encode_maps(list(every), ROWS, COLS, shape=every.shape, sent=[0, 1, 2], look=payload.Look())
    header, arrays = payload.decode(data)
    assert (header["layers"], header["heads"], header["tq"], header["tk"]) == every.shape
    assert header["rows"] == ROWS and header["cols"] == COLS and header["values"] is True
    assert arrays["colour"].dtype == np.uint8 and arrays["colour"].shape == every.shape
    assert np.abs(arrays["colour"] / 255.0 - every).max() <= 0.5 / 255 + 1e-7  # rounding to the nearest level
    assert np.array_equal(arrays["colour"], np.rint(every * 255).astype(np.uint8))
    assert np.allclose(arrays["value"].astype(np.float32), every, rtol=2 ** -11, atol=2 ** -24)  # float16's precision
    assert np.allclose(arrays["value"].astype(np.float32).sum(-1), 1.0, atol=1e-2)


def test_sections_are_aligned_for_the_browser_and_the_lut_is_viridis():
    every = _maps()
    data = payload.encode_maps(list(every), ROWS, COLS, shape=every.shape, sent=[0, 1, 2], look=payload.Look())
    header, arrays = payload.decode(data)
    assert all(s["offset"] % 8 == 0 for s in header["sections"].values())
    assert arrays["lut"][0].tolist() == [68, 1, 84] and arrays["lut"][255].tolist() == [253, 231, 37]  # Viridis


def test_masked_cells_stay_exactly_zero():
    causal = np.tril(np.ones((6, 6), np.float32))
    weights = causal / causal.sum(-1, keepdims=True)  # (Tq, Tk) a causal mask's uniform rows
    every = np.broadcast_to(weights, (1, 2, 6, 6)).copy()
    _, arrays = payload.decode(payload.encode_maps(list(every), ROWS, ROWS, shape=every.shape, sent=[0],
                                                   look=payload.Look()))
    assert (arrays["colour"][0, :, ~causal.astype(bool)] == 0).all()
    assert (arrays["value"][0, :, ~causal.astype(bool)] == 0).all()


def test_colour_path_is_about_one_byte_a_cell_for_big_maps():
    tokens = 1100  # 1.2 M cells: past the float16 budget, the payload carries the colour path alone
    every = np.full((1, 1, tokens, tokens), 1.0 / tokens, np.float32)
    labels = [str(i) for i in range(tokens)]
    data = payload.encode_maps(list(every), labels, labels, shape=every.shape, sent=[0], look=payload.Look())
    header, arrays = payload.decode(data)
    assert header["values"] is False and "value" not in arrays
    assert 1.0 <= payload.bytes_per_cell(data) <= 1.1


def test_one_layer_is_sent_past_the_budget(monkeypatch):
    monkeypatch.setattr(payload, "LAYER_BUDGET_CELLS", 100)
    from app.ui import canvas
    every = _maps()
    data = canvas.maps_payload(every, ROWS, COLS, kind="encoder", layer=2, head=1, view="head", look=payload.Look())
    header, arrays = payload.decode(data)
    assert header["sent"] == [2] and arrays["colour"].shape == (1, 4, 6, 9)
    assert np.array_equal(arrays["colour"][0], np.rint(every[2] * 255).astype(np.uint8))
    assert arrays["thumbs"].shape[:2] == (3, 4)  # the model view still shows every layer
    assert header["pinned"] == {"layer": 2, "head": 1, "view": "head"} and header["kind"] == "encoder"


def test_panels_share_scales_and_keep_exact_values():
    before, after = _maps(1, 2)[0]
    diff = after - before
    data = payload.encode_panels([payload.Panel(before, ROWS, COLS, "Before"), payload.Panel(after, ROWS, COLS, "After"),
                                  payload.Panel(diff, ROWS, COLS, "Difference", scale="change")], look=payload.Look())
    header, arrays = payload.decode(data)
    limit = float(np.abs(diff).max())
    assert [p["scale"] for p in header["panels"]] == ["weight", "weight", "change"]
    assert header["panels"][2]["low"] == pytest.approx(-limit) and header["panels"][2]["high"] == pytest.approx(limit)
    assert np.array_equal(arrays["colour2"], np.rint((diff + limit) * (255 / (2 * limit))).astype(np.uint8))
    assert np.allclose(arrays["value2"].astype(np.float32), diff, atol=1e-3)
    assert arrays["colour2"][np.unravel_index(np.abs(diff).argmax(), diff.shape)] in (0, 255)


def test_bad_labels_are_refused():
    every = _maps()
    with pytest.raises(ValueError, match="labels"):
        payload.encode_maps(list(every), ROWS[:-1], COLS, shape=every.shape, sent=[0, 1, 2], look=payload.Look())
    with pytest.raises(ValueError, match="not an attention canvas payload"):
        payload.decode(b"PNG\0" + bytes(12))
