"""Issue 23 on the Learn pages: a control reruns only the fragment it lives in, and charts are built once per input.

AppTest always runs the whole script, so :func:`rerun_fragment` asks its script runner for the rerun the browser
asks for when a widget inside a fragment changes (``fragment_id_queue``: that fragment alone). After it, the
page's element tree holds what that rerun drew and nothing else; what other sections compute is counted by
wrapping the core functions they call.
"""

from __future__ import annotations

import functools
import json
from unittest import mock

import altair as alt
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest, app_test, local_script_runner

from app import resources
from app.charts import teaching
from app.ui import export, vega
from core import lessons
from tests.helpers.apptest_helpers import chart, charts, charts_in, frames_with, is_plotly, open_page, sections


def rerun_fragment(at: AppTest, key: str) -> AppTest:
    """Rerun only the fragment keyed ``key`` with the widget values set on ``at`` (as the browser does when one
    of its widgets changes)."""
    ids = at._fragment_storage.resolve_target(key)  # AppTest keeps the fragments between its runs
    assert ids, f"no fragment keyed {key!r}"
    scoped = functools.partial(local_script_runner.RerunData, fragment_id_queue=list(ids), is_fragment_scoped_rerun=True)
    real_pages = app_test.PagesManager

    def session_pages(*args, **kwargs):  # the server keeps a session's pages between its runs; AppTest does not
        pages = real_pages(*args, **kwargs)
        pages._set_pages(at._registered_pages)
        return pages

    with mock.patch.object(local_script_runner, "RerunData", scoped), \
            mock.patch.object(app_test, "PagesManager", session_pages):
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


class Calls:
    """Wraps functions (module, name) and counts the calls to each."""

    def __init__(self, *targets: tuple[object, str]) -> None:
        self.counts = {name: 0 for _, name in targets}
        self.patches = [mock.patch.object(owner, name, self._counting(name, getattr(owner, name)))
                        for owner, name in targets]

    def _counting(self, name: str, function):
        @functools.wraps(function)
        def counted(*args, **kwargs):
            self.counts[name] += 1
            return function(*args, **kwargs)
        return counted

    def __enter__(self) -> dict[str, int]:
        for patch in self.patches:
            patch.start()
        return self.counts

    def __exit__(self, *exc) -> None:
        for patch in self.patches:
            patch.stop()


def headers(at: AppTest) -> list[str]:
    return sections(at)


# ----------------------------------------------------------------------------- the main control of each page
def test_positional_length_reruns_sections_1_to_4_only(runs):
    at = open_page("positional")
    assert len(headers(at)) >= 6
    at.slider(key="pe_len").set_value(21)
    with Calls((lessons, "worked_example"), (resources, "model_lesson"), (lessons, "pe_table")) as calls:
        rerun_fragment(at, "pe_table")
    assert [h[:2] for h in headers(at)] == ["1 ", "2 ", "3 ", "4 "]
    assert any(t.startswith("PE for 21 positions") for t in charts_in(at))
    assert calls == {"worked_example": 0, "model_lesson": 0, "pe_table": 1}
    assert at.query_params["pe_len"] == "21"  # the share link follows a fragment's control


def test_playground_beta_reruns_the_sections_that_read_it(runs):
    at = open_page("playground")
    at.slider(key="pg_beta").set_value(2.5)
    with Calls((lessons, "saturation"), (lessons, "qkv_projection"), (resources, "model_lesson"),
               (lessons, "kv_lookup")) as calls:
        rerun_fragment(at, "pg_weights")
    assert [h[:2] for h in headers(at)] == ["1 ", "3 ", "4 "]
    scores = frames_with(at, "q·x/√d", "weight")[0]["q·x/√d"].to_numpy()
    bars = chart(at, "Attention weights (soft)")[0]
    assert bars["weight"].tolist() == pytest.approx(lessons.attention_row(scores, 2.5, False).tolist())
    assert calls == {"saturation": 0, "qkv_projection": 0, "model_lesson": 0, "kv_lookup": 1}
    assert at.query_params["pg_beta"] == "2.5"


