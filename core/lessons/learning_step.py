"""How it learns: one training step of a trained sequence model, followed on one small batch, with the trainer's
own code (:func:`core.training.step.train_step`).

The batch's pairs are padded to one length; the decoder reads the target shifted right (``<bos>`` + tokens: teacher
forcing) and is scored on the target shifted left (tokens + ``<eos>``), under the look-ahead mask and, for the
shorter rows, the padding mask. The loss is the cross-entropy against label-smoothed targets, which equals the KL
divergence from the smoothed targets to the model's distribution plus the targets' own entropy (a constant the
model cannot change). Then one Adam step at the Noam rate of a chosen step number, on a copy of the model, and the
batch's loss again.

Axis letters: B batch rows, S source length, T target length, V target vocabulary.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.io.checkpoint import Checkpoint
from core.model.masks import padding_mask, subsequent_mask
from core.tasks import Example, get_task
from core.training.data import Batch, Batcher
from core.training.objectives import noam_lr, smoothed_loss, smoothed_targets
from core.training.step import make_optimizer, StepRecipe, train_step


@dataclass(frozen=True)
class LearningStep:
    """One training step on one batch (every array numpy; rows are the batch's pairs).

    Attributes:
        sources, decoder_inputs, targets: per row, the token strings the encoder reads, the decoder reads
            (``<bos>`` + target) and the decoder is scored on (target + ``<eos>``), each padded to the batch's length.
        causal: (T, T) bool look-ahead mask (True: may attend). padded: (B, T) bool, True where a target is padding.
        smoothing: ε. vocab: V. true_share / other_share: what the smoothed target gives the true token (1 − ε) and
            each other token but padding (ε / (V − 2)).
        true_prob_before / true_prob_after: (B, T) the model's probability of each target token, before and after
            the step (eval mode, padding 0).
        cross_entropy, kl, target_entropy: the batch's loss before the step as CE against the smoothed targets, as
            KL(smoothed ‖ model), and the smoothed targets' mean entropy: cross_entropy = kl + target_entropy.
        step, d_model, warmup, lr: the step number, the Noam schedule's width and warm-up, and its rate there.
        step_loss: the loss :func:`train_step` reported (dropout on, as in training, seeded).
        loss_before, loss_after: the batch's loss without dropout, before and after the step.
        largest_changes: the parameters the step moved most, (name, ‖Δθ‖ / ‖θ‖), largest first.
    """

    sources: tuple[tuple[str, ...], ...]
    decoder_inputs: tuple[tuple[str, ...], ...]
    targets: tuple[tuple[str, ...], ...]
    causal: np.ndarray
    padded: np.ndarray
    smoothing: float
    vocab: int
    true_share: float
    other_share: float
    true_prob_before: np.ndarray
    true_prob_after: np.ndarray
    cross_entropy: float
    kl: float
    target_entropy: float
    step: int
    d_model: int
    warmup: int
    lr: float
    step_loss: float
    loss_before: float
    loss_after: float
    largest_changes: tuple[tuple[str, float], ...]


def training_pairs(ckpt: Checkpoint, rows: int = 3) -> list[tuple[str, str]]:
    """The first ``rows`` (source, target) pairs of the training split ``ckpt`` was trained on (same seed and sizes
    as its recorded run)."""
    recipe = ckpt.info.extra.get("train", {})
    task = get_task(ckpt.info.task)
    data = task.generate(recipe.get("seed", 0), tuple(recipe["sizes"]) if "sizes" in recipe else None)
    return [(e.source, e.target) for e in data.train[:rows]]


def _batch(ckpt: Checkpoint, pairs: Sequence[tuple[str, str]]) -> Batch:
    """The pairs as one padded batch, tokenized as the trainer does."""
    task = get_task(ckpt.info.task)
    if task.architecture != "encoder-decoder":
        raise ValueError(f"the training step follows an encoder-decoder; {ckpt.info.task!r} is {task.architecture}")
    tokenizers = {"source": ckpt.source_tokenizer, "target": ckpt.target_tokenizer}
    batcher = Batcher(task, tokenizers, [Example(s, t) for s, t in pairs], ckpt.config)
    return batcher.rows(range(len(pairs)))


def _strings(tokenizer, ids: torch.Tensor) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(tokenizer.token_strings(row.tolist())) for row in ids)


def learning_step(ckpt: Checkpoint, pairs: Sequence[tuple[str, str]], *, step: int = 1, seed: int = 0,
                  smoothing: float | None = None) -> LearningStep:
    """One :func:`train_step` of a copy of ``ckpt``'s model on the batch of ``pairs`` at optimizer step ``step``
    (counted from 1; the Noam rate of that step, the warm-up and ε of the checkpoint's own run unless given), with
    a fresh Adam (the paper's settings). ``ckpt`` itself is not changed.

    Raises:
        ValueError: a model that is not an encoder-decoder, no pairs, or a step below 1.
    """
    if not pairs:
        raise ValueError("the training step needs at least one (source, target) pair")
    if step < 1:
        raise ValueError(f"optimizer steps are counted from 1, got {step}")
    recipe_args = ckpt.info.extra.get("train", {})
    eps = float(recipe_args.get("label_smoothing", 0.1) if smoothing is None else smoothing)
    pad, cfg = ckpt.config.pad_id, ckpt.config
    batch = _batch(ckpt, pairs)
    model = copy.deepcopy(ckpt.model).float()
    loss = _Loss(eps, pad)
    before, loss_before, logits = loss.probs(model, batch)
    ce, kl, entropy = _loss_parts(logits, batch.targets, eps, pad)
    recipe = StepRecipe(d_model=cfg.d_model, warmup=int(recipe_args.get("warmup", 400)),
                        lr=float(recipe_args.get("lr", 1.0)), label_smoothing=eps, pad_id=pad)
    start = {name: p.detach().clone() for name, p in model.named_parameters()}
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # the dropout of the step
        outcome = train_step(model, make_optimizer(model), [batch], step, recipe)
    after, loss_after, _ = loss.probs(model, batch)
    changes = sorted(((name, float((p.detach() - start[name]).norm() / start[name].norm().clamp(min=1e-12)))
                      for name, p in model.named_parameters()), key=lambda item: -item[1])
    n_vocab = logits.size(-1)
    return LearningStep(
        sources=_strings(ckpt.source_tokenizer, batch.src), decoder_inputs=_strings(ckpt.target_tokenizer, batch.tgt),
        targets=_strings(ckpt.target_tokenizer, batch.targets),
        causal=subsequent_mask(batch.tgt.size(1)).numpy(), padded=(~padding_mask(batch.targets, pad)).reshape(batch.targets.shape).numpy(),
        smoothing=eps, vocab=n_vocab, true_share=1.0 - eps, other_share=eps / (n_vocab - 2),
        true_prob_before=before, true_prob_after=after, cross_entropy=ce, kl=kl, target_entropy=entropy,
        step=step, d_model=cfg.d_model, warmup=recipe.warmup, lr=noam_lr(step, cfg.d_model, recipe.warmup, recipe.lr),
        step_loss=outcome.loss, loss_before=loss_before, loss_after=loss_after, largest_changes=tuple(changes[:5]))


class _Loss:
    """The batch's loss and target probabilities in eval mode (no dropout), with ε and padding fixed."""

    def __init__(self, smoothing: float, pad: int) -> None:
        self.smoothing, self.pad = smoothing, pad

    @torch.no_grad()
    def probs(self, model, batch: Batch) -> tuple[np.ndarray, float, torch.Tensor]:
        """(B, T) probability of each target token (0 at padding), the loss, and the logits (B, T, V)."""
        model.eval()
        logits = model(batch.src, batch.tgt).logits.float()  # (B, T, V)
        probs = logits.softmax(-1).gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
        probs = probs.masked_fill(batch.targets == self.pad, 0.0)
        return probs.numpy(), float(smoothed_loss(logits, batch.targets, self.smoothing, self.pad)), logits


def _loss_parts(logits: torch.Tensor, targets: torch.Tensor, eps: float, pad: int) -> tuple[float, float, float]:
    """The loss as CE against the smoothed targets q, as KL(q ‖ p), and q's entropy, each averaged over the real
    targets (CE = KL + H(q))."""
    flat = logits.reshape(-1, logits.size(-1))  # (B·T, V)
    q = smoothed_targets(targets.reshape(-1), flat.size(-1), eps, pad)  # (B·T, V)
    log_p = flat.log_softmax(-1)
    log_q = torch.where(q > 0, q.clamp(min=1e-30).log(), torch.zeros_like(q))
    counted = (targets.reshape(-1) != pad).sum().clamp(min=1)
    ce = -(q * log_p).sum() / counted
    kl = (q * (log_q - log_p)).sum() / counted
    entropy = -(q * log_q).sum() / counted
    return float(ce), float(kl), float(entropy)
