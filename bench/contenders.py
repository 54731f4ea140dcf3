"""The two contenders of ``train_speed.py``: Attnscope's ``Transformer`` and a baseline on PyTorch's own
``nn.Transformer`` with the same sizes, each with its optimizer and dropout RNG stream, and a batched
greedy decoder that scores both alike.
"""

from __future__ import annotations

import contextlib
import math

import torch
from torch import Tensor, nn

from core.config import ModelConfig
from core.text.tokenizer import BOS_ID, EOS_ID
from core.model.positional import sinusoidal_encoding
from core.model.transformer import Transformer
from core.training.step import make_optimizer


class TorchTransformer(nn.Module):
    """The baseline: embeddings × √D + sinusoids → ``nn.Transformer`` → Linear, sized by a ModelConfig."""

    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.config = c
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model, c.pe_base), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(
            c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, c.dropout,
            batch_first=True, norm_first=c.norm == "pre",
        )
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def _embed(self, ids: Tensor, table: nn.Embedding) -> Tensor:
        return self.dropout(table(ids) * math.sqrt(self.config.d_model) + self.pe[: ids.size(1)])

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """(memory (B, S, D), src padding mask (B, S), True = pad)."""
        pad = src == self.config.pad_id
        return self.transformer.encoder(self._embed(src, self.src_embed), src_key_padding_mask=pad), pad

    def decode(self, tgt: Tensor, memory: Tensor, src_pad: Tensor) -> Tensor:
        """Logits (B, T, V) under the causal mask."""
        causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device).triu(1)
        hidden = self.transformer.decoder(
            self._embed(tgt, self.tgt_embed), memory, tgt_mask=causal, tgt_is_causal=True,
            tgt_key_padding_mask=tgt == self.config.pad_id, memory_key_padding_mask=src_pad,
        )
        return self.lm_head(hidden)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Logits (B, T, V) of the decoder input ``tgt`` (B, T) given the source ``src`` (B, S)."""
        return self.decode(tgt, *self.encode(src))


class Contender:
    """One model with the adapters the shared training loop and greedy decoder need."""

    def __init__(self, name: str, config: ModelConfig, seed: int, device: torch.device) -> None:
        torch.manual_seed(seed)
        self.name, self.ours = name, name == "attnscope"
        self.model = (Transformer(config) if self.ours else TorchTransformer(config)).to(device)
        self.optimizer = make_optimizer(self.model)
        torch.manual_seed(seed)  # every contender's dropout starts from the same stream ...
        self.cuda = device.type == "cuda"
        self.state = self._rng()

    def _rng(self) -> tuple:
        return torch.get_rng_state(), torch.cuda.get_rng_state() if self.cuda else None

    @contextlib.contextmanager
    def own_rng(self):
        """... and keeps its own, so interleaving contenders changes nothing."""
        torch.set_rng_state(self.state[0])
        if self.cuda:
            torch.cuda.set_rng_state(self.state[1])
        yield
        self.state = self._rng()

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """(memory (B, S, D), the source mask), in the form ``next_logits`` takes."""
        return self.model.encode(src)[:2] if self.ours else self.model.encode(src)

    def next_logits(self, seq: Tensor, memory: Tensor, mask: Tensor) -> Tensor:
        """Logits (B, V) of the token after ``seq`` (B, T)."""
        if self.ours:
            return self.model.next_token_logits(seq, memory, mask)
        return self.model.decode(seq, memory, mask)[:, -1]

    def params(self) -> int:
        """Number of parameters."""
        return sum(p.numel() for p in self.model.parameters())


@torch.inference_mode()
def exact_match(c: Contender, val: tuple[Tensor, Tensor, list[str]], target_tok) -> float:
    """Batched greedy decoding in float32, scored as ``core.evaluate`` does: finished and text equal."""
    src, tgt, texts = val
    c.model.eval()
    memory, mask = c.encode(src)
    seq = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(min(tgt.size(1) + 1, c.model.config.max_len - 1)):
        chosen = c.next_logits(seq, memory, mask).argmax(-1)
        chosen = torch.where(finished, torch.full_like(chosen, c.model.config.pad_id), chosen)
        seq = torch.cat([seq, chosen.unsqueeze(1)], dim=1)
        finished |= chosen == EOS_ID
        if bool(finished.all()):
            break
    hits = sum(int(done and target_tok.decode(row) == text)
               for row, done, text in zip(seq.tolist(), finished.tolist(), texts))
    return hits / len(texts)
