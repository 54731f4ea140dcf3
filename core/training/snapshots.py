"""Attention snapshots: the maps of a task's fixed probe input, recorded during training.

Sequence tasks run the probe teacher-forced on its true target, so every snapshot has
the same rows and columns and the timeline shows the same cells changing. The maps are
stored in the checkpoint as extra tensors ``snapshot/<step>/<kind>`` (float16), and the
metadata ``extra["snapshots"]`` indexes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from core.training.data import decoder_sequence, source_encoding
from core.model.transformer import Transformer
from core.tasks import Task, TaskData
from core.io.tokenizer import Tokenizer

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


def snapshot_maps(extra_tensors: dict[str, torch.Tensor], step: int) -> dict[str, np.ndarray]:
    """The maps stored for ``step``: {kind: float32 (L, H, Tq, Tk)}."""
    prefix = f"{SNAPSHOT_PREFIX}{step}/"
    return {k[len(prefix):]: v.float().numpy() for k, v in extra_tensors.items() if k.startswith(prefix)}
