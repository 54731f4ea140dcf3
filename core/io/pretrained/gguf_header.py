"""Pre-scan a GGUF file's header with ``struct``, every count and length bounded before it is used.

The ``gguf`` package's ``GGUFReader`` trusts the file: it loops over an array's claimed item
count (2⁴⁰ items in a 69-byte file grow memory without bound) and keeps about 1 KB of Python
objects per array item (a Llama 3 vocabulary: ~0.5 GB and minutes), so it is not used.
:func:`scan_gguf` reads only counts, lengths, scalar values and tensor descriptions, checks each
against the bytes left in the file and against :class:`GGUFLimits`, and raises
:class:`CheckpointError` before anything of a claimed size is allocated; the arrays and tensors of a
file that passes are then read where the scan found them (:mod:`core.io.pretrained.gguf_data`).
"""

from __future__ import annotations

import math
import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from core.io.checkpoint import CheckpointError
from core.io.pretrained.memory import RESERVE_BYTES, available_bytes, budget_bytes, gib

MAGIC = b"GGUF"
VERSIONS = (2, 3)
STRING, ARRAY = 8, 9
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
INTEGER_TYPES = frozenset({0, 1, 2, 3, 4, 5, 10, 11})
FLOAT_TYPES = frozenset({6, 12})
#: (block size, bytes per block) of every GGML tensor type a Llama's weights may be stored in;
#: integer and F64 tensors are refused, never cast (ids from ``gguf.GGMLQuantizationType``).
WEIGHT_TYPES = {0: (1, 4), 1: (1, 2), 30: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
                8: (32, 34), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210)}
_MAX_DIMS = 4
#: Every GGML type's name (``gguf.GGMLQuantizationType``), so that a refusal names the type, not its id.
GGML_TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K",
    12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
    20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64",
    29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4", 40: "NVFP4", 41: "Q1_0",
}


def type_refusal(kind: int) -> str:
    """Why a tensor of GGML type ``kind`` is not read: its name (an i-quant said so), or that it is unknown."""
    name = GGML_TYPE_NAMES.get(kind)
    supported = ", ".join(GGML_TYPE_NAMES[k] for k in WEIGHT_TYPES)
    if name is None:
        return f"an unknown GGML type {kind}; supported: {supported}"
    what = "an i-quant, " if name.startswith("IQ") else ""
    return f"{name} ({what}not supported); supported: {supported} (integer and F64 tensors are refused, not cast)"


@dataclass(frozen=True)
class GGUFLimits:
    """What one GGUF header may claim (a 135M-parameter SmolLM2 holds ~147k array items, 272 tensors)."""

    max_fields: int = 1_024
    max_tensors: int = 4_096
    max_key_bytes: int = 256
    max_string_bytes: int = 1 << 20  # one string value (chat templates are a few KB)
    max_array_items: int = 1_000_000  # all arrays together (Llama 3: 537k; Gemma's 256k vocabulary: 768k)
    max_parameters: int | None = None  # all tensors together, float32 after dequantizing (None: what the
    # machine's memory budget holds, :mod:`core.io.pretrained.memory`)


GGUF_LIMITS = GGUFLimits()


def is_gguf(path: Path) -> bool:
    """Whether the file at ``path`` starts with the GGUF magic bytes (whatever its name)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's description: GGUF dims (innermost first), GGML type, data offset."""

    name: str
    dims: tuple[int, ...]
    type: int
    offset: int

    @property
    def shape(self) -> tuple[int, ...]:
        """The PyTorch shape (outermost first)."""
        return tuple(reversed(self.dims))


@dataclass
class GGUFHeader:
    """Scalars (strings decoded), arrays as (item type, count), tensors by name."""

    scalars: dict[str, tuple[int, Any]] = field(default_factory=dict)
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)
    array_spans: dict[str, tuple[int, int]] = field(default_factory=dict)  # (first byte, end) of each array
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    data_start: int = 0  # where the tensor data begins (tensor offsets count from here)


class _Bounded:
    """Reads from a file, refusing any read that runs past its end."""

    def __init__(self, handle: BinaryIO, size: int, name: str) -> None:
        self.handle, self.size, self.name, self.pos = handle, size, name, 0

    def fail(self, what: str) -> CheckpointError:
        shown = "".join(ch if ch.isprintable() else "?" for ch in what)  # keys are file bytes: one line
        return CheckpointError(f"{self.name} is not a valid GGUF file: {shown}")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise self.fail(f"{what} claims {n:,} bytes at offset {self.pos:,}, past the end of the file")

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        data = self.handle.read(n)
        self.pos += n
        return data

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.pos += n
        self.handle.seek(self.pos)

    def unpack(self, fmt: str, what: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, limit: int, what: str) -> str:
        length = self.unpack("<Q", what)
        if length > limit:
            raise self.fail(f"{what} is {length:,} bytes long (at most {limit:,})")
        try:
            return self.take(length, what).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None


