"""How it learns (core.lessons.learning_step): the numbers are one real train_step of the shipped translation model
— its loss, its Noam rate, the loss after it — the shift and the masks are teacher forcing's, and the loss splits
as the notes write it, CE = KL(q ‖ p) + H(q)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

import core
from core.lessons.learning_step import learning_step
from core.training.data import Batcher
from core.training.objectives import smoothed_loss
from core.training.step import make_optimizer, StepRecipe, train_step
from core.tasks import Example, get_task
from tests.helpers.paths import SHIPPED

PAIRS = [("i have cats", "yo tengo gatos"), ("the animal didn't cross the street", "el animal no cruzó la calle")]


@pytest.fixture(scope="module")
def ckpt():
    return core.load_checkpoint(SHIPPED / "translation.safetensors")


def test_the_step_is_the_trainers_own_on_a_copy(ckpt):
    before = {k: v.clone() for k, v in ckpt.model.state_dict().items()}
    got = learning_step(ckpt, PAIRS, step=8001, seed=5)
    for k, v in ckpt.model.state_dict().items():  # the shipped model is not changed
        assert torch.equal(v, before[k])
    # the same step by hand: the batch the trainer builds, a fresh Adam, the same seed for the dropout
    task, cfg = get_task("translation"), ckpt.config
    batch = Batcher(task, {"source": ckpt.source_tokenizer, "target": ckpt.target_tokenizer},
                    [Example(s, t) for s, t in PAIRS], cfg).rows([0, 1])
    model = copy.deepcopy(ckpt.model).float()
    recipe = StepRecipe(d_model=cfg.d_model, warmup=400, lr=1.0, label_smoothing=0.1, pad_id=cfg.pad_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        outcome = train_step(model, make_optimizer(model), [batch], 8001, recipe)
    assert got.step_loss == pytest.approx(outcome.loss, abs=1e-6)
    assert got.lr == pytest.approx(128 ** -0.5 * min(8001 ** -0.5, 8001 * 400 ** -1.5), rel=1e-12)
    model.eval()
    with torch.no_grad():
        after = float(smoothed_loss(model(batch.src, batch.tgt).logits, batch.targets, 0.1, cfg.pad_id))
    assert got.loss_after == pytest.approx(after, abs=1e-6)
    assert got.loss_after < got.loss_before  # one step on the batch lowers its loss here


def test_teacher_forcing_shifts_the_target_and_masks_the_future_and_the_padding(ckpt):
    got = learning_step(ckpt, PAIRS)
    short, long = got.decoder_inputs[0], got.decoder_inputs[1]
    assert short[0] == "<bos>" and got.targets[0][:4] == ("yo", "tengo", "gatos", "<eos>")
    assert got.decoder_inputs[1][1:] == got.targets[1][:-1]  # the input is the target shifted right
    assert len(short) == len(long) == len(got.targets[0])  # padded to one length
    T = len(long)
    np.testing.assert_array_equal(got.causal, np.tril(np.ones((T, T), dtype=bool)))
    np.testing.assert_array_equal(got.padded[0], [t == "<pad>" for t in got.targets[0]])
    assert not got.padded[1].any()
    assert (got.true_prob_before[got.padded] == 0).all() and (got.true_prob_before[~got.padded] > 0).all()


def test_the_loss_is_cross_entropy_against_smoothed_targets_and_kl_plus_their_entropy(ckpt):
    got = learning_step(ckpt, PAIRS)
    assert got.cross_entropy == pytest.approx(got.kl + got.target_entropy, abs=1e-5)
    assert got.cross_entropy == pytest.approx(got.loss_before, abs=1e-5)
    V, eps = got.vocab, got.smoothing
    assert got.true_share + (V - 2) * got.other_share == pytest.approx(1.0)  # padding gets nothing
    h = -(0.9 * math.log(0.9) + (V - 2) * (0.1 / (V - 2)) * math.log(0.1 / (V - 2)))
    assert got.target_entropy == pytest.approx(h, abs=1e-4)  # every counted row has the same smoothed entropy
    assert eps == 0.1 and got.kl >= 0


def test_what_the_step_cannot_follow_is_refused(ckpt):
    with pytest.raises(ValueError, match="counted from 1"):
        learning_step(ckpt, PAIRS, step=0)
    with pytest.raises(ValueError, match="at least one"):
        learning_step(ckpt, [])
    with pytest.raises(ValueError, match="encoder-decoder"):
        learning_step(core.load_checkpoint(SHIPPED / "sentiment.safetensors"), [("i love it", "positive")])
