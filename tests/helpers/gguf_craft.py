"""Craft GGUF files byte by byte for the reliability tests: start from the tiny valid Llama GGUF
(``tests.pretrained_files.write_tiny_gguf``), change, drop or forge fields and tensors, write it back."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.io.pretrained.gguf_header import ARRAY, STRING, _SCALARS
from tests.helpers.pretrained_files import write_tiny_gguf

INT32, UINT32, UINT64, FLOAT32, FLOAT64 = 5, 4, 10, 6, 12


@dataclass
class Crafted:
    """Fields (key → (type, value, item type)) and tensors (name → (gguf dims, ggml type, bytes))."""

    fields: dict[str, tuple[int, Any, int | None]] = field(default_factory=dict)
    tensors: dict[str, tuple[tuple[int, ...], int, bytes]] = field(default_factory=dict)
    raw_fields: list[bytes] = field(default_factory=list)  # appended as they are (forged counts)

    def write(self, path: Path) -> Path:
        body = b"".join(_field(k, *v) for k, v in self.fields.items()) + b"".join(self.raw_fields)
        infos, data = b"", b""
        for name, (dims, kind, blob) in self.tensors.items():
            infos += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
            infos += struct.pack("<IQ", kind, len(data))
            data += blob + b"\0" * (-len(blob) % 32)
        head = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.fields) + len(self.raw_fields))
        head += body + infos
        path.write_bytes(head + b"\0" * (-len(head) % 32) + data)
        return path


def _string(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def _value(kind: int, value: Any) -> bytes:
    return _string(value) if kind == STRING else struct.pack(_SCALARS[kind], value)


def _field(key: str, kind: int, value: Any, item: int | None) -> bytes:
    out = _string(key) + struct.pack("<I", kind)
    if kind == ARRAY:
        return out + struct.pack("<IQ", item, len(value)) + b"".join(_value(item, v) for v in value)
    return out + _value(kind, value)


def array_header(key: str, item: int, claimed: int) -> bytes:
    """A metadata array that claims ``claimed`` items and holds none."""
    return _string(key) + struct.pack("<IIQ", ARRAY, item, claimed)


def tiny(tmp_path: Path) -> Crafted:
    """The tiny valid Llama GGUF, taken apart."""
    source = tmp_path / "source.gguf"
    write_tiny_gguf(source)
    crafted = taken_apart(source)
    source.unlink()
    return crafted


def taken_apart(source: Path) -> Crafted:
    """The fields and tensors of the valid GGUF at ``source``, to change and write back."""
    import gguf

    reader = gguf.GGUFReader(str(source))
    crafted = Crafted()
    for key, item in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        kind = int(item.types[0])
        crafted.fields[key] = (kind, item.contents(), int(item.types[-1]) if kind == ARRAY else None)
    for tensor in reader.tensors:
        crafted.tensors[tensor.name] = (tuple(int(d) for d in tensor.shape), int(tensor.tensor_type),
                                        tensor.data.tobytes())
    return crafted
