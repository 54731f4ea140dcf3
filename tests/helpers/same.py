"""Equality for results that crossed a process boundary: field by field, arrays bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np


def assert_same(got: object, want: object, where: str = "explanation") -> None:
    """Equal field by field, arrays bit for bit (dtype and shape too), containers of the same type."""
    assert type(got) is type(want), (where, type(got), type(want))
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want, equal_nan=True), where
    elif dataclasses.is_dataclass(want):
        for f in dataclasses.fields(want):
            assert_same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert got == want, (where, got, want)
