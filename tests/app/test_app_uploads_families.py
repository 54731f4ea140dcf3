"""Every family core opens also opens from an upload (issue 21): a zipped Hugging Face folder of GPT-2
(a decoder) or Marian (an encoder-decoder) is chosen and Explore shows its own prediction, as core
computes it on the original folder; a sharded folder opens from a zip. Refusals are one line, from core.
Budgets are checked from the headers before any tensor is read (issue 28)."""

from __future__ import annotations

import io
import json
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from app.services import catalog, storage, uploads
from app import resources
from app.charts.base import visible
from core import CheckpointError, explain, load_pretrained
from core.io.pretrained import hf_files
from tests.helpers.apptest_helpers import open_page, outputs
from tests.helpers.gguf_craft import UINT32, array_header, tiny
from tests.helpers.uploads import upload, upload_folders, zipped

transformers = pytest.importorskip("transformers")
from tests.helpers.hf_decoder_reference import reference_model, save_folder  # noqa: E402 - needs transformers
from tests.helpers.hf_seq2seq_reference import marian  # noqa: E402

TEXT = "the cat sat on a mat"


def gpt2_folder(folder: Path, shard: str = "5GB", **config) -> Path:
    settings = dict(vocab_size=320, n_positions=64, n_embd=16, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2)
    return save_folder(reference_model(transformers.GPT2Config(**{**settings, **config})), folder, add_bos=False,
                       max_shard_size=shard)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> Path:
    return gpt2_folder(tmp_path_factory.mktemp("gpt2") / "tiny-gpt2")


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> Path:
    folder = gpt2_folder(tmp_path_factory.mktemp("sharded") / "sharded-gpt2", shard="20KB")
    assert len(list(folder.glob("model-*.safetensors"))) >= 2 and (folder / "model.safetensors.index.json").is_file()
    return folder


def entry_of(at) -> catalog.Entry:
    return next(e for e in catalog.list_entries(at.session_state["_upload_owner"])[0] if e.source == "upload")


def refusal(owner: str, name: str, data: bytes) -> str:
    with pytest.raises(CheckpointError) as caught:
        catalog.save_upload(owner, name, data)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# ----------------------------------------------------------------------------- families open from a zip
def test_a_zipped_gpt2_folder_opens_on_explore_with_its_next_token(runs, gpt2):
    at = upload(open_page("explore"), "tiny gpt2.zip", zipped(gpt2, prefix="tiny-gpt2/"))
    [folder] = upload_folders(runs)
    key = f"upload:{folder.name}"
    assert at.session_state["ckpt"] == key and not at.error
    assert at.selectbox(key="ckpt").format_func(key) == "uploaded · tiny gpt2.zip"
    text = at.text_area(key="text").value
    expected = explain(load_pretrained(gpt2), text, continuation=0)
    assert expected.prediction.kind == "next_token"
    assert any(c.value == "Most likely next token" for c in at.caption)
    assert visible(expected.prediction.text) in outputs(at)
    got = resources.explain_entry(entry_of(at), text, continuation=0)
    np.testing.assert_allclose(got.attention["decoder"], expected.attention["decoder"], atol=1e-6)
    np.testing.assert_allclose(got.attention["decoder"].sum(-1), 1.0, atol=1e-5)


def test_a_zipped_marian_folder_translates_on_explore(runs, tmp_path):
    folder, _, _ = marian(tmp_path / "opus-mt-tiny", spm_files=False)
    at = upload(open_page("explore"), "opus-mt-tiny.zip", zipped(folder))  # files at the zip's top level
    assert at.session_state["ckpt"].startswith("upload:") and not at.error
    entry = entry_of(at)
    assert entry.pretrained and load_pretrained(entry.path).architecture == "encoder-decoder"
    at.text_area(key="text").input(TEXT).run()
    expected = explain(load_pretrained(folder), TEXT, decoding="greedy")
    assert expected.prediction.kind == "text" and any(c.value == "Generated output" for c in at.caption)
    assert (expected.prediction.text or "(empty)") in outputs(at)
    got = resources.explain_entry(entry, TEXT, decoding="greedy")
    for kind in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(got.attention[kind], expected.attention[kind], atol=1e-6)


