"""Craft CTranslate2 ``model.bin`` files byte by byte (the layout of CTranslate2's model.cc) for the reader's tests."""

from __future__ import annotations

import struct

import numpy as np


def string(text: str) -> bytes:
    raw = text.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def variable(name: str, array: np.ndarray, type_id: int) -> bytes:
    data = array.tobytes()
    return (string(name) + struct.pack("<B", array.ndim) + struct.pack(f"<{array.ndim}I", *array.shape)
            + struct.pack("<BI", type_id, len(data)) + data)


def model_bin(version: int = 6, variables: list[bytes] | None = None, aliases: tuple = (), spec: str = "WhisperSpec",
              revision: int = 3) -> bytes:
    """A CTranslate2 model.bin in the layout of CTranslate2's model.cc."""
    variables = variables if variables is not None else [
        variable("w", np.arange(6, dtype=np.float16).reshape(2, 3), 4),
        variable("heads", np.array(2, dtype=np.int16), 2),
        variable("b", np.array([1.5, -2.0], dtype=np.float32), 0)]
    out = struct.pack("<I", version) + string(spec) + struct.pack("<II", revision, len(variables))
    out += b"".join(variables) + struct.pack("<I", len(aliases))
    return out + b"".join(string(a) + string(t) for a, t in aliases)
