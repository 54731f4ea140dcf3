"""Issue 28, Hypothesis fuzzing of GGUF header bytes: any mutation of a valid tiny file's header
either loads or is one CheckpointError line, each case under a time and a memory cap.
A few dozen cases run in CI; the ``slow`` run tries thousands."""

from __future__ import annotations

import struct
import tempfile
import time
import tracemalloc
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import scan_gguf
from core.io.pretrained.gguf_llama import load_gguf
from tests.helpers.gguf_craft import tiny

MAX_SECONDS, MAX_BYTES = 10.0, 256 * 2**20
BIG = [0, 1, 2**8, 2**16, 2**31, 2**32 - 1, 2**40, 2**63, 2**64 - 1]


@lru_cache(maxsize=1)
def base() -> tuple[bytes, int]:
    """The tiny valid GGUF's bytes and the length of its header (where the tensor data starts)."""
    folder = Path(tempfile.mkdtemp(prefix="gguf-fuzz-"))
    path = tiny(folder).write(folder / "base.gguf")
    scan_gguf(path)
    data = path.read_bytes()
    header_end = data.index(b"blk.1.ffn_up.weight") + 64  # past the tensor descriptions
    return data, header_end


def flips(end: int):
    return st.lists(st.tuples(st.integers(0, end - 1), st.integers(0, 255)), min_size=1, max_size=8)


def words(end: int):
    return st.lists(st.tuples(st.integers(0, end - 8), st.sampled_from(BIG)), min_size=1, max_size=3)


@st.composite
def mutated(draw) -> bytes:
    """The base file with a few header bytes replaced, a few 8-byte counts forged, or cut short."""
    data, end = base()
    out = bytearray(data)
    for at, value in draw(flips(end)) if draw(st.booleans()) else []:
        out[at] = value
    for at, value in draw(words(end)) if draw(st.booleans()) else []:
        out[at:at + 8] = struct.pack("<Q", value)
    if draw(st.integers(0, 4)) == 0:
        out = out[:draw(st.integers(0, len(out)))]
    return bytes(out)


def check_one(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.gguf"
        path.write_bytes(data)
        tracemalloc.start()
        started = time.perf_counter()
        try:
            load_gguf(path, use_cache=False)
        except CheckpointError as error:
            assert "\n" not in str(error)
        finally:
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        assert time.perf_counter() - started < MAX_SECONDS and peak < MAX_BYTES, (time.perf_counter() - started, peak)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_gguf_headers_load_or_are_one_checkpoint_error(data: bytes) -> None:
    check_one(data)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_thousands_of_mutated_gguf_headers(data: bytes) -> None:
    check_one(data)
