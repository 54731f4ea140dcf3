"""Attention snapshots: the maps of a task's fixed probe input, recorded during training.

Sequence tasks run the probe teacher-forced on its true target, so every snapshot has
the same rows and columns and the timeline shows the same cells changing. The maps are
stored in the checkpoint as extra tensors ``snapshot/<step>/<kind>`` (float16), and the
metadata ``extra["snapshots"]`` indexes them. Readers use :func:`snapshot_timeline`, which
hides that layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

from core.inspect.records import axis_tokens
from core.io.checkpoint import Checkpoint
from core.text.tokenizer import Tokenizer
from core.model.contract import KINDS
from core.model.transformer import Transformer
from core.tasks import Task, TaskData
from core.text.sequences import decoder_sequence, source_encoding

SNAPSHOT_PREFIX = "snapshot/"


@torch.inference_mode()
def probe_snapshot(
    model: Transformer, tokenizers: dict[str, Tokenizer], task: Task, data: TaskData
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The probe's attention now, and the index entry describing its axes.

    Returns:
        ({kind: float32 (L, H, Tq, Tk)}, {"probe": ..., "source_tokens": ..., "target_tokens": ..., "kinds": ...})
    """
    was_training = model.training
    model.eval()
    cfg, device = model.config, next(model.parameters()).device
    probe = task.probe_example
    src = tgt = None
    source_tokens: list[str] = []
    target_tokens: list[str] = []
    if "source" in tokenizers:
        encoding, _ = source_encoding(tokenizers["source"], probe.source, cfg.max_len)
        src = torch.tensor([encoding.ids], device=device)
        source_tokens = encoding.tokens
    if "target" in tokenizers:
        text = probe.source if task.architecture == "decoder" else probe.target
        ids = decoder_sequence(tokenizers["target"], text, cfg.max_len)[:-1]  # <bos> + tokens
        tgt = torch.tensor([ids], device=device)
        target_tokens = tokenizers["target"].token_strings(ids)
    output = model(src, tgt, return_attention=True)
    model.train(was_training)
    maps = {kind: weights[:, 0].float().cpu().numpy() for kind, weights in output.attention.items()}
    index = {"probe": {"source": probe.source, "target": probe.target}, "source_tokens": source_tokens,
             "target_tokens": target_tokens, "kinds": list(maps)}
    return maps, index


def snapshot_maps(extra_tensors: Mapping[str, torch.Tensor], step: int) -> dict[str, np.ndarray]:
    """The maps stored for ``step``: {kind: float32 (L, H, Tq, Tk)}."""
    prefix = f"{SNAPSHOT_PREFIX}{step}/"
    return {k[len(prefix):]: v.float().numpy() for k, v in extra_tensors.items() if k.startswith(prefix)}


@dataclass(frozen=True)
class TimelineHeader:
    """What an attention timeline says besides its maps (pure data).

    Attributes:
        steps: recorded steps whose maps are really in the file, ascending (0 = random initialisation).
        kinds: the attention kinds recorded, in reading order.
        probe_source / probe_target: the probe example's texts ("" when unknown).
        source_tokens / target_tokens: the probe's tokens labelling the maps' axes.
        history: the run's validation records (``step``, ``loss``, ``validation``), oldest first.
        best_step: the step whose weights the checkpoint holds, when recorded.
    """

    steps: list[int]
    kinds: list[str]
    probe_source: str
    probe_target: str
    source_tokens: list[str]
    target_tokens: list[str]
    history: list[dict[str, Any]]
    best_step: int | None

    def header(self) -> dict[str, Any]:
        """The header's fields by name, each list copied (the parts of a record built from this one)."""
        copied = {}
        for f in fields(TimelineHeader):
            value = getattr(self, f.name)
            copied[f.name] = list(value) if isinstance(value, (list, tuple)) else value
        return copied


