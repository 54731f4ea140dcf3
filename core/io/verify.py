"""Checkpoint checks that run before (and right after) anything is allocated.

* :func:`check_layout`: the tensor names, shapes and dtypes in the safetensors *header*
  against the ones the config implies (computed on the ``meta`` device: no memory), so a
  lying config is refused before a model is built or a tensor is read.
* :func:`digest` and :class:`DigestCache`: the SHA-256 over tensors and metadata, computed
  once per version of a file (keyed by path, inode, size, mtime and ctime).
* :func:`probe_record` / :func:`check_probe`: the model's behaviour on a fixed probe input,
  stored at save time. Config fields that do not show in any tensor shape (``n_heads`` with
  the default score, ``norm``, ``positional``, ``pe_base``, ``score``, ``pad_id``) change that
  behaviour, so editing them is caught even when the edited file's checksum was recomputed.
  The checksum is not a signature: anyone may write a self-consistent file, which is why every
  file is also held to the size budget (:data:`core.config.LOAD_BUDGET`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from core.budget import parameter_count
from core.config import ModelConfig
from core.model.transformer import Transformer

EXTRA_PREFIX = "extra/"
TIED = ("lm_head.weight", "tgt_embed.weight")  # (dropped on save, shares storage with)
WEIGHT_DTYPE = "F32"  # design: float32 weights
EXTRA_DTYPES = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"}
_DTYPE_BYTES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
_PROBE_LENGTH = 6
_TOLERANCE = 1e-2  # relative: survives CPU/GPU kernel differences, not a changed config


class CheckpointError(Exception):
    """Any fault reading or writing a checkpoint: the message names the file and the cause."""


#: The most bytes of a safetensors header (the JSON of its metadata and tensor index) parsed: a shipped
#: checkpoint's is 150 KB; a 90 MB one took 10 s and 730 MB to read.
MAX_HEADER_BYTES = 32 * 2**20


def check_header_size(path: Path) -> None:
    """Refuse a safetensors file whose header holds more than :data:`MAX_HEADER_BYTES`, before it is parsed (a
    length past the end of the file is not a safetensors header: left to the readers to refuse).

    Raises:
        CheckpointError: one line naming the file.
        OSError: it cannot be read.
    """
    with open(path, "rb") as handle:
        raw, end = handle.read(8), os.fstat(handle.fileno()).st_size
    size = int.from_bytes(raw, "little") if len(raw) == 8 else 0
    if MAX_HEADER_BYTES < size <= end - 8:
        raise CheckpointError(f"{path.name} has a header of {size / 2**20:,.0f} MiB; at most "
                              f"{MAX_HEADER_BYTES / 2**20:g} MiB is read")


# ---------------------------------------------------------------- checksum
def digest(tensors: Iterable[tuple[str, Tensor]], metadata: dict[str, str]) -> str:
    """SHA-256 over every (name, tensor) in name order (name, dtype, shape, bytes) and every
    metadata entry but ``sha256``. ``tensors`` may be a lazy iterator: one tensor in memory at a time."""
    sha = hashlib.sha256()
    for name, tensor in tensors:
        sha.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        sha.update(tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    for key in sorted(k for k in metadata if k != "sha256"):
        sha.update(f"{key}={metadata[key]}\n".encode())
    return sha.hexdigest()


class DigestCache:
    """Remembers which versions of which files were verified, so a file is hashed once.

    A version is (real path, device, inode, size, mtime_ns, ctime_ns, stored checksum): any rewrite,
    replacement or edit of the file is a new version and is hashed again. Thread-safe, bounded.
    (An edit that restores size, mtime and ctime within one timestamp tick would go unseen: only
    someone who can write the file could do that, and they could write any valid file anyway.)
    """

    def __init__(self, max_entries: int = 1024) -> None:
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_entries

    def __contains__(self, key: tuple) -> bool:
        with self._lock:
            if key in self._seen:
                self._seen.move_to_end(key)
                return True
            return False

    def add(self, key: tuple) -> None:
        """Record ``key`` as verified."""
        with self._lock:
            self._seen[key] = None
            while len(self._seen) > self._max:
                self._seen.popitem(last=False)

    def clear(self) -> None:
        """Forget every verified file."""
        with self._lock:
            self._seen.clear()


# ---------------------------------------------------------------- layout against config
#: Below this, building a model to read its layout is cheaper on the CPU; every shipped checkpoint is below it
#: (the asset budget, 10 MB of float32, is 2.5 M parameters).
CPU_LAYOUT_PARAMETERS = 4_000_000


def expected_layout(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Name → shape of every weight a checkpoint of ``config`` stores.

    Small models are built on the CPU (milliseconds); larger ones on ``meta`` (no memory), whose first
    use in a process imports ``torch._dynamo`` for its initialisers (seconds, once).
    """
    small = parameter_count(config) <= CPU_LAYOUT_PARAMETERS
    with torch.random.fork_rng(devices=[]), torch.device("cpu" if small else "meta"):  # the caller's RNG untouched
        model = Transformer(config)
    layout = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    if config.tie_embeddings:
        del layout[TIED[0]]
    return layout


