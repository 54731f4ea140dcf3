"""The notebook widget (attnscope/notebook.py): its state carries the app's canvas payload of every head, equal to
the explanation's maps within the payload's float16 / uint8 quantisation, and its module is the app's canvas.js."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("anywidget")

from app.ui.canvas import module as canvas_module  # noqa: E402
from app.ui.canvas import payload  # noqa: E402
from attnscope import notebook  # noqa: E402
from core import explain  # noqa: E402
from tests.helpers.paths import REVERSE  # noqa: E402


def test_show_sends_every_head_of_the_kind_once_as_the_canvas_payload():
    exp = explain(REVERSE, "abcab")
    widget = notebook.show(exp, kind="cross", layer=1, head=2, view="lines")
    state = widget.get_state()
    header, arrays = payload.decode(bytes(state["payload"]))
    every = np.asarray(exp.attention["cross"])  # (L, H, Tq, Tk)
    assert arrays["value"].shape == every.shape
    np.testing.assert_allclose(arrays["value"].astype(np.float32), every, atol=5e-4)  # float16
    np.testing.assert_array_equal(arrays["colour"], np.round(every * 255).astype(np.uint8))
    assert header["pinned"] == {"layer": 1, "head": 2, "view": "lines"} and header["kind"] == "cross"


def test_the_widget_runs_the_apps_own_canvas_and_refuses_what_the_maps_lack():
    source = canvas_module.source()  # the app's canvas*.js, joined as the app loads them
    assert json.dumps(source) in notebook.AttentionWidget._esm
    assert "__CANVAS_SOURCE__" not in notebook.AttentionWidget._esm
    exp = explain(REVERSE, "abc")
    with pytest.raises(ValueError, match="no 'speech' maps"):
        notebook.canvas_payload(exp, "speech")
    with pytest.raises(ValueError, match="outside"):
        notebook.canvas_payload(exp, "encoder", layer=99)
    with pytest.raises(ValueError, match="give the text"):
        notebook.show(REVERSE)
