"""The Explore page under AppTest: every control, checked against core.explain on the same input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app import resources
from app.charts.base import visible
from app.views.parts.explore import experiments, panels, views
from core import (explain, get_task, input_vocabulary, load_checkpoint, ModelConfig, save_checkpoint, Tokenizer,
                  Transformer)
from tests.helpers.apptest_helpers import (APP, canvas_weights, canvases, charts, frames, open_page, outputs,
                                          panel_matrix, spec, titles)
from tests.helpers.paths import REVERSE
from tests.helpers.tiny import TINY_MODEL

TOKENS_OPEN = "tokens_open"  # the key of Explore's "Tokens and model" expander (app/views/explore.py)
SUMMARY_NUMBERS_OPEN = "summary_numbers_open"  # the summary view's statistics table (views.summary_view)


def opened(at: AppTest, *keys: str) -> AppTest:
    """The page with the expanders of ``keys`` opened (closed, they build nothing)."""
    for key in keys:
        at.session_state[key] = True
    at.run()
    assert not at.exception
    return at

TWO = {**TINY_MODEL, "n_heads": 2}  # the tiny model sizes, with two heads per layer

pytestmark = pytest.mark.skipif(not REVERSE.exists(), reason="the shipped reverse checkpoint is missing")


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs folder with a tiny random classifier ("run:tiny-classifier") and language model ("run:tiny-lm")."""
    folder = tmp_path_factory.mktemp("runs")
    sentiment, lm = get_task("sentiment"), get_task("lm")
    words = Tokenizer.train("word", list(sentiment.examples))
    chars = Tokenizer.train("char", list(lm.examples))
    torch.manual_seed(0)
    classifier = Transformer(ModelConfig(architecture="encoder", src_vocab_size=words.vocab_size, n_classes=2,
                                         **TWO)).eval()
    save_checkpoint(folder / "tiny-classifier.safetensors", classifier, {"source": words}, task="sentiment",
                    extra={"labels": list(sentiment.labels)})
    language_model = Transformer(ModelConfig(architecture="decoder", tgt_vocab_size=chars.vocab_size, **TWO)).eval()
    save_checkpoint(folder / "tiny-lm.safetensors", language_model, {"target": chars}, task="lm")
    return folder


