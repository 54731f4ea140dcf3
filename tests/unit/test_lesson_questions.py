"""The Lesson's questions answer from the model's own numbers: each answer equals an independent recomputation
from the trace's q, k, scores and distributions (softmax by hand, not the module's). Core words nothing: a question
carries its numbers and tokens, and the messages of every language fill them in (``lesson-quiz``)."""

from __future__ import annotations

import numpy as np
import pytest

from app import i18n
from app.views.parts.lesson_quiz import why_key
from core import load_checkpoint
from core.lessons import questions, trace_translation
from tests.helpers.paths import SHIPPED


@pytest.fixture(scope="module")
def trace():
    return trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), "i have cats")


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("i", [0, 1, 2])
def test_best_key_is_the_largest_dot_product(trace, i):
    q = questions.best_key(trace, i)
    head = trace.encoder_head
    assert q.tokens and q.options == trace.source_tokens
    assert q.answer == int(np.argmax(head.q[i] @ head.k.T))
    assert q.values["dot"] == pytest.approx(float(head.q[i] @ head.k[q.answer]), abs=1e-5)
    assert f"q{i}·k{q.answer} = {float(head.q[i] @ head.k[q.answer]):.2f}" in why(q)


def test_doubling_beta_sharpens_every_row(trace):
    head = trace.encoder_head
    for i in range(len(trace.source_tokens)):
        q = questions.beta(trace, i)
        before, after = softmax(head.scaled[i]).max(), softmax(2 * head.scaled[i]).max()
        assert after > before and q.options[q.answer] == "sharper"
        assert f"from {before:.2f} to {after:.2f}" in why(q)


def test_the_positional_head_puts_the_most_weight_on_one_offset(trace):
    q = questions.positional_head(trace)
    heads = trace.encoder_heads  # (H, S, S)
    S = heads.shape[1]
    assert heads.shape[0] == trace.n_heads and np.allclose(heads.sum(-1), 1, atol=1e-6)
    np.testing.assert_array_equal(heads[trace.head], trace.encoder_head.weights)
    share = [[np.mean([w[i, i + d] for i in range(S) if 0 <= i + d < S]) for d in (-1, 0, 1)] for w in heads]
    assert q.kind == "heads" and q.options[q.answer] == str(int(np.argmax(np.max(share, axis=1))) + 1)
    assert f"{np.max(share):.2f} of each row" in why(q)


def test_no_positional_question_under_three_tokens():
    short = trace_translation(load_checkpoint(SHIPPED / "translation.safetensors"), "cats")
    assert len(short.source_tokens) < 3 and questions.positional_head(short) is None


def test_a_masked_row_still_sums_to_one_and_its_hidden_cells_are_zero(trace):
    weights = trace.decoder_head.weights  # (T, T)
    for t in range(len(weights)):
        q = questions.row_sum(trace, t)
        assert q.options[q.answer] == "one" and q.values["total"] == pytest.approx(1.0, abs=1e-5)
        assert abs(weights[t].sum() - 1) < 1e-6 and np.all(weights[t, t + 1:] == 0.0)


def test_cross_source_is_the_mean_heads_peak(trace):
    for t in range(len(trace.target_tokens)):
        q = questions.cross_source(trace, t)
        assert q.options[q.answer] == trace.source_tokens[int(np.argmax(trace.cross_heads.mean(axis=0)[t]))]
    assert questions.cross_source(trace, 2).options[questions.cross_source(trace, 2).answer] == "cats"  # gatos


def test_next_token_is_the_argmax_and_offers_five_in_alphabetical_order(trace):
    q = questions.next_token(trace, 0)
    assert list(q.options) == sorted(q.options) and len(q.options) == 5
    assert q.options[q.answer] == trace.target_vocab[int(np.argmax(trace.probabilities[0]))] == "yo"


def test_temperature_two_flattens_the_top_token(trace):
    p = trace.probabilities[0].astype(np.float64)
    tempered = np.sqrt(p) / np.sqrt(p).sum()  # p^(1/T) renormalised, T = 2
    q = questions.temperature(trace, 0)
    best = int(np.argmax(p))
    assert tempered[best] < p[best] - 0.005 and q.options[q.answer] == "less"
    assert f"from {p[best]:.2f} to {tempered[best]:.2f}" in why(q)


@pytest.mark.parametrize("lang", list(i18n.LANGUAGES))
def test_every_question_is_worded_with_its_numbers_in_every_language(trace, lang):
    """Each question's prompt, why and choices exist in every language and show the question's own numbers."""
    asked = [questions.best_key(trace, 1), questions.beta(trace, 1), questions.positional_head(trace),
             questions.row_sum(trace, 1), questions.cross_source(trace, 1), questions.next_token(trace, 1),
             questions.temperature(trace, 1)]
    for q in asked:
        prompt = i18n.text(lang, "lesson-quiz", f"questions.{q.topic}.prompt", **q.values)
        assert prompt and "{" not in prompt, q.topic
        if q.kind == "choices":
            assert len({i18n.text(lang, "lesson-quiz", f"questions.{q.topic}.options.{o}") for o in q.options}) == 3
    row_sum = asked[3]
    assert f"{row_sum.values['total']:.2f}" in why(row_sum, lang)
    temperature = asked[6]
    assert f"{temperature.values['before']:.2f}" in why(temperature, lang)
    assert temperature.values["token"] in why(temperature, lang)  # a token is shown as it is, never translated


def why(q, lang="en"):
    """The question's why in ``lang``, by the message the page chooses."""
    return i18n.text(lang, "lesson-quiz", why_key(q), **q.values)
