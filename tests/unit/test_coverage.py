"""Coverage: the cross-attention each source word received, and the "not translated?" flag."""

from __future__ import annotations

import numpy as np
import pytest

from core import COVERAGE_THRESHOLD, explain, load_checkpoint, untranslated, word_coverage
from core.inspect import coverage_check
from core.inspect.coverage import token_coverage
from core.inspect.records import Explanation, Prediction
from tests.helpers.paths import SHIPPED

TRANSLATION = SHIPPED / "translation.safetensors"


def _explanation(cross: np.ndarray, text: str, source: tuple[str, ...], offsets, target: tuple[str, ...]):
    return Explanation(text=text, task="translation", architecture="encoder-decoder", source_tokens=source,
                       source_offsets=offsets, target_tokens=target, target_offsets=((0, 0),) * len(target),
                       generated_tokens=(), prediction=Prediction("text", ""), attention={"cross": cross})


def _rows(rng: np.random.Generator, layers: int, heads: int, rows: int, keys: int) -> np.ndarray:
    raw = rng.random((layers, heads, rows, keys)).astype(np.float32)
    return raw / raw.sum(-1, keepdims=True)  # (L, H, Tq, Tk), every row a distribution


def test_token_coverage_is_the_last_layers_head_mean_summed_over_the_output_rows():
    rng = np.random.default_rng(0)
    text = "maria sees cats ."
    source = ("m", "a", "r", "i", "a", "sees", "cats", ".", "<pad>")
    offsets = ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (6, 10), (11, 15), (16, 17), (0, 0))
    target = ("<bos>", "maria", "ve", "gatos", "<eos>", "<pad>")  # a batch's padding past the end
    cross = _rows(rng, 2, 3, len(target), len(source))
    exp = _explanation(cross, text, source, offsets, target)
    expected = cross[1].mean(0)[:4].sum(0)  # rows <bos> … gatos: the four that produced output
    expected[-1] = 0.0  # the padding column
    np.testing.assert_allclose(token_coverage(exp), expected, rtol=1e-6)
    assert token_coverage(exp)[:-1].sum() == pytest.approx(4 - cross[1].mean(0)[:4, -1].sum(), rel=1e-5)
    words = word_coverage(exp)
    assert [w.word for w in words] == ["maria", "sees", "cats"]  # letters joined, punctuation no word
    assert words[0].tokens == (0, 1, 2, 3, 4)
    assert words[0].coverage == pytest.approx(float(expected[:5].mean()), rel=1e-6)
    assert words[2].coverage == pytest.approx(float(expected[6]), rel=1e-6)


def test_a_word_under_the_threshold_is_flagged_and_only_it():
    text = "i see it"
    source, offsets = ("i", "see", "it"), ((0, 1), (2, 5), (6, 8))
    target = ("<bos>", "yo", "veo")
    cross = np.zeros((1, 2, 3, 3), np.float32)
    cross[0, :, 0] = (0.9, 0.05, 0.05)  # each row a distribution; "it" receives 0.05 + 0.05 + 0.1 = 0.2
    cross[0, :, 1] = (0.1, 0.8, 0.1)
    cross[0, :, 2] = (0.0, 0.9, 0.1)
    exp = _explanation(cross, text, source, offsets, target)
    np.testing.assert_allclose(token_coverage(exp), (1.0, 1.75, 0.25), rtol=1e-6)
    assert [w.word for w in untranslated(exp, threshold=0.26)] == ["it"]
    assert untranslated(exp, threshold=0.25) == ()  # strictly under the threshold


def test_the_flag_fires_on_the_dropped_phrase_of_the_shipped_model():
    exp = explain(TRANSLATION, "Yesterday I went to the market with my mother.")
    assert exp.prediction.text == "ayer yo fui al mercado ."  # "with my mother" silently dropped
    flagged = [w.word for w in untranslated(exp)]
    assert flagged == ["with", "my", "mother"]
    assert all(w.coverage >= 0.4 for w in word_coverage(exp) if w.word not in flagged)


@pytest.mark.parametrize("text", ["the big dog sees a small cat", "Yesterday I went to the market.",
                                  "the animal didn't cross the street"])
def test_the_flag_stays_quiet_on_a_fully_translated_sentence(text):
    exp = explain(TRANSLATION, text)
    assert untranslated(exp) == (), [(w.word, w.coverage) for w in word_coverage(exp)]


def test_score_counts_flagged_words_against_the_missing_ones():
    labelled = coverage_check.Labelled(np.array([0.05, 0.1, 0.3, 0.2, 1.0, 0.9]),
                                       np.array([True, True, True, False, False, False]), sentences=2, left_out=1)
    result = coverage_check.score(labelled, 0.25)  # flags 0.05, 0.1, 0.2: two of the three missing
    assert (result.precision, result.recall) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert (result.words, result.missing_words, result.sentences, result.left_out) == (6, 3, 2, 1)
    assert coverage_check.choose_threshold(labelled) == 0.31  # 0.31 flags all three missing and 0.2: F1 6/7


def test_dropped_phrase_cases_mark_the_phrase_they_added():
    cases = coverage_check.cases(seed=5, n=12)
    assert len(cases) == 24
    for full, dropped in zip(cases[::2], cases[1::2]):
        assert full.missing_span == (0, 0) and dropped.expected == full.expected
        low, high = dropped.missing_span
        phrase = dropped.source[low:high]
        assert phrase.split()[0] in coverage_check.DROPPED_PREPOSITIONS
        assert dropped.source[:low - 1] + dropped.source[high:] == full.source  # the space and the phrase


@pytest.mark.slow
def test_the_flags_precision_and_recall_on_held_out_sentences():
    """Measured by ``python -m core coverage assets/checkpoints/translation.safetensors`` (seed 2, 150 sentences)."""
    result = coverage_check.measure(load_checkpoint(TRANSLATION), COVERAGE_THRESHOLD, seed=2, n=150)
    assert (result.words, result.missing_words, result.sentences, result.left_out) == (2093, 265, 224, 76)
    assert result.precision == pytest.approx(233 / 294)  # 79.3 %: 294 words flagged, 233 of them missing
    assert result.recall == pytest.approx(233 / 265)  # 87.9 %
