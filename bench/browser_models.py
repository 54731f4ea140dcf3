"""The models the browser benchmark opens in the app, written as Attnscope checkpoints into the
served app's runs folder (the app lists them as ``run:<name>``).

* ``nn512``: a plain ``torch.nn.Transformer`` (2 + 2 layers, 4 heads, d_model 64) imported with
  :func:`core.io.convert.from_nn_transformer` at ``max_len`` 512, over a character vocabulary. Its
  output is pinned to ``<eos>`` (the decoder's final norm outputs one constant vector that only the
  ``<eos>`` row of the output projection matches), so the answer comes at once and the figure is
  the maps' cost, not 256 greedy steps of a random model.
* ``long2048``: a one-layer, one-head language model at ``max_len`` 2048.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from core import ModelConfig, Tokenizer, Transformer, explain, load_checkpoint, save_checkpoint
from core.io.convert import config_for_nn_transformer, from_nn_transformer

ALPHABET = "abcdefgh"
EOS_ID = 2


def _pinned_to_eos(module: nn.Transformer, vocab: int) -> torch.Tensor:
    """Make ``module``'s decoder output a constant vector; return the (V, D) output projection whose
    ``<eos>`` row alone matches it."""
    constant = torch.ones(module.d_model)  # (D,)
    with torch.no_grad():
        module.decoder.norm.weight.zero_()
        module.decoder.norm.bias.copy_(constant)
    head = torch.zeros(vocab, module.d_model)  # (V, D)
    head[EOS_ID] = constant
    return head


def nn512(folder: Path) -> str:
    """Write the imported ``nn.Transformer`` at max_len 512; returns its catalog key."""
    chars = Tokenizer.train("char", [ALPHABET])
    torch.manual_seed(0)
    module = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=128,
                            dropout=0.0, batch_first=True).eval()
    config = config_for_nn_transformer(module, src_vocab_size=chars.vocab_size, tgt_vocab_size=chars.vocab_size,
                                       max_len=512)
    model = from_nn_transformer(module, config, lm_head=_pinned_to_eos(module, chars.vocab_size))
    save_checkpoint(folder / "nn512.safetensors", model, {"source": chars, "target": chars})
    return "run:nn512"


def long2048(folder: Path) -> str:
    """Write the one-head language model at max_len 2048; returns its catalog key."""
    chars = Tokenizer.train("char", [ALPHABET])
    torch.manual_seed(0)
    model = Transformer(ModelConfig(architecture="decoder", tgt_vocab_size=chars.vocab_size, dropout=0.0,
                                    d_model=8, n_heads=1, d_ff=8, max_len=2048, n_decoder_layers=1)).eval()
    save_checkpoint(folder / "long2048.safetensors", model, {"target": chars}, task="lm")
    return "run:long2048"


def _fitting(ckpt, kind: str, tokens: int, letters: str) -> str:
    """The text repeating ``letters`` whose ``kind`` map is ``tokens`` × ``tokens`` (specials included)."""
    for length in range(tokens, tokens - 4, -1):
        text = (letters * (length // len(letters) + 1))[:length]
        if explain(ckpt, text).attention[kind].shape[-1] == tokens:
            return text
    raise ValueError(f"no text gives a {tokens}-token {kind} map")


def texts_of(path: Path, kind: str, tokens: int, seeds: range) -> list[str]:
    """One text per seed over the alphabet (the seed rotates its letters, so up to 8 differ), each
    giving the model at ``path`` a ``kind`` map of ``tokens`` × ``tokens`` (checked with :func:`core.explain`)."""
    ckpt = load_checkpoint(path)
    return [_fitting(ckpt, kind, tokens, ALPHABET[seed % len(ALPHABET):] + ALPHABET[:seed % len(ALPHABET)])
            for seed in seeds]
