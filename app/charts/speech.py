"""Speech charts (Whisper): the log-mel spectrogram with each output token's cross-attention over the
audio frames drawn on the same time axis, in seconds.

Pure functions (an :class:`Explanation`'s arrays in, ``go.Figure`` out), no Streamlit calls.
Spectrogram columns are 10 ms apart, encoder frames 20 ms (one frame per two columns); a frame is
drawn at its centre time, so a token's attention lines up with the sound it reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.look import restyled
from app.charts.maps import SEQUENTIAL

COLUMN_S, FRAME_S = 0.01, 0.02
# Magma, but its first stop #000004 is one of the placeholder colours Streamlit's theme repaints: start at #050416
SPECTROGRAM = [[i / 9, c] for i, c in enumerate(["#050416", "#180f3d", "#440f76", "#721f81", "#9e2f7f", "#cd4071",
                                                 "#f1605d", "#fd9668", "#feca8d", "#fcfdbf"])]


def head_choice(cross: np.ndarray, alignment_heads: Sequence[tuple[int, int]], layer: int | None,
                head: int | None) -> tuple[np.ndarray, str]:
    """The (T, F) cross-attention to draw and its name: one (layer, head), or the mean of the
    checkpoint's alignment heads (of every head of the last layer when it names none)."""
    if layer is not None and head is not None:
        return cross[layer, head], f"layer {layer + 1}, head {head + 1}"
    if alignment_heads:
        picked = np.stack([cross[l, h] for l, h in alignment_heads])  # (A, T, F)
        return picked.mean(0), f"mean of the {len(alignment_heads)} alignment heads"
    return cross[-1].mean(0), "mean of the last layer's heads"


def spectrogram_and_cross(features: np.ndarray, cross: np.ndarray, rows: Sequence[str], *, title: str,
                          step: int | None = None, font_scale: float = 1.0) -> go.Figure:
    """Top: the log-mel spectrogram (mel bin × time). Middle: cross-attention, one row per decoder
    step (its label) over the frames. Bottom, when ``step`` is given: that step's row as a curve.
    All on one time axis in seconds."""
    bins, columns = features.shape
    frames = cross.shape[1]
    column_t = np.arange(columns) * COLUMN_S + COLUMN_S / 2  # (2F,) centre of each column
    frame_t = np.arange(frames) * FRAME_S + FRAME_S / 2  # (F,)
    panels = 3 if step is not None else 2
    heights = [0.3, 0.45, 0.25] if panels == 3 else [0.4, 0.6]
    figure = make_subplots(rows=panels, cols=1, shared_xaxes=True, vertical_spacing=0.04, row_heights=heights)
    low, high = float(features.min()), float(max(features.max(), features.min() + 1e-6))
    figure.add_trace(go.Heatmap(z=features, x=column_t, y=np.arange(bins), colorscale=SPECTROGRAM,
                                zmin=low, zmax=high, showscale=False,
                                hovertemplate="%{x:.2f} s<br>mel bin %{y}<br>log-mel %{z:.2f}<extra></extra>"), 1, 1)
    labels = [f"{i + 1}. {r}" for i, r in enumerate(rows)]
    figure.add_trace(go.Heatmap(z=cross, x=frame_t, y=labels, colorscale=SEQUENTIAL, zmin=0.0,
                                zmax=float(max(cross.max(), 1e-6)), colorbar=dict(title="weight", thickness=12),
                                hovertemplate="%{y}<br>%{x:.2f} s<br>weight %{z:.3f}<extra></extra>"), 2, 1)
    figure.update_yaxes(title_text="mel bin", row=1, col=1)
    figure.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=10 * font_scale), row=2, col=1)
    if step is not None:
        figure.add_trace(go.Scatter(x=frame_t, y=cross[step], mode="lines", line=dict(color="#d95f02"),
                                    name=labels[step], hovertemplate="%{x:.2f} s: %{y:.3f}<extra></extra>"), 3, 1)
        figure.update_yaxes(title_text="weight", row=3, col=1)
        peak = float(frame_t[int(np.argmax(cross[step]))])
        for row in range(1, panels + 1):
            figure.add_vline(x=peak, line=dict(color="#d95f02", width=1, dash="dot"), row=row, col=1)
    figure.update_xaxes(title_text="time (s)", row=panels, col=1)
    figure.update_layout(title=dict(text=title, font=dict(size=15 * font_scale)), showlegend=False,
                         height=int((260 + 18 * len(rows) + (160 if step is not None else 0)) * font_scale),
                         margin=dict(l=10, r=10, t=int(50 * font_scale), b=10), font=dict(size=12 * font_scale))
    return restyled(figure)


