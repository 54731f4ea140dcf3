"""Shared tiny models, tokenizers, checkpoints and a live pickle payload for the core tests.

Everything is tiny (d_model 16, 4 heads, max_len 24, dropout 0) and seeded, so the
whole suite runs in seconds on a laptop CPU.
"""

from __future__ import annotations

import builtins
import pickle
from pathlib import Path

import pytest
import torch

from core.io.checkpoint import Checkpoint, load, save
from core.config import ARCHITECTURES, ModelConfig
from core.model.transformer import Transformer
from core.text.tokenizer import Tokenizer

TINY = dict(d_model=16, n_heads=4, d_ff=32, dropout=0.0, max_len=24, n_encoder_layers=2, n_decoder_layers=2)
VOCAB = 11  # for models built without a tokenizer
CHAR_CORPUS = ["hello world", "the quick brown fox jumps over the lazy dog", "abc, xyz! 0123456789?"]
LABELS = ["negative", "positive", "neutral"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3


@pytest.fixture(scope="session", autouse=True)
def single_intra_op_thread():
    """Tiny models run fastest on one thread; extra threads only spin when the CPU is shared."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def tiny_config(architecture: str = "encoder-decoder", vocab: int = VOCAB, **overrides) -> ModelConfig:
    """A tiny, valid config of ``architecture`` (vocab sizes/classes filled in as it needs)."""
    sizes: dict = {}
    if architecture in ("encoder-decoder", "encoder"):
        sizes["src_vocab_size"] = vocab
    if architecture in ("encoder-decoder", "decoder"):
        sizes["tgt_vocab_size"] = vocab
    if architecture == "encoder":
        sizes["n_classes"] = len(LABELS)
    return ModelConfig(architecture=architecture, **{**TINY, **sizes, **overrides})


def tiny_model(architecture: str = "encoder-decoder", seed: int = 0, vocab: int = VOCAB, **overrides) -> Transformer:
    """A seeded, randomly initialised tiny model in eval mode."""
    torch.manual_seed(seed)
    return Transformer(tiny_config(architecture, vocab, **overrides)).eval()


def random_ids(batch: int, length: int, vocab: int = VOCAB, seed: int = 0, low: int = 4) -> torch.Tensor:
    """(batch, length) int64 ids of ordinary tokens (no specials)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(low, vocab, (batch, length), generator=generator)


class MarkerPayload:
    """Unpickling this object creates ``marker`` (proof that code ran during loading)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (builtins.open, (str(self.marker), "w"))


def payload_bytes(marker: Path) -> bytes:
    """A plain pickle whose loading would create ``marker``."""
    return pickle.dumps({"weight": MarkerPayload(marker)})


@pytest.fixture
def marker_payload(tmp_path: Path) -> tuple[bytes, Path]:
    """(payload bytes, marker path). Verifies first that the payload is live, so tests that
    assert "the marker does not exist" could fail."""
    probe = tmp_path / "probe-marker"
    pickle.loads(payload_bytes(probe))["weight"].close()
    assert probe.exists(), "the pickle payload must really run code when unpickled"
    marker = tmp_path / "pwned-marker"
    return payload_bytes(marker), marker


@pytest.fixture(scope="session")
def char_tokenizer() -> Tokenizer:
    return Tokenizer.train("char", CHAR_CORPUS)


def build_checkpoint(path: Path, architecture: str, tokenizer: Tokenizer, seed: int = 0, **overrides) -> Path:
    """Save a random tiny model of ``architecture`` with ``tokenizer`` as a checkpoint at ``path``."""
    model = tiny_model(architecture, seed=seed, vocab=tokenizer.vocab_size, **overrides)
    extra = {"labels": LABELS} if architecture == "encoder" else {}
    save(path, model, {"source": tokenizer, "target": tokenizer}, task="reverse", extra=extra)
    return path


@pytest.fixture(scope="session")
def checkpoint_paths(tmp_path_factory: pytest.TempPathFactory, char_tokenizer: Tokenizer) -> dict[str, Path]:
    """architecture → path of a tiny random checkpoint with char tokenizers."""
    folder = tmp_path_factory.mktemp("checkpoints")
    return {
        arch: build_checkpoint(folder / f"{arch}.safetensors", arch, char_tokenizer, seed=i)
        for i, arch in enumerate(ARCHITECTURES)
    }


@pytest.fixture(scope="session")
def checkpoints(checkpoint_paths: dict[str, Path]) -> dict[str, Checkpoint]:
    """architecture → the loaded checkpoint (shared: tests must not modify the models)."""
    return {arch: load(path) for arch, path in checkpoint_paths.items()}


# ----------------------------------------------------------------------------- the app
@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty runs folder for the app (``ATTNSCOPE_RUNS``), so tests never touch the user's runs.

    The catalog cache and the training job registry are process-wide: the catalog is
    forgotten before and after, and no job is left training.
    """
    from app import resources  # the app's caches: only for the tests that use the app

    monkeypatch.setenv("ATTNSCOPE_RUNS", str(tmp_path))
    resources.entries.clear()
    yield tmp_path
    resources.entries.clear()
    for job in resources.registry().jobs():
        job.stop()
        assert job.join(timeout=120)
        resources.registry().forget(job.name)
