"""The Hugging Face hub cache read in place: each cached model listed once as ``org/name`` at its newest
snapshot (the revision ``refs/main`` names), its files behind the cache's links into ``blobs`` opened and equal
to the reference (a sharded folder too), a GGUF repository's files listed one by one; a snapshot linking out
of its cache folder skipped with its name; ``HF_HUB_CACHE`` / ``HF_HOME`` honoured; and the app offering the
cache when no models folder is given."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from app.services import catalog
from core import cached_models, find_models, hub_cache, is_hub_cache, load_pretrained
from tests.helpers.hf_decoder_reference import compare, reference_model, save_folder
from tests.helpers.pretrained_files import write_tiny_gguf

transformers = pytest.importorskip("transformers")
OLD, NEW = "a" * 40, "0123456789abcdef0123456789abcdef01234567"


def _cache_repo(cache: Path, repo: str, source: Path, revision: str) -> Path:
    """Put ``source``'s files (a folder, or one file) into ``cache`` as huggingface_hub does: each file's bytes
    in ``blobs/<sha256>``, ``snapshots/<revision>/<name>`` a relative link to it, ``refs/main`` the revision."""
    root = cache / ("models--" + repo.replace("/", "--"))
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot = root / "snapshots" / revision
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    for path in files:
        blob = root / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
        shutil.copyfile(path, blob)
        link = snapshot / (path.name if source.is_file() else path.relative_to(source))
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(revision)
    return snapshot


@pytest.fixture
def cache(tmp_path: Path) -> tuple[Path, object]:
    """A hub cache: a sharded Qwen2 (an old and the current snapshot), a GGUF repository, a hostile repository
    and an unfinished download."""
    reference = reference_model(transformers.Qwen2Config(
        vocab_size=320, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0))
    folder = save_folder(reference, tmp_path / "src" / "qwen", add_bos=True, max_shard_size="20KB")
    hub = tmp_path / "hf" / "hub"
    old = _cache_repo(hub, "acme/tiny-qwen", folder, OLD)
    os.utime(old, ns=(1, 1))
    _cache_repo(hub, "acme/tiny-qwen", folder, NEW)
    write_tiny_gguf(tmp_path / "src" / "tiny.Q4_K.gguf")
    _cache_repo(hub, "acme/tiny-GGUF", tmp_path / "src" / "tiny.Q4_K.gguf", NEW)
    hostile = _cache_repo(hub, "evil/model", folder, NEW)
    (hostile / "config.json").unlink()
    (hostile / "config.json").symlink_to(tmp_path / "src" / "qwen" / "config.json")  # outside its cache folder
    (hub / "models--acme--unfinished" / "blobs").mkdir(parents=True)
    return hub, reference


def test_each_cached_model_is_listed_once_at_its_newest_snapshot(cache) -> None:
    hub, _ = cache
    assert is_hub_cache(hub) and not is_hub_cache(hub.parent)
    models, problems = cached_models(hub)
    assert [(m.name, m.revision) for m in models] == [("acme/tiny-GGUF/tiny.Q4_K.gguf", NEW),
                                                     ("acme/tiny-qwen", NEW)]
    assert models[1].path == hub / "models--acme--tiny-qwen" / "snapshots" / NEW
    assert problems == ["evil/model: skipped, config.json links outside its cache folder"]
    assert [m.name for m in find_models(hub)] == ["acme/tiny-GGUF/tiny.Q4_K.gguf", "acme/tiny-qwen"]


def test_a_sharded_model_behind_the_cache_links_equals_the_reference(cache) -> None:
    hub, reference = cache
    snapshot = hub / "models--acme--tiny-qwen" / "snapshots" / NEW
    assert (snapshot / "model.safetensors.index.json").is_symlink()
    result = compare(snapshot, reference)
    assert result.ids_equal and result.map_error <= 1e-5 and result.logit_error <= 1e-4 * result.logit_scale
    gguf = cached_models(hub)[0][0].path
    assert load_pretrained(gguf, use_cache=False).family == "llama"


def test_the_cache_folder_follows_huggingface_hub(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache() == tmp_path / "explicit"
    monkeypatch.delenv("HF_HUB_CACHE")
    assert hub_cache() == tmp_path / "home" / "hub"
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub_cache() == tmp_path / "xdg" / "huggingface" / "hub"


def test_the_app_offers_the_cache_when_no_models_folder_is_given(cache, monkeypatch) -> None:
    hub, _ = cache
    monkeypatch.setattr("sys.argv", ["streamlit_app.py"])
    monkeypatch.delenv("ATTNSCOPE_MODELS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub.parent / "none"))
    assert catalog.models_dir() is None
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    assert catalog.models_dir() == hub
    entries, problems = catalog.list_entries()
    mine = [e for e in entries if e.source == "models"]
    assert [e.key for e in mine] == ["models:acme/tiny-GGUF/tiny.Q4_K.gguf", "models:acme/tiny-qwen"]
    assert mine[1].label == f"my models · acme/tiny-qwen — revision {NEW[:10]}" and mine[1].pretrained
    assert any(p.startswith("evil/model: skipped") for p in problems)
    monkeypatch.setattr("sys.argv", ["streamlit_app.py", "--models", str(hub.parent)])  # HF_HOME: the hub inside
    assert [e.key for e in catalog.list_entries()[0] if e.source == "models"] == [e.key for e in mine]
