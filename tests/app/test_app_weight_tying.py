"""The Architecture page's weight tying: the sidebar's translation model does not tie (its saving said), SmolLM2
does (measured: logits = h·Eᵀ to 0), an encoder says it has nothing to tie — each number core's."""

from __future__ import annotations

import pytest

from core import lessons, pretrained_models
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import SHIPPED


def _text(at) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)


def test_an_untied_model_says_what_tying_would_save_and_shows_one_that_ties():
    at = open_page("architecture", ckpt="shipped:translation")
    assert not at.exception and not at.error
    got = lessons.weight_tying(SHIPPED / "translation.safetensors", "i have cats")
    text = _text(at)
    assert "does not tie them" in text and f"{got.saved:,} parameters" in text
    if any(e.name.startswith("SmolLM2") for e in pretrained_models()):
        assert "SmolLM2-135M-Instruct ties them" in text and "max |logits − h·Eᵀ| = 0.0e+00" in text
    elif "ATTNSCOPE_REQUIRE_PRETRAINED" in __import__("os").environ:
        pytest.fail("SmolLM2 is not installed")


def test_an_encoder_has_nothing_to_tie():
    at = open_page("architecture", ckpt="shipped:sentiment")
    assert not at.exception and "encoder: it has no output layer" in _text(at)
