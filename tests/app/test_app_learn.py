"""The Learn pages (positional encoding, attention playground, masks, architecture) under AppTest,
and the pure helpers and charts behind them. Every number checked here is checked against core."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest
import torch
from tests.helpers.apptest_helpers import (as_matrix, charts_in, diagram_lines, diagrams, frames_with, open_page,
                                          sections)
from tests.helpers.paths import SHIPPED
from tests.helpers.apptest_helpers import find_chart as chart
from tests.helpers.tiny import build_checkpoint, tiny_model
from streamlit.testing.v1 import AppTest

from app import resources
from app.ui import tables
from app.charts import grids
from app.charts.architecture import architecture_diagram
from app.charts.diagram import svg
from core import attention, load_checkpoint, sinusoidal_encoding, subsequent_mask
from core.lessons import (ffn_as_convolution, norm_demo, parameter_table, pe_curves, qkv_projection, random_vectors,
                          rotation_check)
from core.model.attention import attention_weights
from core.model.masks import combine_masks, padding_mask

WORKED_PE = np.array([[0, 1, 0, 1], [0.84147098, 0.54030231, 0.09983342, 0.99500417],
                      [0.90929743, -0.41614684, 0.19866933, 0.98006658],
                      [0.14112001, -0.9899925, 0.29552021, 0.95533649]])
WORKED_X = [[0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.5], [0.3, 0.4, 0.5, 0.6], [0.4, 0.5, 0.6, 0.7]]
PE_COLUMNS = ["0 (sin)", "1 (cos)", "2 (sin)", "3 (cos)"]


# ----------------------------------------------------------------------------- helpers
def shipped_checkpoint(at: AppTest):
    key = at.session_state["ckpt"]
    assert key.startswith("shipped:")
    return load_checkpoint(SHIPPED / f"{key.split(':', 1)[1]}.safetensors")


def add_run(runs: Path, name: str, architecture: str, tokenizer, **overrides) -> str:
    build_checkpoint(runs / f"{name}.safetensors", architecture, tokenizer, **overrides)
    resources.entries.clear()  # the catalog is cached for a few seconds
    return f"run:{name}"


# ----------------------------------------------------------------------------- every page
@pytest.mark.parametrize("page, title", [("positional", "Positional encoding"), ("playground", "Attention playground"),
                                         ("masks", "Masks"), ("architecture", "Architecture")])
def test_page_loads_with_headings_formulas_and_charts(runs, page, title):
    at = open_page(page)
    assert [t.value for t in at.title] == [title]
    assert not at.error
    assert len(sections(at)) >= 3 and len(at.latex) >= 3
    assert at.get("vega_lite_chart") or at.get("plotly_chart")


def test_projector_mode_scales_chart_text(runs):
    def largest_font(at: AppTest) -> float:  # the largest text of the mask's figure (Plotly: its fonts' sizes)
        figure = chart(at, "Look-ahead mask")[0]
        figure["layout"].pop("title", None)  # the look's style for a figure title: this one's titles are its panels'
        return max(float(v) for v in re.findall(r'"size": ([0-9.]+)', json.dumps(figure)))

    at = open_page("masks")
    font = largest_font(at)
    at.toggle(key="projector").set_value(True).run()
    assert largest_font(at) == pytest.approx(font * 1.5)


# ----------------------------------------------------------------------------- positional encoding
def test_worked_example_table_equals_the_notes(runs):
    at = open_page("positional")
    tables = [df.to_numpy(dtype=float) for df in frames_with(at, *PE_COLUMNS) if df.shape == (4, 4)]
    assert len(tables) == 2  # PE, then x + PE
    pe, total = tables
    x = frames_with(at, "dim 0", "dim 3")[0].to_numpy(dtype=float)
    np.testing.assert_allclose(pe, WORKED_PE, atol=1e-6)
    np.testing.assert_allclose(pe, sinusoidal_encoding(4, 4, 100.0).numpy(), atol=1e-7)
    np.testing.assert_allclose(x, WORKED_X)
    np.testing.assert_allclose(total, np.array(WORKED_X) + WORKED_PE, atol=1e-6)


def test_pe_heatmap_follows_length_d_model_and_base(runs):
    at = open_page("positional")
    _, frame = chart(at, "PE for 20 positions × 128 dimensions (base 10000)")
    np.testing.assert_allclose(as_matrix(frame, "PE"), sinusoidal_encoding(20, 128).numpy(), atol=1e-6)
    at.slider(key="pe_dim").set_value(64).run()
    at.slider(key="pe_len").set_value(12).run()
    at.select_slider(key="pe_base").set_value(100).run()
    assert not at.exception
    _, frame = chart(at, "PE for 12 positions × 64 dimensions (base 100)")
    assert len(frame) == 12 * 64
    np.testing.assert_allclose(as_matrix(frame, "PE"), sinusoidal_encoding(12, 64, 100.0).numpy(), atol=1e-6)
    _, sim = chart(at, "PE·PEᵀ")
    pe = sinusoidal_encoding(12, 64, 100.0).double().numpy()
    np.testing.assert_allclose(as_matrix(sim, "dot product"), pe @ pe.T, atol=1e-4)


def test_pe_curves_follow_the_chosen_dimensions(runs):
    at = open_page("positional")
    at.multiselect(key="pe_dims").set_value([3, 7]).run()
    _, frame = chart(at, "Each dimension is a sine or cosine")
    assert sorted(frame["dimension"].unique()) == ["3 (cos)", "7 (cos)"]
    tokens = frame[frame["at_token"] & (frame["dimension"] == "7 (cos)")].sort_values("position")
    np.testing.assert_allclose(tokens["value"], sinusoidal_encoding(20, 128)[:, 7].numpy(), atol=1e-6)
    # Dimensions beyond a smaller d_model are dropped instead of breaking the widget.
    at.slider(key="pe_dim").set_value(6).run()
    assert not at.exception and at.multiselect(key="pe_dims").value == [3]


def test_rotation_maps_pe_pos_to_pe_pos_plus_k(runs):
    at = open_page("positional")
    at.slider(key="pe_k").set_value(5).run()
    at.slider(key="pe_pair").set_value(2).run()
    assert not frames_with(at, "max |difference|")  # the numbers for every position: built only once opened
    at.session_state["pe_rotation_numbers_open"] = True
    at.run()
    angle = 5 / 10000 ** (4 / 128)
    matrix = frames_with(at, "col 1", "col 2")[0].to_numpy(dtype=float)
    np.testing.assert_allclose(matrix, [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]])
    check = frames_with(at, "max |difference|")[0]
    pe = sinusoidal_encoding(25, 128).double().numpy()
    rotated = pe[:20, 4:6] @ matrix.T
    np.testing.assert_allclose(rotated, pe[5:25, 4:6], atol=1e-6)
    np.testing.assert_allclose(check[["R·PE(pos)[4]", "R·PE(pos)[5]"]].to_numpy(), rotated, atol=1e-9)
    np.testing.assert_allclose(check[["PE(pos+5)[4]", "PE(pos+5)[5]"]].to_numpy(), pe[5:25, 4:6], atol=1e-9)
    assert check["max |difference|"].max() < 1e-5


def test_model_embeddings_are_the_checkpoints(runs):
    at = open_page("positional")
    ckpt = shipped_checkpoint(at)
    at.text_input(key="pe_text").input("abc").run()
    assert not at.exception
    norms = frames_with(at, "‖√d·E‖", "‖PE‖")[0]
    encoding = ckpt.source_tokenizer.encode("abc")
    weight = ckpt.model.state_dict()["src_embed.weight"]
    expected = (weight[torch.tensor(encoding.ids)] * math.sqrt(ckpt.config.d_model)).norm(dim=1).numpy()
    np.testing.assert_allclose(norms["‖√d·E‖"], expected, rtol=1e-5)
    pe = sinusoidal_encoding(len(encoding.ids), ckpt.config.d_model, ckpt.config.pe_base)
    np.testing.assert_allclose(norms["‖PE‖"], pe.norm(dim=1).numpy(), rtol=1e-5)
    _, frame = chart(at, "Their sum")
    total = weight[torch.tensor(encoding.ids)] * math.sqrt(ckpt.config.d_model) + pe
    np.testing.assert_allclose(as_matrix(frame, "value"), total.numpy(), atol=1e-5)


def test_learned_and_missing_positions_of_a_run(runs, char_tokenizer):
    learned = add_run(runs, "learned", "decoder", char_tokenizer, positional="learned")
    none = add_run(runs, "none", "encoder", char_tokenizer, positional="none")
    at = open_page("positional")
    at.selectbox(key="ckpt").set_value(learned).run()
    at.text_input(key="pe_text").input("hello").run()
    assert not at.exception
    ckpt = load_checkpoint(runs / "learned.safetensors")
    table = ckpt.model.state_dict()["positional.table.weight"]
    n = len(char_tokenizer.encode("hello").ids) + 1  # a decoder starts from <bos>
    norms = frames_with(at, "‖PE‖")[0]
    np.testing.assert_allclose(norms["‖PE‖"], table[:n].norm(dim=1).numpy(), rtol=1e-5)
    assert chart(at, "Learned position table")
    at.selectbox(key="ckpt").set_value(none).run()
    assert not at.exception
    assert (frames_with(at, "‖PE‖")[0]["‖PE‖"] == 0).all()
    assert any("no positional encoding" in i.value for i in at.info)


@pytest.mark.parametrize("page, query, defaults", [
    ("positional", {"pe_len": "1000", "pe_dim": "inf", "pe_base": "7", "pe_k": "-3", "pe_pair": "x", "pe_dims": "a,b"},
     {"pe_len": 20, "pe_dim": 128, "pe_base": 10000, "pe_k": 3, "pe_pair": 1, "pe_dims": [0, 1, 10, 11, 40, 41]}),
    ("playground", {"pg_beta": "nan", "pg_seed": "-1", "pg_dims": "3,5000", "pg_hard": "maybe"},
     {"pg_beta": 1.0, "pg_seed": 0, "pg_dims": (4, 1024), "pg_hard": False}),
    ("masks", {"mask_len": "0", "mask_seed": "1e9", "mask_tok": "spaces"},
     {"mask_len": 6, "mask_seed": 0, "mask_tok": "whitespace"}),
    ("architecture", {"arch_norm": "middle", "norm_batch": "99", "norm_features": "1", "ffn_tokens": "1.5e3"},
     {"arch_norm": "checkpoint", "norm_batch": 3, "norm_features": 6, "ffn_tokens": 5}),
])
def test_a_hand_edited_link_falls_back_to_defaults(runs, page, query, defaults):
    at = open_page(page, query=query)
    assert not at.error
    assert {key: at.session_state[key] for key in defaults} == defaults


def test_big_tables_render_and_offer_their_chart_and_numbers(runs):
    at = open_page("positional", query={"pe_len": "60", "pe_dim": "256"})
    assert not at.exception and not at.error
    _, frame = chart(at, "PE for 60 positions × 256 dimensions")
    assert len(frame) == 60 * 256
    labels = [b.label for b in at.get("download_button")]
    assert {"HTML", "CSV", "NPZ"} <= set(labels)  # the map as an interactive page, its numbers as tables


def test_positional_state_comes_from_the_link(runs):
    at = open_page("positional", query={"pe_dim": "32", "pe_len": "8", "pe_base": "1000"})
    assert chart(at, "PE for 8 positions × 32 dimensions (base 1000)")
    assert at.query_params["pe_dim"] in ("32", ["32"])


# ----------------------------------------------------------------------------- playground
def playground_table(at: AppTest) -> pd.DataFrame:
    return frames_with(at, "q·x/√d", "weight")[0]


def core_weights(scores, beta: float, hard: bool = False) -> np.ndarray:
    scores_t = torch.tensor(np.asarray(scores, dtype=np.float64)).float()[None, :]
    return attention_weights(scores_t, temperature=beta, hard=hard)[0].numpy()


def test_score_functions_random_parameters_are_built_when_opened_and_equal_core(runs):
    from core.lessons.attention import score_functions

    at = open_page("playground")
    captions = lambda: [c.value for c in at.caption if c.value.startswith(("additive:", "general:"))]  # noqa: E731
    assert not captions()  # closed: nothing of it is built
    at.session_state["pg_parameters_open"] = True
    at.run()
    assert captions() == ["additive: W_q", "additive: W_k", "additive: v", "general: W"]
    table = playground_table(at)
    vectors, query = table[["dim 1", "dim 2"]].to_numpy(), random_vectors(6, 2, 0)[5]
    expected = score_functions(query, vectors, 0)["general"].params["W"]
    shown = [df.value.to_numpy() for df in at.dataframe if df.value.shape == expected.shape]
    assert any(np.array_equal(frame, expected) for frame in shown)


def test_playground_weights_equal_core_for_any_beta_and_hard(runs):
    at = open_page("playground")
    table = playground_table(at)
    vectors = table[["dim 1", "dim 2"]].to_numpy()
    query = random_vectors(6, 2, 0)[5]
    np.testing.assert_allclose(table["q·x"], vectors @ query, atol=1e-9)  # both scores, named exactly
    np.testing.assert_allclose(table["q·x/√d"], vectors @ query / math.sqrt(2), atol=1e-9)
    np.testing.assert_allclose(table["weight"], core_weights(table["q·x/√d"], 1.0), atol=1e-7)
    assert table["weight"].sum() == pytest.approx(1.0)
    at.slider(key="pg_beta").set_value(6.0).run()
    sharp = playground_table(at)
    np.testing.assert_allclose(sharp["weight"], core_weights(sharp["q·x/√d"], 6.0), atol=1e-7)
    assert sharp["weight"].max() > table["weight"].max()
    at.toggle(key="pg_hard").set_value(True).run()
    hard = playground_table(at)
    assert sorted(hard["weight"]) == [0, 0, 0, 0, 1]
    np.testing.assert_array_equal(hard["weight"], core_weights(hard["q·x/√d"], 6.0, hard=True))
    assert hard["weight"].idxmax() == hard["q·x/√d"].idxmax()
    _, bars = chart(at, "Attention weights (hard, argmax)")
    assert sorted(bars["weight"]) == [0, 0, 0, 0, 1]
    assert at.slider(key="pg_beta").disabled  # hard attention is the β → ∞ limit
    at.toggle(key="pg_hard").set_value(False).run()
    at.slider(key="pg_beta").set_value(0.0).run()
    np.testing.assert_allclose(playground_table(at)["weight"], 0.2, atol=1e-7)  # soft, β = 0: uniform
    at.toggle(key="pg_hard").set_value(True).run()  # even from β = 0, hard picks the best score
    np.testing.assert_array_equal(playground_table(at)["weight"], hard["weight"])
    np.testing.assert_allclose(hard[["dim 1", "dim 2"]].to_numpy(), vectors)  # same vectors throughout


def test_playground_seed_draws_new_vectors(runs):
    at = open_page("playground")
    before = playground_table(at)[["dim 1", "dim 2"]].to_numpy()
    at.number_input(key="pg_seed").set_value(3).run()
    after = playground_table(at)[["dim 1", "dim 2"]].to_numpy()
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, random_vectors(6, 2, 3)[:5])


def test_saturation_follows_the_dimension_range(runs):
    at = open_page("playground")
    table = frames_with(at, "std of q·k", "max weight, scaled")[0]
    assert list(table["d"]) == [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    assert table["max weight, unscaled"].is_monotonic_increasing
    assert table["max weight, unscaled"].iloc[-1] > 0.9
    assert table["max weight, scaled"].max() < 0.5
    np.testing.assert_allclose(table["std of q·k"], np.sqrt(table["d"]), rtol=0.15)
    at.select_slider(key="pg_dims").set_value((16, 128)).run()
    assert list(frames_with(at, "std of q·k")[0]["d"]) == [16, 32, 64, 128]
    _, frame = chart(at, "Spread of the scores")
    assert sorted(frame["d"].unique()) == [16, 32, 64, 128]


def test_score_functions_share_the_vectors(runs):
    at = open_page("playground")
    table = playground_table(at)
    scores = frames_with(at, "additive score", "scaled dot weight")[0]
    vectors = table[["dim 1", "dim 2"]].to_numpy()
    query = random_vectors(6, 2, 0)[5]
    np.testing.assert_allclose(scores["dot score"], vectors @ query, atol=1e-9)
    np.testing.assert_allclose(scores["scaled dot score"], vectors @ query / math.sqrt(2), atol=1e-9)
    for name in ("additive", "general", "dot", "scaled dot"):
        np.testing.assert_allclose(scores[f"{name} weight"], core_weights(scores[f"{name} score"], 1.0), atol=1e-7)
    titles = ("additive: vᵀ tanh(W_q q + W_k k)", "general: qᵀ W k", "dot: qᵀ k", "scaled dot: qᵀ k / √d")
    for title in titles:
        assert chart(at, title)


def test_key_value_store_retrieves_the_weighted_values(runs):
    at = open_page("playground")
    at.slider(key="pg_beta").set_value(2.0).run()
    table = frames_with(at, "value vector", "weight")[0]
    np.testing.assert_allclose(table["weight"], core_weights(table["q·k/√d"], 2.0), atol=1e-7)
    values = random_vectors(5, 3, 7)
    _, bars = chart(at, "What the query retrieves")
    soft = bars[bars["series"].str.startswith("soft")]["value"].to_numpy()
    np.testing.assert_allclose(soft, table["weight"].to_numpy() @ values, atol=1e-6)
    hard = bars[bars["series"].str.startswith("hard")]["value"].to_numpy()
    np.testing.assert_allclose(hard, values[table["q·k/√d"].idxmax()])


def qkv_table(at: AppTest) -> pd.DataFrame:
    return [df.value for df in at.dataframe if df.value.index.name == "query"][-1]


def test_random_projections_are_called_random_and_masked_in_decoder_mode(runs):
    at = open_page("playground", ckpt="shipped:sentiment")  # no decoder: random matrices
    assert any("**random**" in w.value for w in at.warning)
    assert not any("gatos" in str(df.value.columns) or "cats" in str(df.value.index) for df in at.dataframe)
    at.radio(key="pg_qkv_mode").set_value("decoder self").run()
    weights = qkv_table(at).to_numpy(dtype=float)
    assert weights.shape == (4, 4) and np.all(np.triu(weights, 1) == 0)  # the look-ahead mask
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-9)
    at.radio(key="pg_qkv_mode").set_value("cross").run()
    cross = qkv_table(at)
    assert cross.shape == (4, 3) and list(cross.columns) == ["s1", "s2", "s3"]
    x, y = random_vectors(4, 4, 11), random_vectors(3, 4, 13)
    proj = qkv_projection(x, y, True, 0)
    _, weights = attention(torch.tensor(x @ proj.w_q), torch.tensor(y @ proj.w_k), torch.tensor(y @ proj.w_v))
    np.testing.assert_allclose(cross.to_numpy(dtype=float), weights.numpy(), atol=1e-9)


@pytest.mark.parametrize("mode", ["encoder self", "decoder self", "cross"])
def test_projections_use_the_translation_models_learned_weights(runs, mode):
    at = open_page("playground", query={"pg_qkv_mode": mode})  # the default checkpoint: translation
    assert any("own learned W_Q" in s.value for s in at.success)
    ckpt = load_checkpoint(SHIPPED / "translation.safetensors")
    src = torch.tensor([ckpt.source_tokenizer.encode("i have cats").ids])
    tgt = torch.tensor([[1] + ckpt.target_tokenizer.encode("yo tengo gatos").ids])
    kind = {"encoder self": "encoder", "decoder self": "decoder", "cross": "cross"}[mode]
    with torch.inference_mode():
        own = ckpt.model(src, tgt, return_attention=True).attention[kind][0, 0, 0].numpy()
    shown = qkv_table(at)
    np.testing.assert_allclose(shown.to_numpy(dtype=float), own, atol=1e-5)
    if mode == "decoder self":
        assert np.all(np.triu(shown.to_numpy(dtype=float), 1) == 0)
    if mode != "encoder self":
        rows = [r.replace("\u00a0", " ") for r in shown.index]  # spaces kept (non-breaking), never drawn as ␣
        assert rows == ["0:after ‹<bos>› → predicts ‹yo›", "1:after ‹yo› → predicts ‹tengo›",
                        "2:after ‹tengo› → predicts ‹gatos›", "3:after ‹gatos› → predicts ‹<eos>›"]


# ----------------------------------------------------------------------------- masks
def test_subsequent_mask_equals_core_and_follows_the_slider(runs):
    at = open_page("masks")
    assert not [f for f in frames_with(at, "0", "5") if f.shape == (6, 6)]  # the mask as numbers: built once opened
    at.session_state["mask_numbers_open"] = True
    mask = frames_with(at.run(), "0", "5")[0]
    np.testing.assert_array_equal(mask.to_numpy(dtype=int), subsequent_mask(6).numpy().astype(int))
    at.slider(key="mask_len").set_value(9).run()
    _, frame = chart(at, "Look-ahead mask, 9 × 9")
    assert len(frame) == 81
    np.testing.assert_array_equal(as_matrix(frame, "allowed").astype(bool), subsequent_mask(9).numpy())
    assert set(frame["allowed"]) == {0.0, 1.0}


def test_masked_softmax_has_exact_zeros(runs):
    at = open_page("masks")
    at.session_state["mask_numbers_open"] = at.session_state["mask_softmax_numbers_open"] = True
    at.slider(key="mask_len").set_value(7).run()
    scores, weights = frames_with(at, "0", "6")[1:3]
    mask = subsequent_mask(7)
    expected = attention_weights(torch.tensor(scores.to_numpy(dtype=np.float32)), mask).numpy()
    np.testing.assert_array_equal(weights.to_numpy(dtype=np.float32), expected)
    assert (weights.to_numpy()[~mask.numpy()] == 0.0).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
    # the one figure's two panels: the plain softmax of the scores, and the table's masked weights
    panels = charts_in(at)
    unmasked, masked = (as_matrix(panels[title][0]) for title in ("Without the mask: weight leaks to the future",
                                                                  "With the look-ahead mask"))
    np.testing.assert_array_equal(masked.astype(np.float32), expected)
    plain = torch.softmax(torch.tensor(scores.to_numpy(dtype=np.float32)), dim=-1).numpy()
    np.testing.assert_allclose(unmasked, plain, atol=1e-7)


def test_padding_and_combined_masks_equal_core(runs):
    at = open_page("masks")
    at.session_state["mask_combined_numbers_open"] = True
    at.text_area(key="mask_sentences").input("the cat sat\na b c d e\nhi").run()
    assert not at.exception
    lengths, width = [3, 5, 1], 5
    ids = torch.tensor([[7] * n + [0] * (width - n) for n in lengths])
    pad_table = next(df for df in frames_with(at, "0", "4")
                     if list(df.index) == ["sentence 1", "sentence 2", "sentence 3"]
                     and df.to_numpy().dtype != object and set(np.unique(df.to_numpy())) <= {0, 1})
    np.testing.assert_array_equal(pad_table.to_numpy(dtype=int), padding_mask(ids, 0)[:, 0].numpy().astype(int))
    combined = combine_masks(subsequent_mask(width), padding_mask(ids, 0)).numpy()
    shown = [df for df in at.dataframe if df.value.shape == (width, width) and df.value.index[0].startswith("0:")]
    assert len(shown) == 3
    for b, df in enumerate(shown):
        np.testing.assert_array_equal(df.value.to_numpy(dtype=int), combined[b].astype(int))
    assert chart(at, "sentence 3: combined mask")


def test_masks_with_the_checkpoint_tokenizer(runs):
    at = open_page("masks")
    ckpt = shipped_checkpoint(at)
    at.text_area(key="mask_sentences").input("abc\nabcdef").run()
    at.radio(key="mask_tok").set_value("checkpoint").run()
    assert not at.exception
    lengths = [len(ckpt.source_tokenizer.encode(s).ids) for s in ("abc", "abcdef")]
    ids = frames_with(at, "0")
    id_table = next(df for df in ids if df.to_numpy().dtype != object and df.shape == (2, max(lengths)))
    np.testing.assert_array_equal((id_table.to_numpy() != 0).sum(axis=1), lengths)


def test_no_sentences_is_a_message_not_an_error(runs):
    at = open_page("masks")
    at.text_area(key="mask_sentences").input("  \n ").run()
    assert not at.exception
    assert any("at least one sentence" in i.value for i in at.info)


# ----------------------------------------------------------------------------- architecture
def test_parameter_counts_equal_the_models(runs):
    at = open_page("architecture")
    ckpt = shipped_checkpoint(at)
    table = frames_with(at, "block", "parameters", "from the formula")[0]
    counts = ckpt.model.parameter_counts()
    assert dict(zip(table["block"], table["parameters"])) == counts
    assert (table["parameters"] == table["from the formula"]).all()
    _, bars = chart(at, "Parameters per block")
    assert dict(zip(bars["block"], bars["parameters"])) == counts
    assert at.metric[0].value == f"{sum(counts.values()):,}"


def test_diagram_reflects_config_and_norm_choice(runs, char_tokenizer):
    at = open_page("architecture")
    cfg = shipped_checkpoint(at).config
    text = "\n".join(diagram_lines(diagrams(at)[0]))
    assert f"Encoder layer × {cfg.n_encoder_layers}" in text and "cross-attention" in text
    assert f"{cfg.n_heads} heads × d_k={cfg.head_dim}" in text and f"{cfg.d_model} → {cfg.d_ff}" in text
    assert "post-norm" in text and "Add & Norm" in text
    at.radio(key="arch_norm").set_value("pre").run()
    text = "\n".join(diagram_lines(diagrams(at)[0]))
    assert "pre-norm" in text and "Add & Norm" not in text
    lm = add_run(runs, "lm", "decoder", char_tokenizer, norm="pre", n_decoder_layers=3)
    at.radio(key="arch_norm").set_value("checkpoint").run()
    at.selectbox(key="ckpt").set_value(lm).run()
    assert not at.exception
    text = "\n".join(diagram_lines(diagrams(at)[0]))
    assert "Decoder layer × 3" in text and "Encoder" not in text and "cross-attention" not in text
    assert "pre-norm" in text


def test_layernorm_rows_and_batchnorm_columns(runs):
    at = open_page("architecture")
    at.slider(key="norm_features").set_value(5).run()
    at.slider(key="norm_batch").set_value(2).run()
    rows = frames_with(at, "token", "mean (LayerNorm)")[0]
    cols = frames_with(at, "feature", "mean (BatchNorm)")[0]
    assert len(rows) == 2 * 4 and len(cols) == 5
    np.testing.assert_allclose(rows["mean (LayerNorm)"], 0, atol=1e-4)
    np.testing.assert_allclose(rows["std (LayerNorm)"], 1, atol=1e-3)
    np.testing.assert_allclose(cols["mean (BatchNorm)"], 0, atol=1e-4)
    np.testing.assert_allclose(cols["std (BatchNorm)"], 1, atol=1e-3)
    assert not np.allclose(rows["std (BatchNorm)"], 1, atol=1e-2)  # the other norm does not do this
    demo = norm_demo(2, 4, 5, 0)
    x = torch.tensor(demo.x)
    _, frame = chart(at, "LayerNorm: each row")
    np.testing.assert_allclose(as_matrix(frame, "value"),
                               torch.nn.functional.layer_norm(x, (5,)).reshape(-1, 5).numpy(), atol=1e-9)


def test_ffn_is_a_one_by_one_convolution(runs):
    at = open_page("architecture")
    at.slider(key="ffn_tokens").set_value(7).run()
    panels = charts_in(at)  # one figure, a panel each
    x, per_token, conv = (as_matrix(panels[title][0], "value") for title in (
        "x (tokens × d_model)", "FFN applied token by token", "two Conv1d, kernel 1, ReLU between"))
    expected = ffn_as_convolution(7, 4, 16, 0)
    np.testing.assert_array_equal(x, expected.x)
    np.testing.assert_array_equal(per_token, expected.per_token)
    np.testing.assert_allclose(conv, per_token, atol=1e-5)
    assert any("Both give the same output" in s.value for s in at.success)


# ----------------------------------------------------------------------------- pure helpers and charts
def layer_data(layered) -> pd.DataFrame:
    """The first layer's data (Altair hoists data the layers share to the top)."""
    data = layered.layer[0].data
    return layered.data if isinstance(data, type(alt.Undefined)) else data