def test_a_zipped_sharded_folder_opens(runs, sharded):
    owner = storage.new_owner()
    key = catalog.save_upload(owner, "sharded.zip", zipped(sharded, prefix="sharded-gpt2/"))
    entry = next(e for e in catalog.list_entries(owner)[0] if e.key == key)
    assert entry.pretrained and (entry.path / "model.safetensors.index.json").is_file()
    ours, reference = explain(load_pretrained(entry.path), TEXT), explain(load_pretrained(sharded), TEXT)
    np.testing.assert_array_equal(ours.attention["decoder"], reference.attention["decoder"])


def test_a_sharded_zip_missing_a_shard_or_pointing_outside_is_refused(runs, sharded, tmp_path):
    owner = storage.new_owner()
    files = {p.name: p.read_bytes() for p in sharded.iterdir()}
    first = sorted(n for n in files if n.startswith("model-"))[0]
    missing = {n: b for n, b in files.items() if n != first}
    assert f"shard(s) {first}" in refusal(owner, "missing.zip", zip_files(missing))
    index = json.loads(files["model.safetensors.index.json"])
    index["weight_map"] = {k: "../../../outside.safetensors" for k in index["weight_map"]}
    escaping = {**files, "model.safetensors.index.json": json.dumps(index).encode()}
    assert "points outside the folder" in refusal(owner, "escaping.zip", zip_files(escaping))
    assert upload_folders(runs) == []


