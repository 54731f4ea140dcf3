"""core.lessons and core.inspect.embeddings: the teaching pages' numbers against the paper's formulas
and against the model's own tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.inspect.embeddings import model_embeddings
from core.lessons import (attention_row, batch_masks, ffn_as_convolution, kv_lookup, look_ahead_mask,
                          masked_softmax_demo, model_encoding, noam_curve, norm_demo, norm_stats, pad_sentences,
                          parameter_table, pe_curves, pe_frequency, pe_table, qkv_projection, random_vectors,
                          rotation_check, saturation, score_functions, smoothing_example, tokenizer_batch,
                          whitespace_batch, worked_example)
from core import sinusoidal_encoding
from core.config import ARCHITECTURES, SCORES
from core.io.checkpoint import load
from tests.helpers.tiny import build_checkpoint, random_ids, tiny_model


# ----------------------------------------------------------------------------- positional encoding
def test_pe_table_is_the_papers_sinusoids():
    d_model, base = 6, 100.0
    table = pe_table(5, d_model, base)
    for pos in range(5):
        for i in range(d_model // 2):
            omega = pe_frequency(i, d_model, base)
            assert omega == pytest.approx(1 / base ** (2 * i / d_model))
            assert table[pos, 2 * i] == pytest.approx(math.sin(pos * omega), abs=1e-6)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(pos * omega), abs=1e-6)


def test_pe_curves_pass_through_the_table_at_integer_positions():
    curves = pe_curves(8, 10000.0, [0, 3, 6], length=6)
    table = pe_table(6, 8, 10000.0)
    at = curves.positions[curves.at_token]
    assert np.allclose(at, np.arange(6))
    assert np.allclose(curves.values[:, curves.at_token], table[:, [0, 3, 6]].T, atol=1e-6)


def test_rotation_moves_pe_pos_to_pe_pos_plus_k():
    check = rotation_check(length=12, d_model=16, base=10000.0, k=5, i=2)
    assert check.error.max() < 1e-6
    assert np.allclose(check.shifted, pe_table(17, 16, 10000.0)[5:17, 4:6])
    with pytest.raises(ValueError, match="pair 8"):
        rotation_check(4, 16, 10000.0, 1, 8)


def test_worked_example_of_the_notes():
    example = worked_example()
    assert example.words == ("I", "like", "to", "code")
    assert example.pe[1].tolist() == pytest.approx([math.sin(1), math.cos(1), math.sin(0.1), math.cos(0.1)], abs=1e-6)
    assert np.allclose(example.total, example.x + example.pe)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "none"])
def test_model_embeddings_are_the_models_own_tables(tmp_path, char_tokenizer, positional):
    ckpt = load(build_checkpoint(tmp_path / "m.safetensors", "encoder-decoder", char_tokenizer, positional=positional))
    emb = model_embeddings(ckpt)
    state = ckpt.model.state_dict()
    assert np.array_equal(emb.source, state["src_embed.weight"].numpy())
    assert np.array_equal(emb.target, state["tgt_embed.weight"].numpy())
    assert emb.source_tokens == char_tokenizer.token_strings(range(char_tokenizer.vocab_size))
    assert emb.scale == math.sqrt(ckpt.config.d_model) and emb.positional_kind == positional
    expected = {"sinusoidal": pe_table(ckpt.config.max_len, ckpt.config.d_model, ckpt.config.pe_base),
                "learned": state.get("positional.table.weight", torch.zeros(1)).numpy(),
                "none": np.zeros((ckpt.config.max_len, ckpt.config.d_model))}[positional]
    assert np.allclose(emb.positional, expected, atol=1e-7)
    ids = random_ids(1, 6, vocab=char_tokenizer.vocab_size)
    first_layer_input = ckpt.model.positional(ckpt.model.src_embed(ids) * emb.scale)[0]  # (T, D), as forward
    assert np.allclose(emb.input_rows(ids[0].tolist(), "source"), first_layer_input.detach().numpy(), atol=1e-6)


def test_model_embeddings_of_single_stack_models(checkpoints):
    assert model_embeddings(checkpoints["encoder"]).target is None
    decoder = model_embeddings(checkpoints["decoder"])
    assert decoder.source is None and decoder.source_tokens is None
    with pytest.raises(ValueError, match="no source"):
        decoder.input_rows([4, 5], "source")


def test_model_encoding_reads_the_scaled_embedding_rows(checkpoints):
    ckpt = checkpoints["encoder-decoder"]
    encoding = model_encoding(ckpt, "hello")
    ids = ckpt.source_tokenizer.encode("hello").ids
    rows = ckpt.model.state_dict()["src_embed.weight"][ids] * math.sqrt(ckpt.config.d_model)
    assert encoding.tokens == list("hello") and encoding.table == "source"
    assert np.array_equal(encoding.embeddings, rows.double().numpy())
    assert np.allclose(encoding.total, encoding.embeddings + pe_table(5, 16, 10000.0), atol=1e-6)
    decoder = model_encoding(checkpoints["decoder"], "hi")
    assert decoder.tokens[0] == "<bos>" and decoder.table == "target"
    with pytest.raises(ValueError):
        model_encoding(ckpt, "   ")


# ----------------------------------------------------------------------------- attention playground
def test_attention_row_is_the_softmax_of_beta_times_the_scores():
    scores = np.array([0.5, -1.0, 2.0, 0.0])
    for beta in (0.5, 1.0, 3.0):
        expected = np.exp(beta * scores) / np.exp(beta * scores).sum()
        assert np.allclose(attention_row(scores, beta, False), expected, atol=1e-6)
    assert attention_row(scores, 1.0, True).tolist() == [0.0, 0.0, 1.0, 0.0]


def test_scaling_by_root_d_keeps_the_scores_at_unit_size():
    sat = saturation([4, 64, 512], seed=0)
    assert np.allclose(sat.sqrt_d, np.sqrt([4, 64, 512]))
    assert np.allclose(sat.score_std / sat.sqrt_d, 1.0, atol=0.1)  # std(q·k) ≈ √d
    assert np.allclose(sat.scaled_std, 1.0, atol=0.1)
    assert sat.max_unscaled[-1] > 0.9 > sat.max_scaled[-1]  # unscaled softmax saturates as d grows


def test_the_four_score_functions():
    vectors = random_vectors(5, 3, seed=2)
    query, keys = vectors[0], vectors[1:]
    fns = score_functions(query, keys, seed=2)
    assert np.allclose(fns["dot"].scores, keys @ query)
    assert np.allclose(fns["scaled dot"].scores, keys @ query / math.sqrt(3))
    assert np.allclose(fns["general"].scores, [query @ fns["general"].params["W"] @ k for k in keys])
    p = fns["additive"].params
    assert np.allclose(fns["additive"].scores, [p["v"] @ np.tanh(p["W_q"] @ query + p["W_k"] @ k) for k in keys])
    for fn in fns.values():
        assert np.allclose(fn.weights, np.exp(fn.scores) / np.exp(fn.scores).sum(), atol=1e-6)


def test_a_sharp_soft_lookup_becomes_the_hard_lookup():
    keys, values = random_vectors(4, 2, seed=3), random_vectors(4, 3, seed=4)
    query = keys[2] * 3
    lookup = kv_lookup(query, keys, values, beta=200.0)
    assert lookup.best == int(np.argmax(keys @ query))
    assert np.allclose(lookup.retrieved, lookup.hard, atol=1e-4)
    soft = kv_lookup(query, keys, values, beta=1.0)
    assert np.allclose(soft.retrieved, soft.weights @ values)


@pytest.mark.parametrize("cross", [False, True])
def test_qkv_projection_matches_softmax_qkt_over_root_dk_times_v(cross):
    x, y = random_vectors(4, 4, seed=11), random_vectors(3, 4, seed=13)
    proj = qkv_projection(x, y, cross, seed=5)
    source = y if cross else x
    assert np.allclose(proj.q, x @ proj.w_q) and np.allclose(proj.k, source @ proj.w_k)
    logits = proj.q @ proj.k.T / math.sqrt(3)
    weights = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert np.allclose(proj.weights, weights, atol=1e-6) and np.allclose(proj.output, weights @ proj.v, atol=1e-6)
    assert proj.weights.shape == (4, 3 if cross else 4) and proj.max_error < 1e-6


# ----------------------------------------------------------------------------- masks
def test_look_ahead_mask_is_the_lower_triangle():
    assert np.array_equal(look_ahead_mask(4), np.tril(np.ones((4, 4), dtype=bool)))


def test_batch_masks_of_sentences_of_different_lengths():
    batch = whitespace_batch(["the cat sat", "a cat"])
    assert batch.ids.tolist() == [[4, 5, 6], [7, 5, 0]]
    assert batch.tokens == [["the", "cat", "sat"], ["a", "cat", "<pad>"]]
    masks = batch_masks(batch.ids)
    assert masks.padding.tolist() == [[True, True, True], [True, True, False]]
    assert np.array_equal(masks.combined, masks.subsequent[None] & masks.padding[:, None, :])
    with pytest.raises(ValueError):
        pad_sentences([[], []], [[], []])


def test_tokenizer_batch_pads_with_zero(char_tokenizer):
    batch = tokenizer_batch(char_tokenizer, ["abc", "a"])
    assert batch.ids.shape == (2, 3) and batch.ids[1, 1:].tolist() == [0, 0] and batch.tokens[1][1] == "<pad>"


def test_masked_softmax_gives_exact_zeros_and_rows_summing_to_one():
    mask = look_ahead_mask(5)
    demo = masked_softmax_demo(mask, seed=1)
    assert np.all(demo.masked[~mask] == 0.0)
    assert np.allclose(demo.masked.sum(-1), 1.0) and np.allclose(demo.unmasked.sum(-1), 1.0)
    row = demo.scores[2, :3]
    assert np.allclose(demo.masked[2, :3], np.exp(row) / np.exp(row).sum(), atol=1e-6)


# ----------------------------------------------------------------------------- norms, FFN
def test_layernorm_normalises_rows_and_batchnorm_columns():
    demo = norm_demo(3, 4, 5, seed=0)
    assert demo.layer_error < 1e-12 and demo.batch_error < 1e-12
    stats = norm_stats(demo)
    assert np.allclose(stats.row_mean_layer, 0, atol=1e-9) and np.allclose(stats.row_std_layer, 1, atol=1e-4)
    assert np.allclose(stats.col_mean_batch, 0, atol=1e-9) and np.allclose(stats.col_std_batch, 1, atol=1e-4)
    assert not np.allclose(stats.row_mean_batch, 0, atol=1e-3)


def test_ffn_is_a_one_by_one_convolution():
    demo = ffn_as_convolution(5, 4, 16, seed=3)
    assert demo.per_token.shape == (5, 4) and demo.max_error < 1e-10


# ----------------------------------------------------------------------------- schedule, smoothing
def test_noam_curve_follows_the_formula_and_peaks_at_the_end_of_warm_up():
    curve = noam_curve(10000, 512, 4000, max_points=50)
    assert len(curve.steps) <= 51 and curve.steps[-1] == 10000 and 4000 in curve.steps
    assert np.allclose(curve.lrs, [512**-0.5 * min(s**-0.5, s * 4000**-1.5) for s in curve.steps])
    assert curve.peak_step == 4000 and curve.peak_lr == pytest.approx(curve.lrs.max())
    assert noam_curve(100, 512, 4000).peak_step == 100  # warm-up longer than the run


def test_smoothing_example_spreads_epsilon_over_the_other_tokens():
    example = smoothing_example(0.2)
    v = len(example.vocab)
    for row, target in zip(example.matrix, example.targets):
        if target == 0:
            assert not row.any()  # a padding target counts for nothing
            continue
        assert row[target] == pytest.approx(0.8) and row[0] == 0.0
        assert np.allclose(np.delete(row, [0, target]), 0.2 / (v - 2))


# ----------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("score", SCORES)
def test_parameter_formulas_match_the_model(architecture, score):
    options = {"score": score, "positional": "learned"}
    if architecture != "encoder":
        options["tie_embeddings"] = score in ("dot", "general")
        options["output_bias"] = score in ("general", "additive")  # with and without tied weights
    model = tiny_model(architecture, **options)
    rows = parameter_table(model.parameter_counts(), model.config)
    assert [r.parameters for r in rows] == [r.expected for r in rows]
    assert sum(r.share for r in rows) == pytest.approx(1.0)
    assert sum(r.parameters for r in rows) == sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- the Learn pages' helpers
def test_projection_ffn_and_norm_helpers_agree_with_torch():
    x, y = random_vectors(4, 4, 1), random_vectors(3, 4, 2)
    for cross in (False, True):
        proj = qkv_projection(x, y, cross, 5)
        assert proj.weights.shape == (4, 3 if cross else 4) and proj.max_error < 1e-6  # float32 softmax
        np.testing.assert_allclose(proj.weights.sum(axis=1), 1.0, atol=1e-6)
    assert float(ffn_as_convolution(6, 4, 8, 1).max_error) < 1e-12
    demo = norm_demo(3, 2, 4, 9)
    assert float(demo.layer_error) < 1e-12 and float(demo.batch_error) < 1e-12


def test_batches_pad_with_zero_and_refuse_empty_input():
    batch = whitespace_batch(["a b", "c"])
    ids, tokens = batch.ids, batch.tokens
    assert ids.tolist() == [[4, 5], [6, 0]] and tokens[1] == ["c", "<pad>"]
    with pytest.raises(ValueError):
        pad_sentences([[]], [[]])
    masks = batch_masks(ids)
    assert masks.combined.shape == (2, 2, 2) and not masks.combined[1, 1, 1]


def test_model_encoding_rejects_text_without_tokens(checkpoints):
    with pytest.raises(ValueError):
        model_encoding(checkpoints["encoder-decoder"], "   ")
    encoding = model_encoding(checkpoints["encoder-decoder"], "hello")
    assert encoding.embeddings.shape == encoding.positional.shape == (5, 16)
    np.testing.assert_allclose(encoding.positional, sinusoidal_encoding(5, 16).numpy(), atol=1e-7)