@pytest.mark.parametrize("architecture, overrides", [
    (arch, overrides)
    for arch in ("encoder-decoder", "encoder", "decoder")
    for overrides in ({}, {"positional": "learned", "score": "general"}, {"score": "additive", "norm": "pre"},
                      {"tie_embeddings": True})
    if not (arch == "encoder" and overrides.get("tie_embeddings"))  # an encoder has nothing to tie
])
def test_parameter_formulas_match_every_configuration(architecture, overrides):
    model = tiny_model(architecture, **overrides)
    table = tables.parameter_frame(parameter_table(model.parameter_counts(), model.config))
    assert (table["parameters"] == table["from the formula"]).all(), table
    assert table["parameters"].sum() == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder", "decoder"])
def test_architecture_diagram_names_the_blocks(architecture):
    config = tiny_model(architecture).config
    text = "\n".join(diagram_lines(svg(architecture_diagram(config))))
    assert ("Encoder layer" in text) == config.has_encoder
    assert ("masked self-attention" in text) == config.has_decoder
    assert ("cross-attention" in text) == (architecture == "encoder-decoder")
    assert ("class scores" in text) == (architecture == "encoder")
    with pytest.raises(ValueError):
        architecture_diagram(config, norm="middle")


def test_grid_heatmap_is_one_trace_written_in_its_cells_when_small():
    small = grids.grid_heatmap(np.eye(3), title="t", x_title="x", y_title="y")
    (trace,) = small.data
    assert np.array_equal(np.asarray(trace.z), np.eye(3)) and list(trace.text[1]) == ["0", "1.00", "0"]  # annotated
    big = grids.grid_heatmap(np.zeros((60, 128)), title="t", x_title="x", y_title="y")
    assert np.asarray(big.data[0].z).shape == (60, 128) and big.data[0].text is None
    assert len(big.layout.xaxis.tickvals) <= grids.MAX_LABELS and big.layout.yaxis.autorange == "reversed"
    with pytest.raises(ValueError):
        grids.grid_heatmap(np.eye(3), title="t", x_title="x", y_title="y", rows=["a", "b"])