def check_layout(name: str, config: ModelConfig, header: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    """Refuse a file whose header (tensor → (dtype, shape)) does not match ``config``.

    Raises:
        CheckpointError: missing/unexpected tensors, a wrong shape (naming the suspect field) or
            a dtype other than float32 for a weight.
    """
    expected = expected_layout(config)
    weights = {k: v for k, v in header.items() if not k.startswith(EXTRA_PREFIX)}
    missing, unexpected = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or unexpected:
        parts = [f"{label} {', '.join(keys[:8])}" for label, keys in
                 (("missing", missing), ("unexpected", unexpected)) if keys]
        raise CheckpointError(f"{name} does not match its config: {'; '.join(parts)}")
    for key, want in expected.items():
        dtype, found = weights[key]
        if found != want:
            raise CheckpointError(f"{name} does not match its config ({suspect_field(key)}): tensor {key} "
                                  f"has shape {found}, the config implies {want}")
        if dtype != WEIGHT_DTYPE:
            raise CheckpointError(f"{name}: weight {key} is {dtype}; Attnscope checkpoints hold float32 (F32)")
    odd = sorted(k for k, (dtype, _) in header.items() if k.startswith(EXTRA_PREFIX) and dtype not in EXTRA_DTYPES)
    if odd:
        raise CheckpointError(f"{name}: extra tensor {odd[0]} has an unsupported dtype {header[odd[0]][0]}")


def check_extra_bytes(name: str, header: dict[str, tuple[str, tuple[int, ...]]], limit: int) -> None:
    """Refuse a file whose extra tensors (``extra/…``: attention snapshots) hold more than ``limit`` bytes, from
    the header's shapes (so nothing reads or hashes them first).

    Raises:
        CheckpointError: naming the file and the size.
    """
    total = 0
    for key, (dtype, shape) in header.items():
        if key.startswith(EXTRA_PREFIX):
            count = 1
            for size in shape:
                count *= size
            total += count * _DTYPE_BYTES.get(dtype, 8)
    if total > limit:
        raise CheckpointError(f"{name}: its extra tensors hold {total / 2**20:,.0f} MiB, over the "
                              f"{limit / 2**20:,.0f} MiB a checkpoint may store beside its weights")


def suspect_field(tensor_name: str) -> str:
    """The config field most likely to be wrong when ``tensor_name`` has the wrong shape."""
    for fragment, field_name in (
        ("src_embed", "src_vocab_size or d_model"), ("tgt_embed", "tgt_vocab_size or d_model"),
        ("lm_head", "tgt_vocab_size or d_model"), ("positional", "max_len or d_model"),
        ("classifier", "n_classes or d_model"), ("linear1", "d_ff or d_model"), ("linear2", "d_ff or d_model"),
        ("score", "n_heads or d_model"),
    ):
        if fragment in tensor_name:
            return f"check {field_name}"
    return "check d_model"


def check_finite(name: str, tensors: dict[str, Tensor]) -> None:
    """Refuse NaN or Inf in any floating-point tensor (weights and extra tensors such as snapshots)."""
    bad = sorted(k for k, t in tensors.items() if t.is_floating_point() and not torch.isfinite(t).all())
    if bad:
        raise CheckpointError(f"{name} has non-finite values (NaN or Inf) in {', '.join(bad[:5])}")


# ---------------------------------------------------------------- behaviour probe
def _probe_batch(config: ModelConfig, device: torch.device) -> dict[str, Tensor]:
    """A fixed, non-padding input of up to six tokens per stack (ordinary ids, no randomness)."""
    length, batch = min(_PROBE_LENGTH, config.max_len), {}
    for role, vocab, present in (("src", config.src_vocab_size, config.has_encoder),
                                 ("tgt", config.tgt_vocab_size, config.has_decoder)):
        if present:  # vocab >= 5 (ModelConfig), so ids are in [4, vocab) and pad is swapped out
            ids = [4 + (3 * i) % (vocab - 4) for i in range(length)]
            ids = [(i + 1) % vocab if i == config.pad_id else i for i in ids]
            batch[role] = torch.tensor([ids], dtype=torch.long, device=device)
    return batch


def probe_record(model: Transformer) -> dict[str, Any]:
    """The model's answer to a fixed probe: a few logits and each (layer, head)'s mean attended position.

    Runs in eval mode without gradients (restoring the model's mode), so it consumes no randomness.
    """
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(**_probe_batch(model.config, device), return_attention=True)
    finally:
        model.train(was_training)
    record = {"logits": [round(float(x), 6) for x in out.logits.flatten()[:16].cpu()], "attention": {}}
    for kind, maps in (out.attention or {}).items():  # (L, 1, H, Tq, Tk)
        position = torch.arange(maps.size(-1), dtype=torch.float32, device=maps.device)
        centre = (maps[:, 0].float() * position).sum(-1).mean(-1)  # (L, H)
        record["attention"][kind] = [[round(float(x), 6) for x in row] for row in centre.cpu()]
    return record


def check_probe(name: str, model: Transformer, stored: str | None) -> None:
    """Re-run the probe on the loaded model and compare with the record saved with it.

    Raises:
        CheckpointError: naming ``n_heads`` when the head count differs, otherwise the config
            fields that could have changed the behaviour. Files saved before probes existed pass.
    """
    if stored is None:
        return
    try:
        saved = json.loads(stored)
        saved_heads = {k: len(v[0]) for k, v in saved["attention"].items()}
        saved_logits = [float(x) for x in saved["logits"]]
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as error:
        raise CheckpointError(f"{name} has an invalid probe record ({error})") from None
    now = probe_record(model)
    heads = {k: len(v[0]) for k, v in now["attention"].items()}
    if heads != saved_heads:
        raise CheckpointError(f"{name} does not match its config (n_heads): the weights were saved with "
                              f"{saved_heads} heads per kind, the config says {heads}")
    pairs = list(zip(now["logits"], saved_logits)) + [
        (a, b) for kind in heads for row, old in zip(now["attention"][kind], saved["attention"][kind])
        for a, b in zip(row, old)]
    if len(now["logits"]) != len(saved_logits) or not all(abs(a - b) <= _TOLERANCE * (1 + abs(b)) for a, b in pairs):
        raise CheckpointError(f"{name} does not match its config: the model no longer gives the answers it was "
                              f"saved with (check n_heads, norm, positional, pe_base, score, pad_id)")


def looks_like_hf_weights(path: Path, metadata: dict[str, str]) -> bool:
    """Whether ``path`` looks like ``transformers``' weights: beside a config.json, or named and marked as
    ``save_pretrained`` writes them."""
    named = re.fullmatch(r"model(-\d+-of-\d+)?\.safetensors", path.name) is not None
    return (path.parent / "config.json").is_file() or (named and metadata.get("format") == "pt")
