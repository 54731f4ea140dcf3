"""Dequantize one GGUF tensor to float32 with the ``gguf`` package (``gguf.quants.dequantize``).

The types read are :data:`~core.io.pretrained.gguf_header.WEIGHT_TYPES`: F32, F16, BF16, the legacy
block quants (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and the K-quants (Q2_K … Q6_K) of the files people
download. The budget — every tensor's float32 size together — was checked from the header by
:func:`~core.io.pretrained.gguf_header.scan_gguf` before any tensor is read.
"""

from __future__ import annotations

import numpy as np

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import GGML_TYPE_NAMES, WEIGHT_TYPES, TensorInfo, type_refusal

#: Names of the GGML types a weight may be stored in (the keys of ``WEIGHT_TYPES``), for messages.
QUANT_NAMES = {kind: GGML_TYPE_NAMES[kind] for kind in WEIGHT_TYPES}


def dequantized(raw: np.ndarray, info: TensorInfo, name: str) -> np.ndarray:
    """The tensor ``info`` describes, from its stored bytes ``raw`` (rows, bytes per row) uint8, as a
    float32 array of its PyTorch shape that owns its memory.

    Raises:
        CheckpointError: one line naming the file, the tensor and its type, when the package cannot
            dequantize it.
    """
    import gguf  # imported here so the rest of core does not need the package

    if info.type not in QUANT_NAMES:
        raise CheckpointError(f"{name}: tensor {info.name} is {type_refusal(info.type)}")
    try:
        array = gguf.quants.dequantize(raw, gguf.GGMLQuantizationType(info.type))  # (rows, dims[0])
    except (NotImplementedError, ValueError, TypeError) as error:
        raise CheckpointError(f"{name}: cannot dequantize {info.name} ({QUANT_NAMES[info.type]}: {error})") from None
    return np.array(array, dtype=np.float32, copy=True).reshape(info.shape)  # owns its memory
