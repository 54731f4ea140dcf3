"""Where the app computes: the sidebar names the GPU (or says there is none), and on a CUDA machine the Train
page picks the GPU and a live run started there trains on it."""

from __future__ import annotations

import pytest
import torch

from app.resources import registry
from app.sidebar import compute_note
from core import device, load_checkpoint
from tests.helpers.apptest_helpers import open_page, wait_until

pytestmark = pytest.mark.usefixtures("runs")  # tests/conftest.py: an empty runs folder, no job left training


def test_the_sidebar_says_where_the_server_computes() -> None:
    at = open_page("explore")
    notes = [c.value for c in at.sidebar.caption]
    assert compute_note() in notes
    if torch.cuda.is_available():
        assert f"GPU: {torch.cuda.get_device_name(0)} (CUDA)" in compute_note()
    else:
        assert "No GPU on this server" in compute_note()


def test_the_note_names_a_gpu_when_the_machine_has_one(monkeypatch) -> None:
    monkeypatch.setattr(device, "gpu_name", lambda: "NVIDIA H200")
    assert compute_note().endswith("GPU: NVIDIA H200 (CUDA) — training runs use it; attention maps are computed "
                                   "on the CPU.")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_live_run_from_the_train_page_trains_on_the_gpu(runs) -> None:
    at = open_page("train")
    assert at.selectbox(key="train_device").value == "cuda"  # picked, not asked for
    at.selectbox(key="train_task").set_value("copy")
    at.selectbox(key="train_preset").set_value("tiny").run()
    at.number_input(key="train_steps").set_value(20)
    at.number_input(key="train_batch").set_value(16)
    at.text_input(key="train_name").input("ongpu").run()
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error
    wait_until(at, lambda a: any("Finished" in s.value for s in a.success))
    assert registry().get("ongpu").view().error is None
    trained = load_checkpoint(runs / "ongpu.safetensors")
    assert trained.info.extra["train"]["device"] == "cuda"
