"""Sentence embeddings and similarity from an encoder whose head gives hidden states (MiniLM, BERT, …)."""

from __future__ import annotations

import math
import os

import numpy as np
import torch

from core.inspect.batching import pad_rows
from core.inspect.heads import pool
from core.inspect.subject import as_subject
from core.io.pretrained.load import PretrainedModel

WHAT_IT_IS = {"next_token": "a language model", "text": "an encoder-decoder", "classes": "a classifier",
              "masked_lm": "a masked language model", "token_classes": "a token classifier"}


def sentence_embeddings(model: PretrainedModel | str | os.PathLike, texts: list[str]) -> np.ndarray:
    """float32 (N, D) sentence embeddings of ``texts`` (unit length when the model normalises, as
    all-MiniLM-L6-v2 does).

    Raises:
        ValueError: a model that gives no sentence vectors, no texts, or an empty text.
    """
    subject = as_subject(model)
    if subject.spec.architecture != "encoder" or subject.head != "hidden":
        raise ValueError(f"this model is {WHAT_IT_IS.get(subject.head, 'not a sentence encoder')}; sentence "
                         "embeddings need an encoder that gives hidden states (a BERT-family sentence encoder)")
    if not texts or any(not isinstance(t, str) or not t.strip() for t in texts):
        raise ValueError("Give one or more non-empty texts.")
    tokenizer = subject.source_tokenizer
    encodings = [tokenizer.encode(text) for text in texts]
    batch = pad_rows(subject, [(e.ids, e.tokens, e.offsets) for e in encodings], tokenizer)
    with torch.inference_mode():
        hidden = subject.model(batch.ids, key_mask=batch.real).logits  # (N, T, D)
        return pool(subject, hidden, batch.real).float().cpu().numpy().astype(np.float32)


def sentence_similarity(model: PretrainedModel | str | os.PathLike, first: str, second: str) -> float:
    """Cosine similarity of two sentences' embeddings, in [−1, 1].

    The float64 sums are exactly rounded (:func:`math.fsum` over elementwise products), not BLAS dot
    products, so the value is the same bit for bit on every CPU, whatever kernel numpy's BLAS picks.
    """
    a, b = sentence_embeddings(model, [first, second]).astype(np.float64)
    norms = math.sqrt(math.fsum(a * a)) * math.sqrt(math.fsum(b * b))
    return math.fsum(a * b) / max(norms, 1e-12)
