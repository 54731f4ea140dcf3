"""Explanations across a process boundary without pickle: JSON for the scalar fields and tokens, the
NumPy arrays as one ``safetensors`` blob.

:func:`to_wire` splits a list of :class:`Explanation` into a JSON-friendly value and a dict of named
arrays; :func:`from_wire` rebuilds the very same records (every array bit for bit, tuples as tuples,
``None`` as ``None``) and validates them again through the records' own checks. Every container is
tagged in the JSON (``{"tuple": [...]}``, ``{"dict": {...}}``, ``{"array": name}``), so nothing is
guessed on the way back and nothing but these two dataclasses can be built.

:func:`pack` and :func:`unpack` do the same for any value made of frozen dataclasses named in a registry
(``{"record": [name, {field: ...}]}``: a lesson's result, :mod:`core.lessons.worker`): a record whose type is
not in the registry is refused both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

from core.inspect.maps import OnDemandMaps
from core.inspect.records import Explanation, Prediction

Arrays = dict[str, np.ndarray]
Records = Mapping[str, type]  # the dataclasses a value may hold, by name
#: The records an explanation's fields may hold: a long input's maps, computed on demand.
MAP_RECORDS: Records = {"OnDemandMaps": OnDemandMaps}


def _encode(value: Any, name: str, arrays: Arrays, records: Records | None = None) -> Any:
    """``value`` as JSON, its arrays moved to ``arrays`` under names starting with ``name``; dataclasses
    only of the types in ``records``."""
    if is_dataclass(value) and records and records.get(type(value).__name__) is type(value):
        return {"record": [type(value).__name__, {f.name: _encode(getattr(value, f.name), f"{name}.{f.name}",
                                                                   arrays, records) for f in fields(value)}]}
    if isinstance(value, np.ndarray):
        arrays[name] = np.ascontiguousarray(value)
        return {"array": name}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, f"{name}.{i}", arrays, records) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{name}.{i}", arrays, records) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"{name}: only text keys cross the process boundary")
        return {"dict": {k: _encode(v, f"{name}.{k}", arrays, records) for k, v in value.items()}}
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"{name}: a {type(value).__name__} cannot cross the process boundary")


def _decode(value: Any, arrays: Arrays, records: Records | None = None) -> Any:
    """The inverse of :func:`_encode`.

    Raises:
        ValueError: a tag it does not know, a record type not in ``records``, fields that do not build it,
            or an array the blob does not hold.
    """
    if isinstance(value, list):
        return [_decode(v, arrays, records) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError("the worker's answer is malformed")
    (tag, inner), = value.items()
    if tag == "array" and isinstance(inner, str) and inner in arrays:
        return arrays[inner]
    if tag == "tuple" and isinstance(inner, list):
        return tuple(_decode(v, arrays, records) for v in inner)
    if tag == "dict" and isinstance(inner, dict):
        return {k: _decode(v, arrays, records) for k, v in inner.items()}
    if (tag == "record" and isinstance(inner, list) and len(inner) == 2 and isinstance(inner[1], dict)
            and records and isinstance(inner[0], str) and inner[0] in records):
        try:
            return records[inner[0]](**{k: _decode(v, arrays, records) for k, v in inner[1].items()})
        except TypeError as error:
            raise ValueError(f"the worker's answer is malformed: {error}") from None
    raise ValueError("the worker's answer is malformed")


def _fields(record: Any, name: str, arrays: Arrays) -> dict[str, Any]:
    return {f.name: _encode(getattr(record, f.name), f"{name}.{f.name}", arrays, MAP_RECORDS) for f in fields(record)
            if f.name != "prediction"}


def to_wire(explanations: list[Explanation]) -> tuple[list[dict[str, Any]], Arrays]:
    """(JSON-friendly records, arrays by name) of ``explanations``.

    Raises:
        TypeError: a field holds something that is neither JSON nor an array.
    """
    arrays: Arrays = {}
    records = []
    for i, explanation in enumerate(explanations):
        record = _fields(explanation, str(i), arrays)
        record["prediction"] = _fields(explanation.prediction, f"{i}.prediction", arrays)
        records.append(record)
    return records, arrays


def from_wire(records: Any, arrays: Arrays) -> list[Explanation]:
    """The explanations :func:`to_wire` was given.

    Raises:
        ValueError: records that are not what :func:`to_wire` writes, or that fail the records' checks.
    """
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError("the worker's answer is malformed")
    names = {f.name for f in fields(Explanation)}
    built = []
    for record in records:
        if set(record) != names or not isinstance(record["prediction"], dict):
            raise ValueError("the worker's answer is malformed")
        values = {k: _decode(v, arrays, MAP_RECORDS) for k, v in record.items() if k != "prediction"}
        prediction = {k: _decode(v, arrays) for k, v in record["prediction"].items()}
        try:
            built.append(Explanation(prediction=Prediction(**prediction), **values))
        except TypeError as error:
            raise ValueError(f"the worker's answer is malformed: {error}") from None
    return built


def pack(value: Any, records: Records) -> tuple[Any, Arrays]:
    """(JSON-friendly value, arrays by name) of ``value``: JSON scalars, arrays, tuples, lists, text-keyed
    dicts and dataclasses of the types in ``records``.

    Raises:
        TypeError: anything else, a dataclass of another type included.
    """
    arrays: Arrays = {}
    return _encode(value, "value", arrays, records), arrays


def unpack(value: Any, arrays: Arrays, records: Records) -> Any:
    """The value :func:`pack` was given (its records rebuilt through their own checks).

    Raises:
        ValueError: a value :func:`pack` does not write, or a record type not in ``records``.
    """
    return _decode(value, arrays, records)