@pytest.fixture
def calls(tiny_runs: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts model runs behind the caches (which start empty), with ATTNSCOPE_RUNS pointing at ``tiny_runs``."""
    monkeypatch.setenv("ATTNSCOPE_RUNS", str(tiny_runs))
    counter = {"explain": 0, "batch": 0}
    real_explain, real_batch = resources.explain, resources.explain_batch

    def spy_explain(*args, **kwargs):
        counter["explain"] += 1
        return real_explain(*args, **kwargs)

    def spy_batch(*args, **kwargs):
        counter["batch"] += 1
        return real_batch(*args, **kwargs)

    monkeypatch.setattr(resources, "explain", spy_explain)
    monkeypatch.setattr(resources, "explain_batch", spy_batch)
    resources.entries.clear()
    resources.explanation.clear()
    resources.batch_explanation.clear()
    yield counter
    resources.entries.clear()  # the next test file must not see this runs folder


def start(ckpt: str = "shipped:reverse", **query: str) -> AppTest:
    return open_page("explore", ckpt=ckpt, query=query)


def set_text(at: AppTest, text: str) -> AppTest:
    at.text_area(key="text").input(text).run()
    assert not at.exception
    return at


# ----------------------------------------------------------------------------- reading the page
def codes(at: AppTest) -> list[str]:
    """The model outputs on the page (each in its box), in order."""
    return outputs(at)


def head_view_weights(at: AppTest) -> np.ndarray:
    """The pinned head's weights as the canvas carries them (float16), flattened."""
    header, _ = canvases(at)[0]
    return canvas_weights(at, header["pinned"]["layer"], header["pinned"]["head"]).ravel()


def panel_frames(at: AppTest, which: int = -1) -> list[pd.DataFrame]:
    """The panels of the page's ``which``-th panels canvas, each as rows: row_index, col_index, row, col and its
    value (``weight``, or ``change`` / ``score`` for a signed panel)."""
    header, arrays = [c for c in canvases(at) if c[0]["mode"] == "panels"][which]
    frames_ = []
    for i, panel in enumerate(header["panels"]):
        values = arrays[f"value{i}"].astype(np.float32)  # (Tq, Tk)
        q, k = np.indices(values.shape)
        frames_.append(pd.DataFrame({"row_index": q.ravel(), "col_index": k.ravel(),
                                     "row": np.asarray(panel["rows"], dtype=object)[q.ravel()],
                                     "col": np.asarray(panel["cols"], dtype=object)[k.ravel()],
                                     panel["scale"]: values.ravel()}))
    return frames_


def panel_titles(at: AppTest, which: int = -1) -> list[str]:
    header, _ = [c for c in canvases(at) if c[0]["mode"] == "panels"][which]
    return [p["title"] for p in header["panels"]]


def pin(at: AppTest, **chosen: int) -> AppTest:
    """What the canvas's Pin does to the session (layer / head counted from 1), then a run."""
    for key, value in chosen.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    return at


def token_row(at: AppTest) -> list[str]:
    """The tokens table's one row (its expander opened first: closed, it builds nothing)."""
    if not at.session_state[TOKENS_OPEN] if TOKENS_OPEN in at.session_state else True:
        at.session_state[TOKENS_OPEN] = True
        at.run()
    return list(at.table[0].value.iloc[0])


def largest_change(at: AppTest) -> float:
    (metric,) = [m for m in at.metric if m.label.startswith("Largest change")]
    return float(metric.value)


def change_chart(at: AppTest):
    """The before | after | difference canvas of an intervention, its panels as rows."""
    (index,) = [i for i, c in enumerate(c for c in canvases(at) if c[0]["mode"] == "panels")
                if c[0]["panels"][-1]["title"].startswith("Difference")]
    before, after, diff = panel_frames(at, index)
    return before, after, diff


# ----------------------------------------------------------------------------- basics
def test_page_loads_on_the_sidebar_default(calls):
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception and not at.error
    assert at.title[0].value == "Explore attention" and canvases(at)
    assert at.session_state["ckpt"] in {e.key for e in resources.entries()[0]}


def test_page_loads_on_the_reverse_checkpoint(calls):
    at = start()
    assert at.title[0].value == "Explore attention"
    text = at.text_area(key="text").value
    assert text == get_task("reverse").examples[0]
    assert codes(at)[0] == explain(REVERSE, text).prediction.text
    entry = resources.entry("shipped:reverse")
    assert get_task("reverse").description in at.markdown[0].value
    assert any((entry.metric or "no test metric recorded") in c.value for c in at.caption)
    assert not at.table  # the tokens wait in a closed expander
    opened(at, TOKENS_OPEN)
    assert at.table and calls["explain"] == 1  # opening it ran nothing


def test_typing_text_updates_tokens_and_prediction(calls):
    at = set_text(start(), "headache")
    expected = explain(REVERSE, "headache")
    assert token_row(at) == list(expected.source_tokens)
    assert codes(at)[0] == expected.prediction.text
    assert np.allclose(head_view_weights(at), expected.attention["encoder"][0, 0].ravel(), atol=1e-3)


def test_example_pills_fill_the_text_area(calls):
    at = start()
    at.pills(key="example").set_value("aabbcc").run()
    assert at.text_area(key="text").value == "aabbcc"
    assert at.pills(key="example").value is None
    assert codes(at)[0] == explain(REVERSE, "aabbcc").prediction.text


@pytest.mark.parametrize("empty", ["", "   ", "\n\t "])
def test_empty_text_shows_a_hint_and_does_not_run_the_model(calls, empty):
    at = start()
    before = calls["explain"]
    set_text(at, empty)
    assert any("Type some text" in i.value for i in at.info)
    assert calls["explain"] == before
    assert not charts(at)


def test_no_checkpoint_at_all_shows_a_hint(calls, monkeypatch, tmp_path):
    monkeypatch.setattr("app.services.catalog.SHIPPED_DIR", tmp_path / "none")
    monkeypatch.setattr("app.services.catalog.pretrained_models", lambda: [])  # nor any pretrained model installed
    monkeypatch.setenv("ATTNSCOPE_RUNS", str(tmp_path / "empty"))
    resources.entries.clear()
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception
    assert any("Pick a checkpoint" in i.value for i in at.info)
    resources.entries.clear()


# ----------------------------------------------------------------------------- views
def test_every_view_renders(calls):
    at = start()
    expected = explain(REVERSE, at.text_area(key="text").value).attention["encoder"]  # (L, H, Tq, Tk)
    (header, arrays), = canvases(at)  # the canvas: every head of the kind, once
    assert header["mode"] == "maps" and header["sent"] == list(range(expected.shape[0]))
    assert np.allclose(arrays["value"].astype(np.float32), expected, atol=1e-3)  # float16 for hover
    assert np.array_equal(arrays["colour"], np.rint(np.clip(expected, 0, 1) * 255).astype(np.uint8))
    assert arrays["thumbs"].shape[:2] == expected.shape[:2]  # the model view's thumbnails, every layer × head
    assert not charts(at)  # no Plotly map: the canvas draws them
    at.segmented_control(key="view").set_value("summary").run()
    assert len(charts(at)) == 1  # the statistics (Plotly); the mean over heads beside rollout on the canvas
    assert [h["mode"] for h, _ in canvases(at)].count("panels") == 1
    assert not at.dataframe  # the statistics as numbers are built only once their expander is opened
    at.session_state[SUMMARY_NUMBERS_OPEN] = True
    at.run()
    assert len(at.dataframe[-1].value) == np.prod(expected.shape[:2])  # one row per head
    at.segmented_control(key="view").set_value("generation").run()
    assert len(charts(at)) == 2  # cross-attention and decoder rows
    assert at.slider(key="step").max == len(explain(REVERSE, at.text_area(key="text").value).generated_tokens)
    assert not at.exception


def test_summary_numbers_match_core_analysis(calls):
    from core import analysis
    from core.inspect.analysis import rollout

    at = start(view="summary")
    expected = explain(REVERSE, at.text_area(key="text").value).attention["encoder"]
    statistics, = charts(at)
    (pair, _), = [c for c in canvases(at) if c[0]["mode"] == "panels"]
    assert [p["title"] for p in pair["panels"]] == ["Layer 1: mean over heads", "Attention rollout through every layer"]
    assert {p["scale"] for p in pair["panels"]} == {"weight"}  # one 0–1 scale for both
    mean, rolled = panel_matrix(at, "Layer 1: mean"), panel_matrix(at, "Attention rollout")
    assert np.allclose(mean, analysis.mean_over_heads(expected)[0], atol=1e-3)  # float16 on the wire
    assert np.allclose(rolled, rollout(expected), atol=1e-3)
    by_head = pd.DataFrame(analysis.head_statistics(expected))  # one row per (layer, head), layer-major
    drawn = dict(zip(titles(statistics), frames(statistics)))  # each statistic: a layer × head heatmap
    assert list(drawn) == ["entropy (bits)", "mean distance |i − j|", "largest weight (0–1 scale)"]
    for (title, frame), column in zip(drawn.items(), ["entropy_bits", "mean_distance", "max_weight"]):
        assert list(frame["row"]) == [str(r["layer"] + 1) for r in by_head.to_dict("records")]  # layer 1 first
        assert list(frame["col"]) == [str(r["head"] + 1) for r in by_head.to_dict("records")]
        np.testing.assert_allclose(frame[title], by_head[column], atol=1e-6)
    assert spec(statistics)["data"][2]["zmin"] == 0 and spec(statistics)["data"][2]["zmax"] == 1
    at.session_state[SUMMARY_NUMBERS_OPEN] = True
    table = at.run().dataframe[-1].value
    stats = pd.DataFrame(analysis.head_statistics(expected))
    assert np.allclose(table["entropy (bits)"], stats["entropy_bits"].round(3), atol=1e-3)
    at.segmented_control(key="kind").set_value("cross").run()
    assert len(charts(at)) == 1 and [len(h["panels"]) for h, _ in canvases(at) if h["mode"] == "panels"] == [1]  # the mean: no rollout
    assert any("self-attention only" in i.value for i in at.info)


def test_a_pinned_head_opens_the_canvas_on_it(calls):
    at = start()
    text = at.text_area(key="text").value
    pin(at, layer=2, head=4, map="model")  # layers and heads count from 1 on screen
    (header, _), = canvases(at)
    assert header["pinned"] == {"layer": 1, "head": 3, "view": "model"} and header["kind"] == "encoder"
    expected = explain(REVERSE, text).attention["encoder"][1, 3]
    assert np.allclose(head_view_weights(at), expected.ravel(), atol=1e-3)
    assert at.query_params["layer"] == "2" and at.query_params["head"] == "4" and at.query_params["map"] == "model"


def test_an_older_link_naming_the_lines_view_opens_the_canvas_on_it(calls):
    at = start(view="lines")
    (header, _), = canvases(at)
    assert header["pinned"]["view"] == "lines" and at.segmented_control(key="view").value == "head"


def test_generation_steps_through_the_output(calls):
    at = start(view="generation")
    expected = explain(REVERSE, at.text_area(key="text").value)
    at.slider(key="step").set_value(3).run()  # the third step (steps count from 1)
    cross, decoder = charts(at)
    assert np.allclose(frames(cross)[0]["weight"], expected.attention["cross"][0, 0, 2], atol=1e-6)
    bars = frames(decoder)[0]  # the decoder's tokens up to this step, no future word
    assert list(bars["key"]) == [f"{i}:{visible(t)}" for i, t in enumerate(expected.target_tokens[:3])]
    np.testing.assert_allclose(bars["weight"], expected.attention["decoder"][0, 0, 2, :3], atol=1e-6)
    assert abs(bars["weight"].sum() - 1.0) < 1e-6  # the masked future held none of the row's weight
    at.slider(key="step").set_value(1).run()
    assert list(frames(charts(at)[1])[0]["key"]) == [f"0:{visible(expected.target_tokens[0])}"]  # the decoder row
    assert spec(charts(at)[1])["encoding"]["x"]["axis"]["labelOverlap"] is False  # every token labelled
    at.slider(key="step").set_value(3).run()
    assert any(expected.generated_tokens[2] in t.value for t in at.text)
    at.toggle(key="gen_mean").set_value(True).run()
    cross, _ = charts(at)
    assert np.allclose(frames(cross)[0]["weight"], expected.attention["cross"][0, :, 2].mean(0), atol=1e-6)


def test_a_pin_and_a_kind_slice_without_rerunning_the_model(calls):
    at = start(view="head")
    text = at.text_area(key="text").value
    runs = calls["explain"]
    first = head_view_weights(at)
    pin(at, layer=2, head=3)
    at.segmented_control(key="kind").set_value("cross").run()
    assert calls["explain"] == runs
    expected = explain(REVERSE, text).attention["cross"][1, 2]
    assert np.allclose(head_view_weights(at), expected.ravel(), atol=1e-3)
    assert not np.allclose(first[:4], head_view_weights(at)[:4])


def test_scores_are_shown_beside_the_weights(calls):
    at = start(view="head")
    at.toggle(key="show_scores").set_value(True).run()
    weights, scores = panel_frames(at)
    expected = explain(REVERSE, at.text_area(key="text").value, return_scores=True)
    assert np.allclose(scores["score"], expected.scores["encoder"][0, 0].ravel(), atol=2e-3 * np.abs(
        expected.scores["encoder"][0, 0]).max())
    assert np.allclose(weights["weight"], expected.attention["encoder"][0, 0].ravel(), atol=1e-3)


def test_decoding_choice_and_beam_size(calls):
    at = start()
    at.segmented_control(key="decoding").set_value("beam").run()
    at.slider(key="beam_size").set_value(3).run()
    text = at.text_area(key="text").value
    assert codes(at)[0] == explain(REVERSE, text, decoding="beam", beam_size=3).prediction.text


def test_a_pin_runs_no_model_and_builds_each_payload_once(calls, monkeypatch):
    """A pinned head reopens the canvas from the cached explanation, its payload built once per pinned head. (In
    the browser a layer or head switch sends nothing at all: tests/browser/test_browser_canvas.py.)"""
    at = start(view="head")
    built = {"payloads": 0}
    real = views.canvas.maps_payload

    def counted(*args, **kwargs):
        built["payloads"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(views.canvas, "maps_payload", counted)
    runs = calls["explain"]
    pin(at, layer=2)
    assert calls["explain"] == runs and canvases(at)[0][0]["pinned"]["layer"] == 1 and built["payloads"] == 1
    pin(at, layer=1)  # back: its payload comes from the cache
    pin(at, layer=2)
    assert built["payloads"] == 1 and calls["explain"] == runs  # both payloads were built before


def test_an_open_intervention_follows_the_chosen_head(calls):
    at = opened(start(), experiments.INTERVENTIONS_OPEN)
    text = at.text_area(key="text").value
    at.toggle(key="hard").set_value(True).run()
    runs = calls["explain"]
    pin(at, head=2)  # the fragments that draw the chosen head rerun together
    _, after, _ = change_chart(at)
    expected = explain(REVERSE, text, hard=True).attention["encoder"][0, 1]
    assert np.allclose(after["weight"], expected.ravel(), atol=1e-3) and calls["explain"] == runs


# ----------------------------------------------------------------------------- interventions
def test_causal_mask_off_lets_the_decoder_see_the_future(calls):
    at = opened(start(kind="decoder"), experiments.INTERVENTIONS_OPEN)
    at.toggle(key="causal").set_value(False).run()
    before, after, diff = change_chart(at)
    assert largest_change(at) > 0 and np.abs(diff["change"]).max() > 0
    upper = after["row_index"] < after["col_index"]
    assert after.loc[upper, "weight"].max() > 0  # weights above the diagonal: the future
    assert before.loc[before["row_index"] < before["col_index"], "weight"].max() == 0


def test_temperature_zero_spreads_attention_evenly(calls):
    at = opened(start(), experiments.INTERVENTIONS_OPEN)
    at.slider(key="beta").set_value(0.0).run()
    _, after, _ = change_chart(at)
    n = after["col_index"].nunique()
    assert np.allclose(after["weight"], 1 / n, atol=1e-3)
    assert largest_change(at) > 0.01


def test_hard_attention_is_one_hot(calls):
    at = opened(start(), experiments.INTERVENTIONS_OPEN)
    at.toggle(key="hard").set_value(True).run()
    _, after, diff = change_chart(at)
    assert set(np.round(after["weight"], 6)) <= {0.0, 1.0}  # exact in float16
    assert np.abs(diff["change"]).max() > 0.01


def test_knocking_out_heads_changes_later_layers(calls):
    at = opened(start(), experiments.INTERVENTIONS_OPEN)
    at.multiselect(key="knockout").set_value(["L1H1", "L1H2", "L1H3", "L1H4"]).run()
    pin(at, layer=2)  # the panel away from its defaults follows the layer (panels.py)
    _, after, diff = change_chart(at)  # AppTest's tree holds the fragments that reran (the browser keeps the page)
    text = at.session_state["text"]
    mask = {"encoder": [[0, 0, 0, 0], [1, 1, 1, 1]]}
    expected = explain(REVERSE, text, head_mask=mask)
    assert np.allclose(after["weight"], expected.attention["encoder"][1, 0].ravel(), atol=1e-3)
    assert np.abs(diff["change"]).max() > 1e-3
    assert codes(at)[-1] == expected.prediction.text  # after-prediction shown


@pytest.mark.parametrize("state, expected", [
    ({}, []),  # the head view alone: the slider's own fragment reruns, no rerun is asked for
    ({"view": "head", "beta": 1.0, "causal": True, "knockout": []}, []),  # interventions at their defaults
    ({"view": "generation"}, [panels.VIEW]),
    ({"beta": 2.0}, [experiments.INTERVENTIONS]),
    ({"knockout": ["L1H2"], "view": "summary"}, [panels.VIEW, experiments.INTERVENTIONS]),
    ({"second_text": "ab"}, [experiments.INTERVENTIONS]),  # a padding batch drawn for the chosen head
    ({"compare_mode": "text", "compare_text": "kjicf"}, [experiments.COMPARE]),
    ({"compare_mode": "ckpt", "compare_text": "kjicf"}, []),  # the other mode's text is not shown
    ({"compare_mode": "ckpt", "compare_ckpt": "run:tiny-classifier"}, [experiments.COMPARE]),
])
def test_a_layer_move_reruns_only_the_panels_that_draw_the_chosen_head(state, expected):
    assert panels.followers(state) == expected


def test_padding_mask_off_attends_to_pad(calls):
    at = opened(start(), experiments.INTERVENTIONS_OPEN)
    at.text_input(key="second_text").input("ab").run()
    assert calls["batch"] == 1 and panel_titles(at)[0].startswith("Shorter sentence")  # its map, on the canvas
    at.toggle(key="padding").set_value(False).run()
    assert calls["batch"] == 2
    before, after, _ = change_chart(at)
    pad = before["col"].str.endswith("<pad>")
    assert pad.any() and before.loc[pad, "weight"].max() == 0  # masked: exactly 0
    assert after.loc[pad, "weight"].max() > 0
    assert largest_change(at) > 0


def test_stale_knockout_and_layers_survive_a_checkpoint_switch(calls):
    at = opened(start(kind="cross", layer="2", head="4"), experiments.INTERVENTIONS_OPEN)
    at.multiselect(key="knockout").set_value(["L2H4"]).run()
    at.selectbox(key="ckpt").set_value("run:tiny-classifier").run()
    assert not at.exception
    assert at.segmented_control(key="kind").value == "encoder"
    assert at.session_state["head"] == 2 and at.multiselect(key="knockout").value == []
    assert at.text_area(key="text").value == get_task("sentiment").examples[0]  # the new task's own example


# ----------------------------------------------------------------------------- compare
def test_compare_two_sentences(calls):
    at = opened(start(text="gbdka"), experiments.COMPARE_OPEN)
    at.text_input(key="compare_text").input("kjicf").run()
    # different tokens: a canvas each, so each map labels its own rows
    assert [panel_titles(at, i) for i in (-3, -2, -1)] == [["This sentence"], ["Second sentence"],
                                                           ["Difference (second − first)"]]
    first, second, diff = (panel_frames(at, i)[0] for i in (-3, -2, -1))
    assert list(second["row"].unique()) == [f"{i}:{c}" for i, c in enumerate("kjicf")]
    assert np.allclose(second["weight"], explain(REVERSE, "kjicf").attention["encoder"][0, 0].ravel(), atol=1e-3)
    assert np.allclose(diff["change"], second["weight"] - first["weight"], atol=2e-3)


def test_compare_two_checkpoints(calls):
    at = opened(start(), experiments.COMPARE_OPEN)
    at.segmented_control(key="compare_mode").set_value("ckpt").run()
    at.selectbox(key="compare_ckpt").set_value("run:tiny-classifier").run()
    assert not at.exception
    # the two models read the text as different tokens: a canvas each
    assert [panel_titles(at, i) for i in (-3, -2)] == [["reverse"], ["tiny-classifier"]]


# ----------------------------------------------------------------------------- other architectures
def test_classifier_shows_class_probabilities(calls, tiny_runs):
    at = start("run:tiny-classifier")
    set_text(at, "the movie was really great")
    expected = explain(tiny_runs / "tiny-classifier.safetensors", "the movie was really great").prediction
    assert codes(at)[0] == expected.text
    bars = charts(at)[0]
    assert np.allclose(frames(bars)[0]["probability"], expected.probabilities, atol=1e-6)
    assert "generation" not in at.segmented_control(key="view").options


def test_language_model_next_token_and_continuation(calls, tiny_runs):
    at = start("run:tiny-lm")
    text = at.text_area(key="text").value
    at.slider(key="continuation").set_value(3).run()
    expected = explain(tiny_runs / "tiny-lm.safetensors", text, continuation=3).prediction
    assert codes(at)[0] == expected.text
    assert frames(charts(at)[0])[0]["label"].iloc[0] == expected.labels[0]
    at.segmented_control(key="view").set_value("generation").run()
    # the view switch reruns the view's fragment alone: the candidates and the canvas stay, the decoder row joins
    assert not at.exception and len(charts(at)) == 2 and canvases(at)
    at.run()
    assert len(charts(at)) == 2  # the whole page draws the same two
    opened(at, experiments.INTERVENTIONS_OPEN)
    at.text_input(key="second_text").input("ab").run()  # a batch cannot continue: the page drops it
    at.toggle(key="padding").set_value(False).run()
    assert not at.error and change_chart(at)


def test_a_new_text_sends_the_candidates_new_rows_under_the_same_spec(calls, tiny_runs):
    """The next-token bars keep their Vega view on the page (the spec is the same) and the rows sent are core's
    candidates, most likely first."""
    at = start("run:tiny-lm")
    before = charts(at)[0].proto
    set_text(at, "the cat sat")
    after = charts(at)[0].proto
    assert before.spec == after.spec and '{"name": "rows"}' in json.dumps(json.loads(after.spec))
    assert [d.data.data for d in before.datasets] != [d.data.data for d in after.datasets]
    expected = explain(tiny_runs / "tiny-lm.safetensors", "the cat sat").prediction
    shown = frames(charts(at)[0])[0]
    assert list(shown["label"]) == [visible(label) for label in expected.labels]
    assert list(shown["rank"]) == list(range(len(expected.labels)))
    np.testing.assert_allclose(shown["probability"], expected.probabilities, atol=1e-6)
    bars = json.loads(after.spec)["layer"][0]["encoding"]["y"]
    assert bars["sort"] == {"field": "rank", "op": "min"}  # drawn in rank order, whatever the labels


def test_two_sentences_of_equal_length_need_no_padding(calls):
    at = opened(start(text="gbdka"), experiments.INTERVENTIONS_OPEN)
    at.text_input(key="second_text").input("abcde").run()
    assert any("nothing is padded" in i.value for i in at.info)


# ----------------------------------------------------------------------------- bad input and links
def test_script_text_is_shown_literally(calls):
    at = opened(set_text(start(), "<script>alert(1)</script>"), TOKENS_OPEN)
    assert "<script>alert(1)</script>" in [t.value for t in at.text]
    assert not any("<script" in m.value for m in at.markdown)
    assert "⚠ <unk>" in token_row(at)  # characters the model never saw are flagged


def test_a_ten_thousand_character_paste_is_truncated_with_a_note(calls):
    at = set_text(start(), "abc " * 2500)
    assert any("truncated" in w.value for w in at.warning)
    assert len(token_row(at)) == load_checkpoint(REVERSE).config.max_len  # cut to the model's limit
    assert any("read only the first" in c.value and "10,000" in c.value for c in at.caption)
    assert all(len(t.value) < 400 for t in at.text)  # never echoed back in full
    assert "text" not in at.query_params  # too long for a share link


def test_emoji_cjk_rtl_and_nul_do_not_break_the_page(calls):
    at = opened(set_text(start(), "ab 😀👍🏽 你好 שלום \x00 e\u0301\r\n"), TOKENS_OPEN)
    assert not at.error and canvases(at)
    assert any("unknown" in c.value for c in at.caption)


def test_query_parameters_restore_the_state(calls):
    at = start(text="hel", kind="cross", layer="2", head="3", view="head")  # counted from 1
    assert at.text_area(key="text").value == "hel"
    assert at.session_state["layer"] == 2 and at.session_state["head"] == 3
    (header, _), = canvases(at)
    assert header["pinned"]["layer"] == 1 and header["pinned"]["head"] == 2 and header["kind"] == "cross"
    expected = explain(REVERSE, "hel").attention["cross"][1, 2]
    assert np.allclose(head_view_weights(at), expected.ravel(), atol=1e-3)
    pin(at, head=1)
    assert at.query_params["head"] == "1" and at.query_params["text"] == "hel"


def test_out_of_range_values_in_a_link_are_clamped(calls):
    at = start(layer="99", head="-4", view="nonsense", kind="nope", decoding="bogus")
    assert at.session_state["layer"] == 2 and at.session_state["head"] == 1
    assert at.segmented_control(key="view").value == "head"
    assert at.segmented_control(key="kind").value == "encoder"
    assert at.segmented_control(key="decoding").value == "greedy"


@pytest.mark.parametrize(("control", "changed", "default"), [
    ("causal", False, True), ("beta", 2.0, 1.0), ("hard", True, False), ("knockout", ["L1H2"], [])])
def test_the_interventions_stay_open_when_the_last_change_returns_to_default(calls, control, changed, default):
    """A teacher's "off, then on again": the panel, opened by hand, stays open through the change and its undoing."""
    at = opened(start(kind="decoder"), experiments.INTERVENTIONS_OPEN)
    widget = {"causal": at.toggle, "hard": at.toggle, "beta": at.slider, "knockout": at.multiselect}[control]
    for value in (changed, default):
        widget(key=control).set_value(value).run()
        assert not at.exception
        assert at.session_state[experiments.INTERVENTIONS_OPEN] is True
        assert widget(key=control).value == value  # its controls are still drawn: the panel is open
    assert any(i.value.startswith("Change a control above") for i in at.info)


def test_a_link_with_an_intervention_opens_the_panel_and_undoing_it_keeps_it_open(calls):
    at = start(beta="2")
    assert at.session_state[experiments.INTERVENTIONS_OPEN] is True and at.slider(key="beta").value == 2.0
    at.slider(key="beta").set_value(1.0).run()
    assert at.session_state[experiments.INTERVENTIONS_OPEN] is True and at.slider(key="beta").value == 1.0


# ----------------------------------------------------------------------------- issue 16 / 12
def test_a_share_link_carries_the_interventions(calls):
    at = start(beta="2.5", hard="1", knockout="L1H2", causal="0")
    assert at.slider(key="beta").value == 2.5 and at.toggle(key="hard").value is True
    assert at.multiselect(key="knockout").value == ["L1H2"] and at.toggle(key="causal").value is False
    text = at.text_area(key="text").value
    mask = {"encoder": [[1, 0, 1, 1], [1, 1, 1, 1]]}
    expected = explain(REVERSE, text, temperature=2.5, hard=True, causal=False, head_mask=mask)
    assert codes(at)[2] == expected.prediction.text  # the re-run uses exactly the linked settings
    at.toggle(key="hard").set_value(False).run()
    assert "hard" not in at.query_params and at.query_params["beta"] == "2.5"  # defaults leave the link


def test_decoder_rows_say_what_they_predict(calls):
    at = start(view="head", kind="cross")
    expected = explain(REVERSE, at.text_area(key="text").value)
    (header, _), = canvases(at)
    rows = header["rows"]
    assert rows == [f"{i}:{t} → {g}" for i, (t, g) in enumerate(zip(expected.target_tokens, expected.generated_tokens))]
    assert header["row_title"].startswith("decoder row: after this token → predicts")


def test_the_language_models_continuation_is_marked(calls, tiny_runs):
    at = start("run:tiny-lm", text="the ca")
    at.slider(key="continuation").set_value(3).run()
    cells = token_row(at)
    exp = explain(tiny_runs / "tiny-lm.safetensors", "the ca", continuation=3)
    written = len(exp.target_tokens) - 1 - max(i for i, (_, end) in enumerate(exp.target_offsets) if end)
    assert written >= 1, cells
    assert [c.startswith("✎") for c in cells] == [False] * (len(cells) - written) + [True] * written
    assert any("written by the model" in c.value for c in at.caption)


def test_comparing_with_another_vocabulary_warns(calls):
    at = opened(start(), experiments.COMPARE_OPEN)
    at.segmented_control(key="compare_mode").set_value("ckpt").run()
    at.selectbox(key="compare_ckpt").set_value("run:tiny-classifier").run()
    assert any("vocabulary differs" in w.value and "tiny-classifier" in w.value for w in at.warning)


def test_the_models_vocabulary_is_listed_and_long_inputs_get_a_notice(runs):
    shortest, longest = get_task("reverse").trained_lengths
    at = open_page("explore", ckpt="shipped:reverse", query={"text": "abcdefghijkl" * 3})  # 36 letters
    assert any(f"trained on inputs of {shortest}–{longest} characters; this one has 36" in w.value for w in at.warning)
    opened(at, TOKENS_OPEN)
    words = input_vocabulary(load_checkpoint(REVERSE).source_tokenizer)
    assert " · ".join(words) in [t.value for t in at.text] and "<pad>" not in words
    assert any(c.value == f"Trained on inputs of {shortest}–{longest} characters." for c in at.caption)
    assert any(f"trained on inputs of {shortest}–{longest} characters; this one has 36" in w.value for w in at.warning)
    inside = open_page("explore", ckpt="shipped:reverse", query={"text": "abcdefghijkl"})
    assert not any("trained on inputs of" in w.value for w in inside.warning)