def scan_gguf(path: Path, limits: GGUFLimits = GGUF_LIMITS) -> GGUFHeader:
    """The header of the GGUF file at ``path``, every claimed size checked before it is read.

    Raises:
        CheckpointError: one line naming the file and the first count, length or type out of bounds.
    """
    size = path.stat().st_size
    with open(path, "rb") as handle:
        src = _Bounded(handle, size, path.name)
        if size < 24 or src.take(4, "magic") != MAGIC:
            raise src.fail("it does not start with 'GGUF' and a header")
        version = src.unpack("<I", "version")
        if version not in VERSIONS:
            raise src.fail(f"version {version} (big-endian or unknown; supported: 2, 3)")
        n_tensors, n_fields = src.unpack("<Q", "tensor count"), src.unpack("<Q", "field count")
        if n_fields > limits.max_fields or n_tensors > limits.max_tensors:
            raise src.fail(f"{n_fields:,} fields and {n_tensors:,} tensors (at most "
                           f"{limits.max_fields:,} and {limits.max_tensors:,})")
        header = GGUFHeader()
        items = 0
        for _ in range(n_fields):
            key = src.string(limits.max_key_bytes, "a metadata key")
            if key in header.scalars or key in header.arrays:
                raise src.fail(f"metadata key {key!r} appears twice")
            items += _field(src, header, key, limits, items)
        _tensors(src, header, n_tensors, limits)
        _check_data(src, header, limits)
    return header


def _field(src: _Bounded, header: GGUFHeader, key: str, limits: GGUFLimits, items: int) -> int:
    """Read one metadata value into ``header``; returns the array items it holds."""
    kind = src.unpack("<I", f"the type of {key}")
    if kind in _SCALARS:
        header.scalars[key] = (kind, src.unpack(_SCALARS[kind], key))
        return 0
    if kind == STRING:
        header.scalars[key] = (kind, src.string(limits.max_string_bytes, key))
        return 0
    if kind != ARRAY:
        raise src.fail(f"{key} has unknown value type {kind}")
    item, count = src.unpack("<I", f"the item type of {key}"), src.unpack("<Q", f"the length of {key}")
    start = src.pos
    if items + count > limits.max_array_items:
        raise src.fail(f"{key} holds {count:,} items; all arrays together may hold at most "
                       f"{limits.max_array_items:,}")
    if item in _SCALARS:
        src.skip(count * struct.calcsize(_SCALARS[item]), key)
    elif item == STRING:
        src.need(8 * count, key)  # every item is at least its 8-byte length
        _skip_strings(src, count, limits.max_string_bytes, key)
    else:
        raise src.fail(f"{key} is an array of type {item} (nested arrays are not supported)")
    header.arrays[key] = (item, count)
    header.array_spans[key] = (start, src.pos)
    return count


def _skip_strings(src: _Bounded, count: int, limit: int, key: str) -> None:
    """Walk ``count`` strings (8-byte length, then the bytes) through a read-only map of the file:
    no copy, ~1 s for a million items."""
    unpack, pos, last, read = struct.Struct("<Q").unpack_from, src.pos, src.size - 8, 0
    with mmap.mmap(src.handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        while read < count and pos <= last:  # room for the next length
            length = unpack(view, pos)[0]
            if length > limit:
                raise src.fail(f"an item of {key} is {length:,} bytes long")
            pos, read = pos + 8 + length, read + 1
    if read < count or pos > src.size:
        raise src.fail(f"{key}: item {read:,} of {count:,} runs past the end of the file")
    src.pos = pos
    src.handle.seek(pos)


def _tensors(src: _Bounded, header: GGUFHeader, count: int, limits: GGUFLimits) -> None:
    for _ in range(count):
        name = src.string(limits.max_key_bytes, "a tensor name")
        n_dims = src.unpack("<I", f"the dimension count of {name}")
        if not 1 <= n_dims <= _MAX_DIMS:
            raise src.fail(f"tensor {name} has {n_dims} dimensions")
        dims = tuple(src.unpack("<Q", f"a dimension of {name}") for _ in range(n_dims))
        kind, offset = src.unpack("<I", f"the type of {name}"), src.unpack("<Q", f"the offset of {name}")
        if name in header.tensors:
            raise src.fail(f"tensor {name} appears twice")
        if kind not in WEIGHT_TYPES:
            raise src.fail(f"tensor {name} is {type_refusal(kind)}")
        if min(dims) < 1 or dims[0] % WEIGHT_TYPES[kind][0]:
            raise src.fail(f"tensor {name} has dimensions {dims}")
        header.tensors[name] = TensorInfo(name, dims, kind, offset)


def _check_data(src: _Bounded, header: GGUFHeader, limits: GGUFLimits) -> None:
    """Every tensor's bytes inside the file, and all of them within the parameter budget."""
    kind, alignment = header.scalars.get("general.alignment", (4, 32))
    if kind != 4 or alignment < 1 or alignment & (alignment - 1):
        raise src.fail(f"general.alignment {alignment!r} is not a power of two")
    start = header.data_start = -(-src.pos // alignment) * alignment
    total = 0
    limit = limits.max_parameters if limits.max_parameters is not None else budget_bytes() // 4
    where = "" if limits.max_parameters is not None else (
        f"; this machine can give a model {gib(budget_bytes())} now ({gib(available_bytes())} available less "
        f"{gib(RESERVE_BYTES)} kept free)")
    for info in header.tensors.values():
        elements = math.prod(info.dims)
        total += elements
        if total > limit:
            raise src.fail(f"its tensors hold more than {limit:,} parameters, over "
                           f"{4 * limit / 2**20:,.0f} MiB dequantized to float32 "
                           f"(the load budget for GGUF files{where})")
        block, block_bytes = WEIGHT_TYPES[info.type]
        end = start + info.offset + elements // block * block_bytes
        if end > src.size:
            raise src.fail(f"tensor {info.name} runs past the end of the file")
