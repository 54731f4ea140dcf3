"""The tables the Learn pages show: core's lesson results (``core.lessons``) as labelled DataFrames.

Presentation only: core computes every number; these functions name rows and columns.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd

from core import lessons


def dim_names(d_model: int) -> list[str]:
    """Column names that say which dimensions are sines and which cosines: ``"0 (sin)"``."""
    return [f"{j} ({'sin' if j % 2 == 0 else 'cos'})" for j in range(d_model)]


def row_labels(batch: int, tokens: int) -> list[str]:
    """``"s0·t1"`` labels for the rows of a (batch·tokens, features) view."""
    return [f"s{b}·t{t}" for b in range(batch) for t in range(tokens)]


def split_sentences(text: str, max_sentences: int = 8) -> list[str]:
    """Non-empty lines of ``text`` (at most ``max_sentences``)."""
    return [line.strip() for line in text.splitlines() if line.strip()][:max_sentences]


def pe_frame(pe: np.ndarray) -> pd.DataFrame:
    """The encoding (T, D) as a table: one row per position, one column per dimension."""
    return pd.DataFrame(pe, columns=dim_names(pe.shape[1]),
                        index=pd.Index([f"pos {p}" for p in range(pe.shape[0])], name="position"))


def curves_frame(curves: lessons.PECurves, d_model: int) -> pd.DataFrame:
    """Long format: position, dimension (label), value, at_token (True at integer positions)."""
    names = dim_names(d_model)
    frames = [pd.DataFrame({"position": curves.positions, "dimension": names[j], "value": values,
                            "at_token": curves.at_token}) for j, values in zip(curves.dims, curves.values)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["position", "dimension", "value", "at_token"])


def rotation_frame(check: lessons.RotationCheck, k: int, i: int) -> pd.DataFrame:
    """For every pos: the pair of PE(pos), R_k applied to it, PE(pos + k), and the largest difference."""
    a, b = 2 * i, 2 * i + 1
    return pd.DataFrame({
        "pos": np.arange(len(check.error)),
        f"PE(pos)[{a}]": check.pair[:, 0], f"PE(pos)[{b}]": check.pair[:, 1],
        f"R·PE(pos)[{a}]": check.rotated[:, 0], f"R·PE(pos)[{b}]": check.rotated[:, 1],
        f"PE(pos+{k})[{a}]": check.shifted[:, 0], f"PE(pos+{k})[{b}]": check.shifted[:, 1],
        "max |difference|": check.error,
    })


def worked_frames(worked: lessons.WorkedExample) -> dict[str, pd.DataFrame]:
    """The notes' 4 × 4 example: PE, the word embeddings x, and x + PE, rows named by token."""
    index = pd.Index([f"pos {p}: {w}" for p, w in enumerate(worked.words)], name="token")
    cols = dim_names(worked.pe.shape[1])
    return {"pe": pd.DataFrame(worked.pe, columns=cols, index=index),
            "x": pd.DataFrame(worked.x, columns=[f"dim {j}" for j in range(worked.x.shape[1])], index=index),
            "x_plus_pe": pd.DataFrame(worked.total, columns=cols, index=index)}


def saturation_frame(sat: lessons.Saturation, names: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per width d: score spreads and the largest softmax weight, unscaled and scaled (``names``: the
    columns' names by role, :func:`app.charts.teaching.saturation_columns`; English when not given)."""
    named = {"std": "std of q·k", "std_scaled": "std of q·k/√d", "max_unscaled": "max weight, unscaled",
             "max_scaled": "max weight, scaled", **(names or {})}
    return pd.DataFrame({"d": sat.dims, named["std"]: sat.score_std, "√d": sat.sqrt_d,
                         named["std_scaled"]: sat.scaled_std, named["max_unscaled"]: sat.max_unscaled,
                         named["max_scaled"]: sat.max_scaled})


def norm_frames(stats: lessons.NormStats, batch: int, tokens: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-token (row) and per-feature (column) mean and std after LayerNorm and BatchNorm."""
    rows = pd.DataFrame({"token": row_labels(batch, tokens), "mean (LayerNorm)": stats.row_mean_layer,
                         "std (LayerNorm)": stats.row_std_layer, "mean (BatchNorm)": stats.row_mean_batch,
                         "std (BatchNorm)": stats.row_std_batch})
    cols = pd.DataFrame({"feature": [f"f{j}" for j in range(len(stats.col_mean_layer))],
                         "mean (BatchNorm)": stats.col_mean_batch, "std (BatchNorm)": stats.col_std_batch,
                         "mean (LayerNorm)": stats.col_mean_layer, "std (LayerNorm)": stats.col_std_layer})
    return rows, cols


def parameter_frame(blocks: list[lessons.BlockCount]) -> pd.DataFrame:
    """block, parameters, formula, from the formula, share: the model's count next to the formula's."""
    frame = pd.DataFrame([asdict(b) for b in blocks], columns=["block", "formula", "expected", "parameters", "share"])
    frame = frame.rename(columns={"expected": "from the formula"})
    return frame[["block", "parameters", "formula", "from the formula", "share"]]