def spectrogram(features: np.ndarray, *, title: str, frame: int | None = None, time_title: str = "time (s)",
                bins_title: str = "mel bin", font_scale: float = 1.0) -> go.Figure:
    """The log-mel spectrogram (mel bin × time, 10 ms columns), the highlighted encoder ``frame`` (20 ms: two
    columns) marked by a dotted line at its centre."""
    bins, columns = features.shape
    column_t = np.arange(columns) * COLUMN_S + COLUMN_S / 2  # (C,) centre of each column
    figure = go.Figure(go.Heatmap(z=features, x=column_t, y=np.arange(bins), colorscale=SPECTROGRAM,
                                  colorbar=dict(title="log-mel", thickness=12),
                                  hovertemplate="%{x:.2f} s<br>mel bin %{y}<br>log-mel %{z:.2f}<extra></extra>"))
    if frame is not None:
        figure.add_vline(x=frame * FRAME_S + FRAME_S / 2, line=dict(color="#d95f02", width=2, dash="dot"))
    return _laid_out(figure, title, time_title, bins_title, 300, font_scale)


def frame_rows(matrix: np.ndarray, *, title: str, value: str, time_title: str = "time (s)",
               rows_title: str = "dimension", frame: int | None = None, font_scale: float = 1.0) -> go.Figure:
    """A (rows, F) array over the encoder's frames on the time axis (each frame at its centre): the first
    dimensions of each frame's vector, for instance; ``frame`` marked."""
    frame_t = np.arange(matrix.shape[1]) * FRAME_S + FRAME_S / 2  # (F,)
    limit = float(max(np.abs(matrix).max(), 1e-6))
    figure = go.Figure(go.Heatmap(z=matrix, x=frame_t, y=np.arange(matrix.shape[0]), colorscale="RdBu_r",
                                  zmin=-limit, zmax=limit, colorbar=dict(title=value, thickness=12),
                                  hovertemplate="%{x:.2f} s<br>%{y}<br>%{z:.3f}<extra></extra>"))
    if frame is not None:
        figure.add_vline(x=frame * FRAME_S + FRAME_S / 2, line=dict(color="#d95f02", width=2, dash="dot"))
    return _laid_out(figure, title, time_title, rows_title, 300, font_scale)


def frame_map(weights: np.ndarray, *, title: str, rows_title: str, cols_title: str, frame: int | None = None,
              font_scale: float = 1.0) -> go.Figure:
    """Self-attention over the frames (F, F) with both axes in seconds (rows: the attending frame), the row of
    ``frame`` marked."""
    frame_t = np.arange(weights.shape[0]) * FRAME_S + FRAME_S / 2  # (F,)
    figure = go.Figure(go.Heatmap(z=weights, x=frame_t, y=frame_t, colorscale=SEQUENTIAL, zmin=0.0,
                                  zmax=float(max(weights.max(), 1e-6)), colorbar=dict(title="weight", thickness=12),
                                  hovertemplate="query %{y:.2f} s<br>key %{x:.2f} s<br>weight %{z:.3f}<extra></extra>"))
    if frame is not None:
        figure.add_hline(y=frame * FRAME_S + FRAME_S / 2, line=dict(color="#d95f02", width=1, dash="dot"))
    figure.update_yaxes(autorange="reversed")
    return _laid_out(figure, title, cols_title, rows_title, 420, font_scale)


def _laid_out(figure: go.Figure, title: str, x_title: str, y_title: str, height: int, font_scale: float) -> go.Figure:
    figure.update_xaxes(title_text=x_title)
    figure.update_yaxes(title_text=y_title)
    figure.update_layout(title=dict(text=title, font=dict(size=15 * font_scale)), showlegend=False,
                         height=int(height * font_scale), margin=dict(l=10, r=10, t=int(50 * font_scale), b=10),
                         font=dict(size=12 * font_scale))
    return restyled(figure)
