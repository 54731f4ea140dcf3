"""The attention canvas's payload: every map of one input as one compact ``bytes`` object, built once per input.

Layout (little-endian): ``b"ATC1"``, a uint32 header length, the header as UTF-8 JSON, zero padding to a multiple
of 8, then the binary sections the header lists (``sections``: name → dtype, byte offset from the start of the
payload, shape), each starting on a multiple of 8 so the browser views them without copying.

* ``colour`` uint8 (layers sent, H, Tq, Tk): round(255 · weight) on the fixed 0–1 scale, the colour path
  (1 byte a cell). Panels (a comparison, weights beside scores) carry ``colour<i>`` of their own scale instead.
* ``value`` float16, the same shape: the exact weight on hover, for every head while the maps have at most
  :data:`VALUES_CELLS` cells; past that the payload holds the colour path alone (hover reads the weight to within
  1/510) and the numbers come from the CSV / NPZ exports of the pinned head.
* ``thumbs`` uint8 (L, H, s, s'): the model view's thumbnails, each block the weight its keys hold together
  averaged over its queries, on one scale up to ``thumb_top``, for every layer even when one layer is sent.
* ``lut`` / ``lut_signed`` uint8 (256, 3): the colour-blind-safe scales (Viridis; blue–white–orange).
* ``q`` / ``k`` float16 (l, H, Tq, dk) / (l, Hkv, Tk, dk), when the maps came from a trace: the neuron view's
  queries and keys of the layers the header's ``neurons`` lists (:mod:`app.ui.canvas.neurons`).

Pure functions of numpy arrays and labels: no Streamlit. :func:`decode` reads a payload back (the tests' round trip).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from plotly.colors import sample_colorscale

from app.charts import maps as map_charts

MAGIC = b"ATC1"
VALUES_CELLS = 1 << 20  # float16 hover values for every head up to this many cells
LAYER_BUDGET_CELLS = 50_000_000  # past this many cells the payload carries one layer at a time
THUMB = 32  # a thumbnail has at most THUMB × THUMB blocks
LEVELS = 255  # colour indices 0..255


@dataclass(frozen=True)
class Panel:
    """One matrix of a side-by-side comparison: its title, axis labels and scale (``weight`` 0–1, or a signed
    ``change`` / ``score`` on the diverging scale, symmetric about 0 over ``limit``)."""

    matrix: np.ndarray  # (Tq, Tk)
    rows: Sequence[str]
    cols: Sequence[str]
    title: str
    scale: str = "weight"


@dataclass
class Look:
    """How the canvas draws: axis titles, the presentation flag (larger labels), the theme hint
    (``light`` / ``dark`` / None: the page's), and the view and head to open on."""

    title: str = ""
    row_title: str = "query token (attending)"
    col_title: str = "key token (attended to)"
    presentation: bool = False
    theme: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def lut(scale: Any) -> np.ndarray:
    """uint8 (256, 3): ``scale`` (a Plotly scale name or [[stop, colour], …]) sampled at 256 even stops."""
    colours = sample_colorscale(scale, list(np.linspace(0.0, 1.0, 256)), colortype="tuple")
    return (np.asarray(colours, dtype=np.float64).reshape(256, 3) * 255).round().clip(0, 255).astype(np.uint8)


def quantise(weights: np.ndarray, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """uint8 colour indices: ``weights`` mapped linearly from [low, high] onto 0..255 (clipped), NaN as 0."""
    span = (high - low) or 1.0
    scaled = (np.nan_to_num(np.asarray(weights, dtype=np.float32), nan=low) - low) * (LEVELS / span)
    return np.clip(np.rint(scaled), 0, LEVELS).astype(np.uint8)


def thumbnails(layers: Sequence[np.ndarray], size: int = THUMB) -> tuple[np.ndarray, float]:
    """uint8 (L, H, s, s') thumbnails of every layer's (H, Tq, Tk) maps (block mass, :func:`map_charts.block_mass`)
    on one scale, and its top (1 when nothing was pooled, else the 90th percentile: see ``grid_top``)."""
    pooled = np.stack([np.stack([map_charts.block_mass(head, size, size) for head in layer]) for layer in layers])
    reduced = max(np.shape(layers[0])[1:]) > size
    top = map_charts.grid_top(pooled, reduced)
    return quantise(pooled, 0.0, top), top


class _Writer:
    """Sections appended on 8-byte boundaries, and the header entry of each."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.sections: dict[str, dict[str, Any]] = {}

    def add(self, name: str, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        self.sections[name] = {"dtype": array.dtype.name, "offset": self.size, "shape": list(array.shape)}
        pad = -len(data) % 8
        self.parts.append(data + b"\0" * pad)
        self.size += len(data) + pad

    def payload(self, header: dict[str, Any]) -> bytes:
        """The whole payload: each section's offset shifted past the header."""
        body = b"".join(self.parts)
        header = dict(header, id=hashlib.blake2b(body, digest_size=8).hexdigest())
        start = 0
        while True:  # the offsets' digits change the header's length: shift until it stays put
            shifted = {n: dict(s, offset=s["offset"] + start) for n, s in self.sections.items()}
            text = json.dumps(dict(header, sections=shifted), separators=(",", ":")).encode()
            needed = 8 + len(text) + (-(8 + len(text)) % 8)
            if needed == start:
                break
            start = needed
        head = MAGIC + struct.pack("<I", len(text)) + text
        return head + b"\0" * (start - len(head)) + body


def _common(look: Look) -> dict[str, Any]:
    return {"v": 1, "title": look.title, "row_title": look.row_title, "col_title": look.col_title,
            "presentation": bool(look.presentation), "theme": look.theme, **look.extra}


def encode_maps(layers: Sequence[np.ndarray], rows: Sequence[str], cols: Sequence[str], *, shape: tuple[int, ...],
                sent: Sequence[int], look: Look, thumbs: tuple[np.ndarray, float] | None = None,
                pinned: dict[str, Any] | None = None, neurons: tuple[dict[str, Any], dict[str, np.ndarray]] = ({}, {})
                ) -> bytes:
    """Every head of the ``sent`` layers (``layers``: one (H, Tq, Tk) array each, in that order) of maps of
    ``shape`` (L, H, Tq, Tk) as one payload for the head, model, lines and neuron views; ``thumbs`` from
    :func:`thumbnails` (computed here from ``layers`` when every layer is sent); ``neurons`` the header entry and
    sections of :func:`app.ui.canvas.neurons.sections` (none: no neuron view)."""
    n_layers, heads, tq, tk = shape
    if len(rows) != tq or len(cols) != tk:
        raise ValueError(f"{len(rows)} row and {len(cols)} column labels for {tq} × {tk} maps")
    stacked = np.stack([np.asarray(layer, dtype=np.float32) for layer in layers])  # (l, H, Tq, Tk)
    writer = _Writer()
    writer.add("colour", quantise(stacked))
    values = stacked.size <= VALUES_CELLS
    if values:
        writer.add("value", stacked.astype(np.float16))
    if thumbs is None:
        thumbs = thumbnails(list(stacked))
    writer.add("thumbs", thumbs[0])
    writer.add("lut", lut(map_charts.SEQUENTIAL))
    for name, array in neurons[1].items():
        writer.add(name, array)
    if neurons[1]:  # the neuron view colours q, k and q⊙k on the signed scale
        writer.add("lut_signed", lut(map_charts.DIVERGING))
    header = dict(_common(look), mode="maps", layers=n_layers, heads=heads, tq=tq, tk=tk, sent=list(sent),
                  values=values, thumb_top=thumbs[1], rows=list(map(str, rows)), cols=list(map(str, cols)),
                  pinned=pinned or {}, neurons=neurons[0] or None)
    return writer.payload(header)


def encode_panels(panels: Sequence[Panel], *, look: Look) -> bytes:
    """Matrices side by side on shared scales (every ``weight`` panel 0–1; the signed ones of one scale name
    symmetric about 0 over their largest magnitude), with exact float16 values for hover."""
    writer = _Writer()
    limits: dict[str, float] = {}
    for panel in panels:
        if panel.scale != "weight":
            top = float(np.nanmax(np.abs(panel.matrix), initial=0.0)) if np.size(panel.matrix) else 0.0
            limits[panel.scale] = max(limits.get(panel.scale, 1e-6), top)
    described = []
    for i, panel in enumerate(panels):
        matrix = np.asarray(panel.matrix, dtype=np.float32)  # (Tq, Tk)
        if matrix.shape != (len(panel.rows), len(panel.cols)):
            raise ValueError(f"panel {panel.title!r}: {matrix.shape} for {len(panel.rows)} × {len(panel.cols)} labels")
        low, high = (0.0, 1.0) if panel.scale == "weight" else (-limits[panel.scale], limits[panel.scale])
        writer.add(f"colour{i}", quantise(matrix, low, high))
        writer.add(f"value{i}", matrix.astype(np.float16))
        described.append({"title": panel.title, "scale": panel.scale, "low": low, "high": high,
                          "rows": list(map(str, panel.rows)), "cols": list(map(str, panel.cols))})
    writer.add("lut", lut(map_charts.SEQUENTIAL))
    writer.add("lut_signed", lut(map_charts.DIVERGING))
    return writer.payload(dict(_common(look), mode="panels", panels=described))


def decode(payload: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and the sections of a payload (what the browser reads)."""
    if payload[:4] != MAGIC:
        raise ValueError("not an attention canvas payload")
    (length,) = struct.unpack("<I", payload[4:8])
    header = json.loads(payload[8:8 + length])
    arrays = {}
    for name, section in header["sections"].items():
        dtype = np.dtype(section["dtype"]).newbyteorder("<")
        count = math.prod(section["shape"])
        arrays[name] = np.frombuffer(payload, dtype, count, section["offset"]).reshape(section["shape"])
    return header, arrays


def bytes_per_cell(payload: bytes) -> float:
    """Payload bytes (header, labels and thumbnails included) per map cell sent."""
    header, _ = decode(payload)
    if header["mode"] == "maps":
        cells = len(header["sent"]) * header["heads"] * header["tq"] * header["tk"]
    else:
        cells = sum(len(p["rows"]) * len(p["cols"]) for p in header["panels"])
    return len(payload) / max(cells, 1)
