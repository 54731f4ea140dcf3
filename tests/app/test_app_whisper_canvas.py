"""The Whisper page under AppTest: its self-attention reaches the attention canvas as every layer and head of the
decoder (masked: nothing above the diagonal; each row a distribution) and of the encoder over the frames the clip
fills (each row the part of its weight on them), and
a head pinned on the canvas is the one the next run opens on. Needs the Whisper tiny.en package (skipped without
it, failed where ``ATTNSCOPE_REQUIRE_PRETRAINED=1``)."""

from __future__ import annotations

import numpy as np

from tests.helpers.apptest_helpers import canvases, open_page
from tests.helpers.pretrained_files import installed


def _by_kind(at) -> dict[str, tuple[dict, dict]]:
    return {header["kind"]: (header, arrays) for header, arrays in canvases(at) if header["mode"] == "maps"}


def test_the_self_attention_maps_are_every_head_on_the_canvas():
    installed("Whisper tiny.en")
    at = open_page("whisper", timeout=300)
    found = _by_kind(at)
    assert set(found) == {"decoder", "encoder"}
    decoder, arrays = found["decoder"]
    layers, heads, tq, tk = (decoder[n] for n in ("layers", "heads", "tq", "tk"))
    assert (layers, heads) == (4, 6) and tq == tk  # tiny.en: 4 decoder layers of 6 heads
    assert decoder["pinned"] == {"layer": layers - 1, "head": 0, "view": "head"}
    weights = arrays["value"].astype(np.float32)  # (layers sent, H, T, T)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=5e-3)  # float16 on the wire
    assert (weights[..., np.triu_indices(tq, 1)[0], np.triu_indices(tq, 1)[1]] == 0).all()  # the causal mask
    encoder, frames = found["encoder"]
    assert encoder["title"].startswith("Encoder self-attention (") and encoder["rows"] == encoder["cols"]
    assert encoder["row_title"] == "frame (attending)"
    kept = frames["value"].astype(np.float32).sum(axis=-1)  # the frames the audio fills: the rest are left out
    assert (kept <= 1 + 5e-3).all() and kept.mean() > 0.5


def test_a_head_pinned_on_the_canvas_opens_the_next_run():
    installed("Whisper tiny.en")
    at = open_page("whisper", timeout=300)
    at.session_state["speech_decoder_canvas"] = {"pinned": {"kind": "decoder", "layer": 1, "head": 4, "view": "lines"}}
    at.run()
    assert _by_kind(at)["decoder"][0]["pinned"] == {"layer": 1, "head": 4, "view": "lines"}