@dataclass(frozen=True)
class SnapshotTimeline(TimelineHeader):
    """A checkpoint's attention timeline: the probe's maps at every recorded step (pure data), beside
    :class:`TimelineHeader`'s fields."""

    stored: dict[tuple[int, str], np.ndarray] = field(repr=False, compare=False)  # (step, kind) → float16 (L, H, Tq, Tk)

    def maps(self, step: int, kind: str) -> np.ndarray:
        """Float32 (L, H, Tq, Tk) maps of ``kind`` at ``step``.

        Raises:
            KeyError: no snapshot of ``kind`` at ``step``.
        """
        return self.stored[(step, kind)].astype(np.float32)

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(row = query tokens, column = key tokens) of ``kind``'s maps; positions ``"0", "1", …``
        where the recorded tokens do not match the maps' shape."""
        rows, cols = axis_tokens(kind, self.source_tokens, self.target_tokens)
        tq, tk = self.stored[(self.steps[0], kind)].shape[-2:]
        if (len(rows), len(cols)) != (tq, tk):
            return [str(i) for i in range(tq)], [str(i) for i in range(tk)]
        return list(rows), list(cols)

    def metrics_at(self, step: int) -> dict[str, float] | None:
        """The validation metrics recorded at ``step``, or None when that step was not validated."""
        record = next((r for r in self.history if r["step"] == step), None)
        return dict(record["validation"]) if record else None


def training_history(ckpt: Checkpoint) -> list[dict[str, Any]]:
    """The run's validation records (empty when missing or not in the trainer's format)."""
    history = ckpt.info.extra.get("history")
    if not isinstance(history, list):
        return []
    return [r for r in history if isinstance(r, dict) and isinstance(r.get("step"), int)
            and isinstance(r.get("loss"), (int, float)) and isinstance(r.get("validation"), dict)]


def snapshot_timeline(ckpt: Checkpoint) -> SnapshotTimeline:
    """The attention timeline stored in ``ckpt`` (no steps when it has none or its index is malformed)."""
    index = ckpt.info.extra.get("snapshots")
    index = index if isinstance(index, dict) else {}
    listed = index.get("steps") if isinstance(index.get("steps"), list) else []
    stored: dict[tuple[int, str], np.ndarray] = {}
    for key, tensor in ckpt.extra_tensors.items():
        parts = key.split("/")
        if len(parts) == 3 and f"{parts[0]}/" == SNAPSHOT_PREFIX and parts[1].isdigit():
            stored[(int(parts[1]), parts[2])] = tensor.half().numpy()
    steps = sorted({s for s in listed if isinstance(s, int) and any(k[0] == s for k in stored)})
    present = [kind for kind in KINDS if any((s, kind) in stored for s in steps)]
    kinds = [k for k in index.get("kinds", present) if k in present] or present
    probe = index.get("probe") if isinstance(index.get("probe"), dict) else {}
    extra = ckpt.info.extra
    return SnapshotTimeline(
        steps=steps, kinds=kinds, probe_source=str(probe.get("source") or ""),
        probe_target=str(probe.get("target") or ""), source_tokens=list(index.get("source_tokens") or []),
        target_tokens=list(index.get("target_tokens") or []), history=training_history(ckpt),
        best_step=extra.get("best_step") if isinstance(extra.get("best_step"), int) else None,
        stored={k: v for k, v in stored.items() if k[0] in steps and k[1] in kinds},
    )


@dataclass(frozen=True)
class TimelineParts(TimelineHeader):
    """A :class:`SnapshotTimeline` as a worker process's answer carries it (the records of
    :mod:`core.inspect.wire`): its maps listed beside the (step, kind) each was recorded at, not keyed by them."""

    recorded_at: tuple[tuple[int, str], ...]
    maps: tuple[np.ndarray, ...]  # float16 (L, H, Tq, Tk), one per entry of recorded_at

    def timeline(self) -> SnapshotTimeline:
        """The timeline these parts describe.

        Raises:
            ValueError: as many maps as steps they were recorded at, or the answer is malformed.
        """
        if len(self.recorded_at) != len(self.maps):
            raise ValueError("the attention timeline is malformed")
        stored = {(int(step), str(kind)): np.asarray(maps) for (step, kind), maps in zip(self.recorded_at, self.maps)}
        return SnapshotTimeline(**self.header(), stored=stored)


def timeline_parts(ckpt: Checkpoint) -> TimelineParts:
    """:func:`snapshot_timeline` of ``ckpt`` as :class:`TimelineParts` (what a worker process answers)."""
    tl = snapshot_timeline(ckpt)
    return TimelineParts(**tl.header(), recorded_at=tuple(tl.stored), maps=tuple(tl.stored.values()))
