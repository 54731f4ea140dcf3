"""Issue 28, the converted-weight cache: bounded in bytes (LRU), checksummed on read, temp files of
killed writes removed on start."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from core.io.pretrained import weight_cache
from core.io.pretrained.gguf_llama import load_gguf
from tests.helpers.pretrained_files import write_tiny_gguf


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(folder))
    monkeypatch.setattr(weight_cache, "_cleaned", set())
    return folder


def entry(sha: str, rows: int = 256) -> Path:
    tensors = {"w": torch.full((rows, 256), float(len(sha)))}  # 256 rows: 256 KiB
    path = weight_cache._write_to(weight_cache.entry_path(sha, "gguf"), sha, tensors, {})
    assert path is not None
    return path


def age(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_the_cache_stays_under_its_byte_budget_evicting_the_least_recently_used(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNSCOPE_CACHE_MAX_BYTES", str(700 * 1024))  # room for two 256 KiB entries
    first, second = entry("a" * 64), entry("b" * 64)
    age(first, 30)
    age(second, 20)
    assert weight_cache.read("a" * 64, "gguf") is not None  # used: now the most recent
    third = entry("c" * 64)
    assert first.exists() and third.exists() and not second.exists()
    assert sum(p.stat().st_size for p in cache.rglob("*.safetensors")) <= 700 * 1024


def test_an_entry_over_the_whole_budget_is_not_written(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNSCOPE_CACHE_MAX_BYTES", "1000")
    assert weight_cache._write_to(weight_cache.entry_path("d" * 64, "gguf"), "d" * 64,
                                  {"w": torch.zeros(64, 64)}, {}) is None
    assert not list(cache.rglob("*.safetensors"))


def test_a_flipped_bit_removes_the_entry_and_the_gguf_is_converted_again(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)
    model, _, _, sha = load_gguf(path)
    weight_cache.flush()
    stored = weight_cache.entry_path(sha, "gguf")
    data = bytearray(stored.read_bytes())
    data[-5] ^= 0x01  # one bit of the last tensor's data
    stored.write_bytes(bytes(data))
    assert weight_cache.read(sha, "gguf") is None and not stored.exists()
    again, _, _, _ = load_gguf(path)  # converted from the GGUF again, identical
    weight_cache.flush()
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, again.state_dict()[name]), name
    assert weight_cache.read(sha, "gguf") is not None  # and cached again, whole


def test_stale_temp_files_of_killed_writes_are_removed_on_start(cache: Path) -> None:
    folder = cache / "gguf"
    folder.mkdir(parents=True)
    stale = folder / f".{'e' * 64}.safetensors.abcd1234.tmp"
    stale.write_bytes(b"\0" * 1000)
    age(stale, 60)
    fresh = folder / f".{'f' * 64}.safetensors.wxyz5678.tmp"  # a write that may still be running
    fresh.write_bytes(b"\0")
    other = folder / "notes.txt"
    other.write_text("kept")
    assert weight_cache.read("0" * 64, "gguf") is None
    assert not stale.exists() and fresh.exists() and other.exists()
