"""The tiny, seeded things every kind of test builds: model configs and models, random ids, checkpoints,
training settings, and a live pickle payload. One name per meaning:

- ``TINY_MODEL``: the sizes of a tiny ``ModelConfig`` (d_model 16, 4 heads, max_len 24, dropout 0);
  ``tiny_config``/``tiny_model`` build it;
- ``TINY_TRAINING``: the settings of a tiny ``TrainConfig`` (the copy task, a few steps' worth);
  ``tiny_training_config`` builds it.

Everything is tiny and seeded, so a test that uses them runs in seconds on a laptop CPU.
"""

from __future__ import annotations

import builtins
import pickle
from pathlib import Path

import torch

from core.config import ModelConfig
from core.io.checkpoint import save
from core.model.transformer import Transformer
from core.text.tokenizer import Tokenizer
from core.training.config import TrainConfig

TINY_MODEL = dict(d_model=16, n_heads=4, d_ff=32, dropout=0.0, max_len=24, n_encoder_layers=2, n_decoder_layers=2)
TINY_TRAINING = dict(task="copy", preset="tiny", train_size=300, batch_size=16, warmup=20, eval_every=10,
                     snapshot_every=10, save_every=10, dropout=0.1, progress=False, device="cpu")
VOCAB = 11  # for models built without a tokenizer
CHAR_CORPUS = ["hello world", "the quick brown fox jumps over the lazy dog", "abc, xyz! 0123456789?"]
LABELS = ["negative", "positive", "neutral"]
PAD, BOS, EOS, UNK = 0, 1, 2, 3


def tiny_config(architecture: str = "encoder-decoder", vocab: int = VOCAB, **overrides) -> ModelConfig:
    """A tiny, valid config of ``architecture`` (vocab sizes/classes filled in as it needs)."""
    sizes: dict = {}
    if architecture in ("encoder-decoder", "encoder"):
        sizes["src_vocab_size"] = vocab
    if architecture in ("encoder-decoder", "decoder"):
        sizes["tgt_vocab_size"] = vocab
    if architecture == "encoder":
        sizes["n_classes"] = len(LABELS)
    return ModelConfig(architecture=architecture, **{**TINY_MODEL, **sizes, **overrides})


def tiny_model(architecture: str = "encoder-decoder", seed: int = 0, vocab: int = VOCAB, **overrides) -> Transformer:
    """A seeded, randomly initialised tiny model in eval mode."""
    torch.manual_seed(seed)
    return Transformer(tiny_config(architecture, vocab, **overrides)).eval()


def tiny_training_config(folder: Path, name: str = "run", **overrides) -> TrainConfig:
    """A tiny training run of the copy task that saves ``folder/<name>.safetensors``."""
    return TrainConfig(out=str(folder / f"{name}.safetensors"), **{**TINY_TRAINING, **overrides})


def random_ids(batch: int, length: int, vocab: int = VOCAB, seed: int = 0, low: int = 4) -> torch.Tensor:
    """(batch, length) int64 ids of ordinary tokens (no specials)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(low, vocab, (batch, length), generator=generator)


def build_checkpoint(path: Path, architecture: str, tokenizer: Tokenizer, seed: int = 0, **overrides) -> Path:
    """Save a random tiny model of ``architecture`` with ``tokenizer`` as a checkpoint at ``path``."""
    model = tiny_model(architecture, seed=seed, vocab=tokenizer.vocab_size, **overrides)
    extra = {"labels": LABELS} if architecture == "encoder" else {}
    save(path, model, {"source": tokenizer, "target": tokenizer}, task="reverse", extra=extra)
    return path


class MarkerPayload:
    """Unpickling this object creates ``marker`` (proof that code ran during loading)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (builtins.open, (str(self.marker), "w"))


def payload_bytes(marker: Path) -> bytes:
    """A plain pickle whose loading would create ``marker``."""
    return pickle.dumps({"weight": MarkerPayload(marker)})
