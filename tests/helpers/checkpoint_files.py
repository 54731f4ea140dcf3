"""Checkpoint files edited on purpose: read one raw, rewrite it with a field or tensor changed (checksum
recomputed, so only the check under test can catch it), and assert both readers refuse it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from core.io.checkpoint import CheckpointError, _digest, load, read_info
from tests.helpers.paths import REVERSE


def read_raw(path: Path) -> tuple[dict[str, str], dict[str, torch.Tensor]]:
    """(metadata, tensors) of the safetensors file at ``path``, unchecked."""
    with safe_open(str(path), framework="pt") as handle:
        return dict(handle.metadata()), {name: handle.get_tensor(name) for name in handle.keys()}


def rewrite(path: Path, *, config: dict | None = None, edit=None) -> None:
    """Re-write ``path`` with config fields and/or tensors changed, recomputing the checksum so that
    only the check under test can catch the change."""
    metadata, tensors = read_raw(path)
    if config:
        metadata["config"] = json.dumps({**json.loads(metadata["config"]), **config}, sort_keys=True)
    if edit:
        edit(metadata, tensors)
    metadata["sha256"] = _digest(tensors, metadata)
    save_file(tensors, str(path), metadata=metadata)


def refused(path: Path, *fragments: str) -> str:
    """Assert that both load and read_info refuse ``path`` naming it (and ``fragments``)."""
    for reader in (load, read_info):
        with pytest.raises(CheckpointError) as caught:
            reader(path)
        message = str(caught.value)
        assert path.name in message
        for fragment in fragments:
            assert fragment in message
    return message


def hostile_bytes(folder: Path, **config) -> bytes:
    """The shipped reverse checkpoint with ``config`` changed and its checksum recomputed."""
    path = folder / "hostile.safetensors"
    path.write_bytes(REVERSE.read_bytes())
    rewrite(path, config=config)
    return path.read_bytes()
