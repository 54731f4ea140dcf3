"""Core says what a file or folder is (the app never looks at suffixes) and finds the models under a folder."""

from __future__ import annotations

import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from app.services import catalog
from core import CheckpointError, find_models, identify, is_pretrained, load_pretrained, model_version
from tests.helpers.pretrained_files import write_tiny_bert, write_tiny_gguf

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "checkpoints"


def _nn_state_dict(path: Path) -> Path:
    torch.manual_seed(0)
    model = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                 dim_feedforward=16)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return path


def test_each_kind_is_told_by_its_content_not_its_name(tmp_path):
    checkpoint = shutil.copy(SHIPPED / "copy.safetensors", tmp_path / "renamed.bin")
    assert identify(checkpoint).kind == "checkpoint"
    gguf = tmp_path / "no-suffix"
    write_tiny_gguf(gguf)
    assert identify(gguf).kind == "pretrained"
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    assert identify(folder).kind == "pretrained"
    assert identify(_nn_state_dict(tmp_path / "nn.safetensors")).kind == "nn-transformer"


def test_refusals_say_what_to_do(tmp_path):
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    with pytest.raises(CheckpointError, match="bare weights file.*open the Hugging Face folder"):
        identify(folder / "model.safetensors")
    with pytest.raises(CheckpointError, match="not found"):
        identify(tmp_path / "missing")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(CheckpointError, match="not a model Attnscope opens"):
        identify(text)
    huge = tmp_path / "huge.safetensors"
    huge.write_bytes((2**62).to_bytes(8, "little") + b"{}")  # a header length far past the file
    with pytest.raises(CheckpointError, match="not a model"):
        identify(huge)


def test_model_version_changes_with_the_weights(tmp_path):
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    before = model_version(folder)
    stat = (folder / "model.safetensors").stat()
    os.utime(folder / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert model_version(folder) != before
    with pytest.raises(CheckpointError, match="not found"):
        model_version(tmp_path / "gone.gguf")


def test_find_models_lists_nested_models_skips_links_shards_and_model_insides(tmp_path):
    write_tiny_bert(tmp_path / "enc" / "minibert")
    write_tiny_gguf(tmp_path / "llama.gguf")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    shutil.copy(SHIPPED / "reverse.safetensors", tmp_path / "deep" / "er" / "reverse.safetensors")
    (tmp_path / "link").symlink_to(tmp_path / "enc")
    (tmp_path / "stray.safetensors").write_bytes(b"\x00" * 3)
    found = {str(m.path.relative_to(tmp_path)): m.kind for m in find_models(tmp_path)}
    assert found == {"deep/er/reverse.safetensors": "checkpoint", "enc/minibert": "pretrained",
                     "llama.gguf": "pretrained"}
    assert find_models(tmp_path / "nothing-here") == []


def test_the_models_folder_appears_in_the_picker(tmp_path, monkeypatch):
    write_tiny_bert(tmp_path / "minibert")
    _nn_state_dict(tmp_path / "raw.safetensors")
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(tmp_path))
    monkeypatch.setattr("sys.argv", ["streamlit_app.py"])
    entries, problems = catalog.list_entries()
    mine = [e for e in entries if e.source == "models"]
    assert [(e.key, e.pretrained) for e in mine] == [("models:minibert", True)]
    assert mine[0].label.startswith("my models · ")
    assert any("raw.safetensors" in p and "import" in p for p in problems)
    monkeypatch.setattr("sys.argv", ["streamlit_app.py", "--models", str(tmp_path / "elsewhere")])
    assert catalog.models_dir() == tmp_path / "elsewhere"
    assert any("does not exist" in p for p in catalog.list_entries()[1])


def test_archives_and_pickles_are_told_by_their_content(tmp_path):
    """A zip is an archive to unpack (whatever its name); a pickle, bare or torch.save's zip, is refused
    with the way to convert it; load_pretrained and is_pretrained tell a GGUF by its magic bytes too."""
    archive = tmp_path / "model.safetensors"  # a zip under a model's name
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("bert/config.json", "{}")
    assert identify(archive).kind == "archive"
    assert find_models(tmp_path) == []  # an archive is never opened in place
    torch.save({"w": torch.zeros(2)}, tmp_path / "weights.pt")
    (tmp_path / "bare.bin").write_bytes(pickle.dumps({"w": 1}, protocol=4))
    for name in ("weights.pt", "bare.bin"):
        with pytest.raises(CheckpointError, match=f"{name} is a PyTorch pickle and is never loaded.*"
                                                  "safe_serialization=True"):
            identify(tmp_path / name)
    gguf = tmp_path / "renamed.bin"
    write_tiny_gguf(gguf)
    assert is_pretrained(gguf) and load_pretrained(gguf, use_cache=False).family == "llama"
    misnamed = shutil.copy(SHIPPED / "copy.safetensors", tmp_path / "copy.gguf")
    assert not is_pretrained(misnamed) and identify(misnamed).kind == "checkpoint"


def test_a_folder_without_config_json_is_told_what_opens(tmp_path):
    (tmp_path / "notes").mkdir()
    with pytest.raises(CheckpointError, match="notes is a folder without config.json.*supported: a Hugging Face "
                                              "model folder .* of model_type albert, bart"):
        identify(tmp_path / "notes")
    (tmp_path / "pickled").mkdir()
    (tmp_path / "pickled" / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")
    with pytest.raises(CheckpointError, match="pickled has no config.json nor safetensors weights: "
                                              "pytorch_model.bin is a pickle"):
        identify(tmp_path / "pickled")
