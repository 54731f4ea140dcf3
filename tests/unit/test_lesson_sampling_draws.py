"""The Lesson's sampler draws: a fixed seed reproduces its tokens, 100 draws follow the sampler's distribution within
a stated tolerance, nothing is drawn outside top-k / top-p, and a draw is the first token core.generate.sample
writes with the same seed; greedy, beam and sampling are core's own decoders."""

from __future__ import annotations

import numpy as np
import pytest

from core import beam_search, greedy, load_checkpoint
from core.lessons import compare_decoding, draw_tokens, sampling_step, trace_translation
from core.text.tokenizer import BOS_ID, EOS_ID
from tests.helpers.paths import SHIPPED

TEXT = "i have cats"


@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(SHIPPED / "translation.safetensors")


@pytest.fixture(scope="module")
def trace(shipped):
    return trace_translation(shipped, TEXT)


def test_a_fixed_seed_reproduces_its_tokens_and_another_seed_draws_others(trace):
    p = trace.probabilities[0]
    first, again = draw_tokens(p, 100, 7, 2.0), draw_tokens(p, 100, 7, 2.0)
    np.testing.assert_array_equal(first.ids, again.ids)
    assert not np.array_equal(first.ids, draw_tokens(p, 100, 8, 2.0).ids)
    assert first.counts.sum() == 100 and first.seed == 7


def test_100_draws_follow_the_distribution_within_four_binomial_sigmas():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    for seed in range(5):
        share = draw_tokens(p, 100, seed).frequencies
        tolerance = 4 * np.sqrt(p * (1 - p) / 100)  # 4σ of a share of 100 draws: 0.20 at p = 0.5
        assert np.all(np.abs(share - p) <= tolerance), (seed, share)
    many = draw_tokens(p, 40_000, 0).frequencies
    assert np.abs(many - p).max() < 0.01  # 4σ at 40,000 draws is 0.01


def test_the_draws_follow_the_reshaped_distribution_and_never_leave_it(trace):
    p = trace.probabilities[1]
    step = sampling_step(p, 3.0, 5, None)
    draws = draw_tokens(p, 20_000, 0, 3.0, 5, None)
    assert set(np.flatnonzero(draws.counts)) <= set(np.flatnonzero(step.kept)) and step.kept.sum() == 5
    assert np.abs(draws.frequencies - step.final).max() < 0.015
    nucleus = sampling_step(p, 1.0, None, 0.5)
    assert set(np.flatnonzero(draw_tokens(p, 500, 1, 1.0, None, 0.5).counts)) <= set(np.flatnonzero(nucleus.kept))


def test_a_draw_is_the_first_token_core_sample_writes_with_that_seed(shipped, trace):
    for seed in range(3):
        both = compare_decoding(shipped, TEXT, seed=seed, temperature=2.0)
        drawn = trace.target_vocab[int(draw_tokens(trace.probabilities[0], 1, seed, 2.0).ids[0])]
        assert both.sampled.tokens[0] == drawn, seed
    assert compare_decoding(shipped, TEXT, seed=4, temperature=2.0) == compare_decoding(shipped, TEXT, seed=4,
                                                                                         temperature=2.0)


def test_greedy_and_beam_are_cores_decoders(shipped):
    import torch
    both = compare_decoding(shipped, TEXT)
    src = torch.tensor([shipped.source_tokenizer.encode(TEXT).ids])
    prefix = torch.tensor([[BOS_ID]])
    for mine, theirs in ((both.greedy, greedy(shipped.model, src, prefix, eos_id=EOS_ID, max_new_tokens=64)),
                         (both.beam, beam_search(shipped.model, src, prefix, eos_id=EOS_ID, max_new_tokens=64))):
        assert mine.tokens == tuple(shipped.target_tokenizer.token_strings(theirs.ids[0, 1:].tolist()))
        assert mine.log_prob == pytest.approx(float(theirs.scores[0]), abs=1e-5)
    assert both.greedy.text == "yo tengo gatos" and both.greedy.tokens[-1] == "<eos>"
    assert both.beam.log_prob >= both.greedy.log_prob - 1e-5


def test_bad_settings_get_one_clear_line(trace):
    with pytest.raises(ValueError, match="at least 1"):
        draw_tokens(trace.probabilities[0], 0, 0)
    with pytest.raises(ValueError, match="temperature"):
        draw_tokens(trace.probabilities[0], 10, 0, 0.0)