def test_playground_a_new_seed_inside_the_fragment_redraws_the_whole_page(runs):
    at = open_page("playground")
    at.number_input(key="pg_seed").set_value(7)
    with Calls((lessons, "saturation")) as calls:
        rerun_fragment(at, "pg_weights")
    assert [h[:2] for h in headers(at)] == ["1 ", "2 ", "3 ", "4 ", "5 ", "6 "]
    assert calls == {"saturation": 1}  # section 2 drew the new seed's keys
    assert at.query_params["pg_seed"] == "7"


def test_masks_length_reruns_the_look_ahead_section_only(runs):
    at = open_page("masks")
    at.slider(key="mask_len").set_value(9)
    with Calls((lessons, "batch_masks"), (lessons, "masked_softmax_demo")) as calls:
        rerun_fragment(at, "masks_look_ahead")
    assert headers(at) == []  # the section's expander is outside its fragment: not drawn again
    assert not at.latex and not [df for df in at.dataframe if "must predict" in df.value]  # nor its fixed part
    assert "Look-ahead mask, 9 × 9" in charts_in(at) and not any("combined" in t for t in charts_in(at))
    assert calls == {"batch_masks": 0, "masked_softmax_demo": 1}
    assert at.query_params["mask_len"] == "9"


def test_architecture_tokens_rerun_the_ffn_section_only(runs):
    at = open_page("architecture")
    at.slider(key="ffn_tokens").set_value(7)
    with Calls((lessons, "norm_demo"), (lessons, "parameter_table"), (lessons, "ffn_as_convolution")) as calls:
        rerun_fragment(at, "arch_ffn")
    assert headers(at) == [] and len(charts_in(at)) == 3  # x, token by token, as convolutions; no other section
    assert not at.latex and not at.markdown  # the section's prose and formula stay as they are
    assert calls == {"norm_demo": 0, "parameter_table": 0, "ffn_as_convolution": 1}
    assert at.query_params["ffn_tokens"] == "7"


def test_self_attention_longest_length_reruns_only_the_timing(runs):
    at = open_page("self-attention", query={"cc_max": "128"})
    at.select_slider(key="cc_max").set_value(64)
    with Calls((lessons, "permutation_demo"), (lessons, "path_comparison"), (lessons, "pe_beyond"),
               (resources, "attention_timing")) as calls:
        rerun_fragment(at, "cc_cost")
    assert headers(at) == [] and len(charts_in(at)) == 1  # the timing alone (its section's expander is outside)
    assert calls == {"permutation_demo": 0, "path_comparison": 0, "pe_beyond": 0, "attention_timing": 1}
    assert at.query_params["cc_max"] == "64"


def test_lesson_next_reruns_the_lesson_not_the_page_around_it(runs):
    at = open_page("lesson")
    assert at.title and at.sidebar.selectbox
    at.button(key="lesson_next").click()
    rerun_fragment(at, "lesson_body")
    assert not at.title and not at.sidebar.selectbox  # the title and the sidebar were not drawn again
    assert headers(at) == ["2. Embeddings + positional encoding"]
    assert at.query_params["stage"] == "2"  # counted from 1, as the header


# ----------------------------------------------------------------------------- charts built once per input
def test_a_full_rerun_with_the_same_inputs_builds_no_altair_chart(runs):
    at = open_page("playground")
    with Calls((teaching, "weights_bar"), (teaching, "vectors_plot")) as calls:
        at.run()
    assert not at.exception
    assert calls == {"weights_bar": 0, "vectors_plot": 0}
    at.slider(key="pg_beta").set_value(3.7)  # a β no other test draws: new rows, the same two specs
    with Calls((teaching, "weights_bar"), (teaching, "vectors_plot")) as calls:
        at.run()
    assert calls == {"weights_bar": 0, "vectors_plot": 0}
    vega._spec.clear()  # from here on, only the specs this test draws are cached
    at.run()
    at.toggle(key="pg_hard").set_value(True)  # the weights chart's title says "hard": its spec is new
    with Calls((teaching, "weights_bar"), (teaching, "vectors_plot")) as calls:
        at.run()
    assert calls == {"weights_bar": 1, "vectors_plot": 0}


def _beta_charts(at) -> list:
    """The page's Vega-Lite charts whose rows travel apart from their spec (vega.draw_rows)."""
    return [node.proto for node in charts(at) if not is_plotly(node)
            and any(d.name == vega.ROWS for d in node.proto.datasets)]


def _rows(proto) -> bytes:
    return next(d.data.data for d in proto.datasets if d.name == vega.ROWS)


