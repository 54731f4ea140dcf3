"""Read a scanned GGUF file's metadata arrays and tensors where :func:`~core.io.pretrained.gguf_header.scan_gguf`
found them, each of a size the scan already bounded: numeric arrays with ``numpy``, string arrays from their
bytes (each item UTF-8), tensors as raw blocks dequantized to float32 by the ``gguf`` package
(:mod:`core.io.pretrained.gguf_quants`). Nothing here trusts a count the scan did not check.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import _SCALARS, STRING, WEIGHT_TYPES, GGUFHeader, TensorInfo


class GGUFMetadata:
    """The metadata of a scanned GGUF file: scalars as the scan decoded them, arrays read on demand."""

    def __init__(self, path: Path, header: GGUFHeader) -> None:
        self.path, self.header = path, header

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (a list for an array), or ``default`` when absent.

        Raises:
            CheckpointError: an array item that is not UTF-8, naming the file and the key.
        """
        if key in self.header.scalars:
            return self.header.scalars[key][1]
        if key not in self.header.arrays:
            return default
        item, count = self.header.arrays[key]
        start, end = self.header.array_spans[key]
        if item == STRING:
            return self._strings(key, start, end, count)
        dtype = np.dtype(_SCALARS[item])
        return np.fromfile(self.path, dtype=dtype, count=count, offset=start).tolist()

    def _strings(self, key: str, start: int, end: int, count: int) -> list[str]:
        with open(self.path, "rb") as handle:
            handle.seek(start)
            blob = handle.read(end - start)  # (the scan checked every length inside [start, end))
        out, at = [], 0
        try:
            for _ in range(count):
                length = struct.unpack_from("<Q", blob, at)[0]
                out.append(blob[at + 8 : at + 8 + length].decode("utf-8"))
                at += 8 + length
        except UnicodeDecodeError:
            raise CheckpointError(f"{self.path.name}: GGUF {key} holds a string that is not UTF-8") from None
        return out


def raw_tensor(path: Path, header: GGUFHeader, info: TensorInfo) -> np.ndarray:
    """The stored bytes of one tensor, (rows, bytes per row) uint8 (rows: every dimension but the innermost)."""
    block, block_bytes = WEIGHT_TYPES[info.type]
    rows = math.prod(info.dims[1:])
    row_bytes = info.dims[0] // block * block_bytes
    data = np.fromfile(path, dtype=np.uint8, count=rows * row_bytes, offset=header.data_start + info.offset)
    return data.reshape(rows, row_bytes)