def test_mask_heatmap_uses_two_labelled_colours():
    figure = grids.mask_heatmap(subsequent_mask(4).numpy(), list("abcd"), list("abcd"), title="m")
    (trace,) = figure.data
    allowed = np.asarray(trace.z)
    assert allowed.shape == (4, 4) and (allowed == 0).sum() == 6  # masked: the 6 future cells
    assert [row[3] for row in trace.text] == ["✗", "✗", "✗", "✓"]
    colours = {stop[1] for stop in trace.colorscale}
    assert colours == {grids.MAY_ATTEND, grids.MASKED} and list(trace.colorbar.ticktext) == ["masked", "may attend"]


def test_rotation_and_pe_helpers():
    check = tables.rotation_frame(rotation_check(30, 16, 10000.0, 7, 3), 7, 3)
    assert len(check) == 30 and check["max |difference|"].max() < 1e-5
    with pytest.raises(ValueError):
        rotation_check(5, 4, 100.0, 1, 2)
    curves = tables.curves_frame(pe_curves(16, 100.0, [0, 5], 10), 16)
    assert set(curves["dimension"]) == {"0 (sin)", "5 (cos)"} and curves["at_token"].sum() == 20











def test_shipped_checkpoints_are_where_the_tests_expect():
    assert any(SHIPPED.glob("*.safetensors")), "the Learn page tests need a shipped checkpoint"
