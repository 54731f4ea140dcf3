"""Untrusted models only in the worker (X1): an upload or a ``--models DIR`` model is loaded, read and run only in
its worker process, never in the server.

Picking one shows the page from the facts its worker reports (kind, shape, a checkpoint's header and tokenizers,
its parameters per block, its attention timeline): the server process never loads a model from the uploads or the
models folder (``load_pretrained``'s and the checkpoint loader's inner functions are spied on), and picking a
32 M-parameter GGUF from the models folder grows the server's resident memory by less than 50 MB (loaded here, its
float32 weights alone would take 128 MB).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from app import resources, routes
from app.charts.base import visible
from core import explain, load_checkpoint, load_pretrained
from core.io import checkpoint as checkpoint_io
from core.io.pretrained import load as pretrained_io
from tests.helpers.apptest_helpers import open_page, outputs
from tests.helpers.paths import REVERSE
from tests.helpers.pretrained_files import write_tiny_gguf
from tests.helpers.uploads import upload

WIDE = dict(d_model=1024, n_heads=8, n_kv_heads=8, d_ff=4096, n_decoder_layers=2)  # 32 M parameters, 128 MB


def _rss() -> int:
    """This process's resident memory, in bytes."""
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """The paths of every model the server process loads (its weights read), through either loader."""
    seen: list[str] = []
    real_load, real_guarded = pretrained_io._load, checkpoint_io._guarded

    def pretrained(path, *args, **kwargs):
        seen.append(str(path))
        return real_load(path, *args, **kwargs)

    def own(path, budget, *, with_weights, **kwargs):
        if with_weights:
            seen.append(str(path))
        return real_guarded(path, budget, with_weights=with_weights, **kwargs)

    monkeypatch.setattr(pretrained_io, "_load", pretrained)
    monkeypatch.setattr(checkpoint_io, "_guarded", own)
    return seen


@pytest.fixture
def closed_workers():
    """The app's worker processes are ended after the test (its cache of them is process-wide)."""
    yield
    resources.explain_worker.clear()


def test_picking_an_uploaded_gguf_never_loads_it_in_the_server(runs, tmp_path, loads, closed_workers):
    write_tiny_gguf(tmp_path / "tiny.gguf")
    at = open_page("explore")
    at = upload(at, "tiny.gguf", (tmp_path / "tiny.gguf").read_bytes())
    at.text_area(key="text").input("hello the").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    expected = explain(load_pretrained(tmp_path / "tiny.gguf", use_cache=False), "hello the")
    assert visible(expected.prediction.text) in outputs(at)
    assert not [p for p in loads if str(runs / "uploads") in p], loads  # checked and run in worker processes only


def test_an_uploaded_checkpoint_shows_on_every_page_from_its_facts(runs, loads, closed_workers):
    at = upload(open_page("explore"), "reverse.safetensors", REVERSE.read_bytes())
    at.text_area(key="text").input("abcdef").run()
    assert explain(REVERSE, "abcdef").prediction.text in outputs(at)
    ckpt = load_checkpoint(REVERSE)
    for page in (routes.CHECKPOINTS, routes.MASKS, routes.POSITIONAL, routes.SELF_ATTENTION, routes.ARCHITECTURE):
        at.switch_page(page).run()
        assert not at.exception and not at.error, (page, [e.value for e in at.error])
    total = sum(ckpt.model.parameter_counts().values())
    assert any(m.value == f"{total:,}" for m in at.metric), [m.value for m in at.metric]
    assert not [p for p in loads if str(runs / "uploads") in p], loads


def test_a_models_folder_model_picked_grows_the_server_by_under_50_mb(runs, tmp_path, monkeypatch, loads,
                                                                    closed_workers):
    folder = tmp_path / "models"
    folder.mkdir()
    write_tiny_gguf(folder / "wide.gguf", quantize_embedding=False, **WIDE)
    gc.collect()
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(folder))
    resources.entries.clear()
    at = open_page("explore")
    at.text_area(key="text").input("hello the").run()  # the shipped model's page, its charts built
    before = _rss()
    at.session_state["ckpt"] = "models:wide.gguf"
    at.run()
    at.text_area(key="text").input("the hello").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert outputs(at) and "wide.gguf" not in loads and not [p for p in loads if str(folder) in p], loads
    grown = _rss() - before
    assert grown < 50 * 2**20, f"the server grew by {grown / 2**20:.0f} MB"