def test_a_beta_move_sends_the_same_specs_with_new_rows(runs):
    """The page keeps each chart's Vega view (Streamlit builds a new one only for a new spec) and the rows
    sent are the numbers the page shows."""
    at = open_page("playground")
    before = _beta_charts(at)
    at.slider(key="pg_beta").set_value(6.1).run()
    after = _beta_charts(at)
    assert len(before) == len(after) == 3 and not at.exception  # section 1's two charts, section 4's store
    for old, new in zip(before, after):
        assert old.spec == new.spec and '{"name": "rows"}' in json.dumps(json.loads(new.spec))
        assert _rows(old) != _rows(new)
    bars = pa.ipc.open_stream(_rows(after[0])).read_pandas()
    table = frames_with(at, "q·x/√d", "weight")[0]
    assert list(bars["key"]) == list(table["vector"])
    assert bars["weight"].tolist() == pytest.approx(table["weight"].tolist(), abs=0)
    assert bars["weight"].sum() == pytest.approx(1.0)
    assert bars["weight"].tolist() == pytest.approx(lessons.attention_row(table["q·x/√d"].to_numpy(), 6.1, False))


def test_a_chart_drawn_with_its_rows_apart_exports_them_inline():
    rows = teaching.weight_rows(["a", "b"], [0.25, 0.75], [0.1, 0.2])
    drawn = vega.Drawn(teaching.weights_bar, (rows, ["a", "b"]), {"title": "w", "scores": True})
    assert drawn.chart().to_dict() == teaching.weights_bar(rows, ["a", "b"], title="w", scores=True).to_dict()
    html = export._html(drawn)
    assert '"weight":0.75' in html.replace(" ", "") and '"name":"rows"' not in html.replace(" ", "")


def _weights_chart(weights: list[float]):
    frame = pd.DataFrame({"key": ["a", "b", "c"], "weight": weights})
    return alt.Chart(frame, title="weights").mark_bar().encode(x="key:N", y="weight:Q")


def _both_ways() -> None:
    import streamlit as st_  # AppTest runs this function's source as a script of its own

    from app.ui import vega as vega_
    from tests.app.test_app_learn_fragments import _weights_chart as build

    for weights in ([0.2, 0.3, 0.5], [0.1, 0.1, 0.8]):  # the first spec validated by Altair, the second not
        st_.altair_chart(build(weights), width="content")
        vega_.draw(build, weights)


def test_a_chart_drawn_from_its_spec_is_sent_as_st_altair_chart_sends_it():
    at = AppTest.from_function(_both_ways).run()
    assert not at.exception
    sent = [node.proto for node in charts(at)]
    assert len(sent) == 4
    for by_altair, by_spec in (sent[:2], sent[2:]):
        assert by_altair.spec == by_spec.spec
        assert [(d.name, d.data.data) for d in by_altair.datasets] == [(d.name, d.data.data) for d in by_spec.datasets]
    assert sent[0].datasets[0].data.data != sent[2].datasets[0].data.data


def _numbered_title(weights: list[float]):
    frame = pd.DataFrame({"key": ["a", "b", "c"], "weight": weights})
    return alt.Chart(frame, title={"text": 5}).mark_bar().encode(x="key:N", y="weight:Q")  # a title is text


def test_altair_validates_each_chart_function_the_first_time_it_draws():
    with pytest.raises(alt.utils.schemapi.SchemaValidationError):
        vega.spec(_numbered_title, [0.2, 0.3, 0.5])


def test_the_exports_build_a_drawn_chart_again_on_the_click():
    drawn = vega.Drawn(_weights_chart, ([0.2, 0.3, 0.5],))
    svg = export._rendered(drawn, "svg", 1.0)
    assert svg == export._render(_weights_chart([0.2, 0.3, 0.5]).to_json(), "svg", 1.0)
    assert b"weights" in svg
    html = export._html(drawn)
    assert "vega-lite" in html.lower() and '"weights"' in html


@pytest.mark.parametrize("page", ["positional", "playground", "masks", "architecture", "self-attention"])
def test_presentation_mode_still_folds_the_opening_prose(runs, page):
    at = open_page(page, query={"projector": "1"})
    assert at.title and not at.exception
    assert any(p.proto.popover.label == "About this page" for p in at.get("popover"))
