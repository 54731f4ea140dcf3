"""The Research page: its grids are core's own numbers (logit lens, sweep, head types, diff), for every kind of
model, and the sweep runs in parts with a progress bar and a stop button."""

from __future__ import annotations

import numpy as np
import pytest

import core
from tests.helpers.apptest_helpers import open_page, panel_matrix, plotly_array, spec
from tests.helpers.paths import SHIPPED

TEXT = "the black cat"


def _grid(at, title: str) -> np.ndarray:
    for element in at.get("plotly_chart"):
        figure = spec(element)
        if title in figure["layout"]["title"]["text"]:
            return plotly_array(figure["data"][0]["z"]).astype(float)
    raise AssertionError(f"no chart titled {title!r}")


@pytest.fixture(scope="module")
def translation():
    return core.load_checkpoint(SHIPPED / "translation.safetensors")


def test_the_logit_lens_grid_is_cores(translation):
    at = open_page("research", ckpt="shipped:translation", query={"research_text": TEXT})
    assert not at.exception and not at.error
    np.testing.assert_allclose(_grid(at, "final choice"), core.logit_lens(translation, TEXT).final_prob, atol=1e-6)
    np.testing.assert_allclose(_grid(at, "Sink share"),
                               core.head_types.sink_share(core.explain(translation, TEXT).attention["decoder"]),
                               atol=1e-6)


def test_the_sweep_runs_in_parts_and_equals_cores(translation):
    at = open_page("research", ckpt="shipped:translation", query={"research_text": TEXT})
    at.button(key="research_sweep").click().run()
    assert not at.exception and not at.error
    want = core.head_sweep(translation, TEXT)
    for kind, title in (("encoder", "Encoder self-attention: change"), ("cross", "Cross-attention")):
        np.testing.assert_allclose(_grid(at, title), want.change[kind], atol=1e-5)
    assert "own output" in at.text[0].value
    at.button(key="research_stop").click().run()  # stop: the grids go, the parts stay cached for Sweep
    assert not [e for e in at.get("plotly_chart") if "change when" in spec(e)["layout"]["title"]["text"]]


@pytest.mark.parametrize("ckpt", ["shipped:lm", "shipped:sentiment"])
def test_every_kind_of_model_opens_with_what_it_has(ckpt):
    at = open_page("research", ckpt=ckpt, query={"research_text": "i love this film"})
    assert not at.exception and not at.error
    lens = [i.value for i in at.info if "encoder-only" in i.value]
    assert bool(lens) == (ckpt == "shipped:sentiment")  # an encoder has no logit lens: the page says why
    assert _grid(at, "Induction score").shape == (2, 4)


def test_the_diff_grid_is_zero_against_a_copy_and_refuses_another_tokenizer(runs):
    import shutil
    shutil.copy(SHIPPED / "translation.safetensors", runs / "twin.safetensors")
    at = open_page("research", ckpt="shipped:translation", query={"research_text": TEXT})
    picker = at.selectbox(key="research_other")
    twin = next(key for key in picker.options if key and "twin" in key)
    picker.set_value(twin).run()
    assert not at.exception
    assert np.allclose(_grid(at, "Jensen"), 0.0, atol=1e-7)
    at.selectbox(key="research_other").set_value("shipped:reverse").run()  # other tokens: no diff, one line why
    assert any("differ in shape" in w.value for w in at.warning)


def test_a_clicked_sweep_cell_shows_the_next_layer_with_that_head_knocked_out(translation):
    at = open_page("research", ckpt="shipped:translation", query={"research_text": TEXT})
    at.button(key="research_sweep").click().run()
    at.session_state["sweep_encoder"] = {"selection": {"points": [{"x": 2, "y": 1}]}}  # layer 1, head 2
    at.run()
    assert not at.exception and not at.error
    mask = {"encoder": core.analysis.knockout_mask(3, 4, [(0, 1)])}
    before, after = core.explain(translation, TEXT), core.explain(translation, TEXT, head_mask=mask)
    intact, knocked = np.asarray(before.attention["encoder"][1]).mean(0), np.asarray(after.attention["encoder"][1]).mean(0)
    np.testing.assert_allclose(panel_matrix(at, "layer 2, intact"), intact, atol=1e-3)  # float16 on the wire
    np.testing.assert_allclose(panel_matrix(at, "layer 2, head knocked out"), knocked, atol=1e-3)
    np.testing.assert_allclose(panel_matrix(at, "difference"), knocked - intact, atol=1e-3)
    assert np.abs(knocked - intact).max() > 3e-3  # the knock-out changes what the next layer reads (beyond float16)
    assert any("own map does not change" in c.value for c in at.caption)


def test_explore_opens_research_on_its_own_input():
    at = open_page("explore", ckpt="shipped:lm", query={"text": "the cat sat"})
    link = next(link for link in at.get("page_link") if link.proto.page == "research")
    assert "researcher" in link.proto.label and "research_text=the+cat+sat" in link.proto.query_string
