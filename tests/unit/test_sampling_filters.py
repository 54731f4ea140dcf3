"""Top-p (nucleus) sampling in ``core.generate``: the tokens a sampler may draw equal the teaching maths
(``core.lessons.sampling_step``, written independently in numpy), a vanishing nucleus is greedy, draws
never leave the nucleus, and ``explain`` takes ``top_p`` and rejects what no sampler can use."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core import explain, lessons
from core.generate.decode import greedy, sample
from core.generate.filters import restrict
from tests.helpers.tiny import BOS, EOS, tiny_model


@pytest.mark.parametrize(("temperature", "top_k", "top_p"),
                         [(1.0, None, 0.5), (0.7, None, 0.9), (2.0, 5, 0.6), (1.0, 3, None), (1.3, None, 1.0)])
def test_restrict_keeps_the_tokens_the_lesson_keeps(temperature: float, top_k: int | None, top_p: float | None) -> None:
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 40, generator=generator) * 2.0  # (B, V)
    kept = restrict(logits, temperature, top_k, top_p)  # (B, V)
    for row in range(logits.size(0)):
        step = lessons.sampling_step(logits[row].double().softmax(-1).numpy(), temperature, top_k, top_p)
        np.testing.assert_array_equal(torch.isfinite(kept[row]).numpy(), step.kept)
        np.testing.assert_allclose(kept[row].softmax(-1).numpy(), step.final, atol=1e-6)


def test_a_vanishing_nucleus_is_greedy() -> None:
    model = tiny_model("decoder", seed=7)
    prefix = torch.full((3, 1), BOS)
    drawn = sample(model, None, prefix, eos_id=EOS, max_new_tokens=15, generator=torch.Generator().manual_seed(0),
                   temperature=2.0, top_p=1e-6)
    assert drawn.ids.tolist() == greedy(model, None, prefix, eos_id=EOS, max_new_tokens=15).ids.tolist()


def test_draws_stay_inside_the_nucleus() -> None:
    model = tiny_model("decoder", seed=8)
    with torch.no_grad():
        model.lm_head.weight.mul_(0.05)  # a flat next-token distribution: a nucleus of several tokens
        logits = model(tgt=torch.tensor([[BOS, 5, 6]])).logits[0, -1].double()  # (V,)
    logits[[model.config.pad_id, BOS]] = float("-inf")  # never generated, as decoding rules them out
    nucleus = set(np.flatnonzero(lessons.sampling_step(logits.softmax(-1).numpy(), top_p=0.3).kept).tolist())
    prefix = torch.tensor([[BOS, 5, 6]]).expand(400, -1)
    gen = sample(model, None, prefix, eos_id=EOS, max_new_tokens=1, generator=torch.Generator().manual_seed(1),
                 top_p=0.3)
    picked = set(gen.ids[:, -1].tolist())
    assert picked <= nucleus and len(picked) > 1


def test_explain_samples_with_top_p_and_rejects_a_bad_one(checkpoints) -> None:
    model = checkpoints["decoder"]
    narrow = explain(model, "abc", continuation=6, decoding="sample", top_p=1e-6, sample_temperature=3.0, seed=4)
    assert narrow.prediction.text == explain(model, "abc", continuation=6).prediction.text
    assert narrow.options["top_p"] == 1e-6
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="top_p"):
            explain(model, "abc", continuation=3, decoding="sample", top_p=bad)
