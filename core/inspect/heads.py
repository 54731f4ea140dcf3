"""What an encoder predicts, by its head: a class, a sentence embedding, masked-word fill-ins or a label per token.

Each function turns the encoder's logits for a batch into one :class:`Prediction` per row. The head
is a fact of the loaded model (:attr:`core.inspect.subject.Subject.head`), never of its family.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from core.inspect.batching import Batch
from core.inspect.records import Prediction
from core.inspect.subject import Subject

MASK_TOKENS = ("[MASK]", "<mask>")


def pool(subject: Subject, hidden: Tensor, real: Tensor) -> Tensor:
    """The sentence vectors (B, D) of hidden states (B, T, D), as the model's pooling says."""
    if subject.pooling.get("mode", "mean") == "cls":
        vectors = hidden[:, 0]  # (B, D): the [CLS] token
        return F.normalize(vectors, dim=1) if subject.pooling.get("normalize") else vectors
    weights = real.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, D): mean over real tokens
    return F.normalize(pooled, p=2, dim=1)


def _classes(subject: Subject, logits: Tensor, batch: Batch, top_n: int) -> list[Prediction]:
    probs = logits.float().softmax(-1).cpu().numpy().astype(np.float32)  # (B, C)
    names = subject.labels
    out = []
    for row in range(probs.shape[0]):
        order = np.argsort(-probs[row], kind="stable")
        out.append(Prediction("class", names[order[0]], tuple(names[i] for i in order), probs[row][order]))
    return out


def _hidden(subject: Subject, logits: Tensor, batch: Batch, top_n: int) -> list[Prediction]:
    vectors = pool(subject, logits, batch.real).float().cpu().numpy().astype(np.float32)  # (B, D)
    text = f"sentence embedding: {vectors.shape[1]} numbers" + (", unit length" if _unit(subject) else "")
    return [Prediction("embedding", text, vector=vector) for vector in vectors]


def _unit(subject: Subject) -> bool:
    return subject.pooling.get("mode", "mean") != "cls" or bool(subject.pooling.get("normalize"))


def _masked_lm(subject: Subject, logits: Tensor, batch: Batch, top_n: int) -> list[Prediction]:
    """Each ``[MASK]`` filled with its most likely ordinary token (special tokens are never a fill-in; the
    probabilities stay the model's own); the candidates of the first mask ranked."""
    tok = subject.source_tokenizer
    mask_id, specials = tok.first_id(*MASK_TOKENS), sorted(tok.special_ids)
    out = []
    for row, ids in enumerate(batch.ids[:, : max(batch.lengths)].tolist()):
        masked = [t for t in range(batch.lengths[row]) if ids[t] == mask_id]
        if not masked:
            out.append(Prediction("fill", f"no {MASK_TOKENS[0]} in the input: type it where a word should be "
                                          "filled in"))
            continue
        probs = logits[row, masked].float().softmax(-1)  # (M, V)
        probs[:, specials] = 0.0
        best = probs.argmax(-1).tolist()
        filled = list(ids[: batch.lengths[row]])
        for position, token in zip(masked, best):
            filled[position] = token
        top = probs[0].topk(min(top_n, probs.size(-1)))
        out.append(Prediction("fill", tok.decode(filled), tuple(tok.token_strings(top.indices.tolist())),
                              top.values.cpu().numpy().astype(np.float32)))
    return out


def _token_classes(subject: Subject, logits: Tensor, batch: Batch, top_n: int) -> list[Prediction]:
    """A label per token: the text reads ``token/LABEL`` for every token, probabilities of each choice."""
    probs = logits.float().softmax(-1)  # (B, T, C)
    best, chance = probs.argmax(-1), probs.max(-1).values  # (B, T)
    out = []
    for row in range(probs.size(0)):
        length = batch.lengths[row]
        labels = tuple(subject.labels[i] for i in best[row, :length].tolist())
        text = " ".join(f"{token}/{label}" for token, label in zip(batch.tokens[row][:length], labels))
        out.append(Prediction("tokens", text, labels, chance[row, :length].cpu().numpy().astype(np.float32)))
    return out


PREDICTORS: dict[str, Callable[[Subject, Tensor, Batch, int], list[Prediction]]] = {
    "classes": _classes, "hidden": _hidden, "masked_lm": _masked_lm, "token_classes": _token_classes,
}


def encoder_predictions(subject: Subject, logits: Tensor, batch: Batch, top_n: int) -> list[Prediction]:
    """One :class:`Prediction` per row of an encoder's ``logits``, as its head says.

    Raises:
        ValueError: a head no encoder has.
    """
    if subject.head not in PREDICTORS:
        raise ValueError(f"an encoder head must be one of {', '.join(PREDICTORS)}; got {subject.head!r}")
    with torch.inference_mode():
        return PREDICTORS[subject.head](subject, logits, batch, top_n)