def zip_files(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# ----------------------------------------------------------------------------- refusals: one line, from core
def pickle_only_folder(gpt2: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "pickled"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (folder / name).write_bytes((gpt2 / name).read_bytes())
    torch.save({"wte.weight": torch.zeros(3, 2)}, folder / "pytorch_model.bin")
    return folder


def test_a_pickle_only_zip_is_refused_on_the_page_with_the_way_to_convert(runs, gpt2, tmp_path):
    at = upload(open_page("explore"), "pickled.zip", zipped(pickle_only_folder(gpt2, tmp_path), prefix="pickled/"))
    [message] = [e.value.replace("\\", "") for e in at.error]  # Markdown characters are escaped on the page
    assert "pytorch_model.bin is a pickle and is never loaded" in message
    assert "safe_serialization=True" in message and "\n" not in message
    assert upload_folders(runs) == [] and at.session_state["ckpt"] == catalog.DEFAULT_KEY and outputs(at)


def test_refusals_name_what_is_supported(runs, gpt2, tmp_path):
    owner = storage.new_owner()
    config = json.loads((gpt2 / "config.json").read_text())
    unknown = zip_files({"config.json": json.dumps({**config, "model_type": "mamba"}).encode(),
                         "model.safetensors": (gpt2 / "model.safetensors").read_bytes()})
    message = refusal(owner, "mamba.zip", unknown)
    assert "model_type 'mamba' is not supported as a folder; supported: albert, bart" in message
    message = refusal(owner, "notes.zip", zip_files({"notes.txt": b"hello", "data.csv": b"1,2"}))
    assert "is a folder without config.json" in message and "supported: a Hugging Face model folder" in message
    two = zip_files({f"{name}/{p.name}": p.read_bytes() for name in ("a", "b") for p in gpt2.iterdir()})
    assert "holds 2 models (a, b); zip one model" in refusal(owner, "two.zip", two)
    torch.save({"weight": torch.zeros(2)}, tmp_path / "weights.bin")  # torch.save's own zip
    message = refusal(owner, "weights.bin", (tmp_path / "weights.bin").read_bytes())
    assert "weights.bin is a PyTorch pickle and is never loaded" in message and "safe_serialization" in message
    assert upload_folders(runs) == []


# ----------------------------------------------------------------------------- budgets from headers
class NoTensorReads:
    """safetensors' ``safe_open`` with its headers readable and every tensor read refused."""

    def __init__(self, real) -> None:
        self.real = real

    def __call__(self, *args, **kwargs) -> "NoTensorReads":
        self.handle = self.real(*args, **kwargs)
        return self

    def __enter__(self) -> "NoTensorReads":
        self.inner = self.handle.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.handle.__exit__(*exc)

    def keys(self):
        return self.inner.keys()

    def get_slice(self, name: str):
        return self.inner.get_slice(name)

    def get_tensor(self, name: str):
        raise AssertionError(f"tensor {name} was read before the budget refused the upload")


@pytest.mark.parametrize("which", ["gpt2", "sharded"])
def test_hf_weight_budget_is_checked_from_the_headers_before_any_tensor_is_read(runs, which, request, monkeypatch):
    """In the server, from the headers alone: no tensor is read and no worker process loads the upload."""
    files = {p.name: p.read_bytes() for p in request.getfixturevalue(which).iterdir()}
    monkeypatch.setattr(hf_files, "safe_open", NoTensorReads(hf_files.safe_open))
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(2 * 2**30 + 1000))  # 1,000 bytes once 2 GiB are kept free
    monkeypatch.setattr(uploads, "ExplainWorker", lambda *a, **k: pytest.fail("loaded before the header check"))
    message = refusal(storage.new_owner(), "big.zip", zip_files(files))
    assert "0.0 GiB of weights as stored is over the 0.0 GiB this machine can give a model now" in message
    assert upload_folders(runs) == []


@pytest.mark.parametrize("which", ["gpt2", "sharded"])
def test_hf_weight_budget_of_the_loader_itself_is_checked_before_any_tensor_is_read(which, request, monkeypatch):
    monkeypatch.setattr(hf_files, "safe_open", NoTensorReads(hf_files.safe_open))
    monkeypatch.setattr(hf_files.read_weights, "__defaults__", (1000,))  # a 1,000-byte weight budget
    with pytest.raises(CheckpointError, match="of weights as float32 is over the"):
        load_pretrained(request.getfixturevalue(which))


def test_a_config_claiming_100000_layers_is_refused_quickly(runs, gpt2):
    config = json.loads((gpt2 / "config.json").read_text())
    files = {p.name: p.read_bytes() for p in gpt2.iterdir()}
    deep = {**files, "config.json": json.dumps({**config, "n_layer": 100_000}).encode()}
    started = time.perf_counter()
    message = refusal(storage.new_owner(), "deep.zip", zip_files(deep))
    assert time.perf_counter() - started < 10
    assert "config.json claims 100,000 layers (n_layer) but model.safetensors holds 2" in message
    assert upload_folders(runs) == []


@pytest.mark.parametrize("bomb", ["array", "parameters"])
def test_a_gguf_header_bomb_is_refused_through_the_upload_in_little_time_and_memory(runs, tmp_path, bomb,
                                                                                  monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(6 * 2**30))  # the budget: 4 GiB, 2³⁰ float32 values
    crafted = tiny(tmp_path)
    if bomb == "array":
        crafted.raw_fields.append(array_header("tokenizer.ggml.bomb", UINT32, 2**40))
    else:  # a tensor claiming over 2³⁰ float32 values, over the GGUF parameter budget, its data absent
        crafted.tensors["blk.0.ffn_up.weight"] = ((2**15, 2**15 + 1), 0, b"")
    data = crafted.write(tmp_path / "bomb.gguf").read_bytes()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = refusal(storage.new_owner(), "bomb (renamed).bin", data)  # a GGUF whatever its name
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ("array" in message if bomb == "array" else "the load budget for GGUF files" in message), message
    assert time.perf_counter() - started < 10 and peak < 64 * 2**20, peak
