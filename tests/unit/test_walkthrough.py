"""core.lessons.walkthrough: every step-by-step number equals the model's own forward pass."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from core import explain, load_checkpoint, sinusoidal_encoding
from core.lessons.walkthrough import trace_translation
from core.model.layers import LayerCall

TRANSLATION = Path(__file__).resolve().parents[2] / "assets" / "checkpoints" / "translation.safetensors"
TEXT = "the red car"


@pytest.fixture(scope="module")
def ckpt():
    return load_checkpoint(TRANSLATION)


@pytest.fixture(scope="module")
def trace(ckpt):
    return trace_translation(ckpt, TEXT, head=1)


def test_attention_steps_follow_the_formula(trace):
    head = trace.encoder_head
    np.testing.assert_allclose(head.dot, head.q @ head.k.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(head.scaled, head.dot / math.sqrt(trace.d_k), rtol=1e-6)
    expected = np.exp(head.scaled - head.scaled.max(-1, keepdims=True))
    np.testing.assert_allclose(head.weights, expected / expected.sum(-1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(head.output, head.weights @ head.v, atol=1e-5)
    np.testing.assert_allclose(head.weights.sum(-1), 1.0, atol=1e-6)


def test_maps_equal_the_models_own_maps(ckpt, trace):
    result = explain(ckpt, TEXT)
    assert trace.source_tokens == result.source_tokens and trace.target_tokens == result.target_tokens
    assert trace.output_text == result.prediction.text
    np.testing.assert_allclose(trace.encoder_head.weights, result.attention["encoder"][0, 1], atol=1e-5)
    np.testing.assert_allclose(trace.decoder_head.weights, result.attention["decoder"][0, 1], atol=1e-5)
    np.testing.assert_allclose(trace.cross_weights, result.attention["cross"][-1, 1], atol=1e-6)


def test_decoder_head_is_causal(trace):
    weights, mask = trace.decoder_head.weights, trace.decoder_head.mask
    assert (weights[np.triu_indices_from(weights, 1)] == 0).all()
    assert (mask == np.tril(np.ones_like(mask))).all()


def test_layer_stages_equal_the_encoder_layer(ckpt, trace):
    model = ckpt.model
    embedded = torch.from_numpy(trace.embedded).unsqueeze(0)  # (1, S, D)
    with torch.inference_mode():
        out, _ = model.encoder_layers[0](embedded, None, LayerCall())
        layer = model.encoder_layers[0]
        projected = layer.self_attn.out_proj(torch.from_numpy(trace.heads_concat))
    np.testing.assert_allclose(trace.layer_out, out[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(trace.attention_out, projected.numpy(), atol=1e-6)
    assert trace.ffn_hidden.min() >= 0 and trace.ffn_hidden.shape[1] == trace.d_ff


def test_embeddings_are_scaled_rows_plus_the_sinusoid(ckpt, trace):
    ids = ckpt.source_tokenizer.encode(TEXT).ids
    rows = ckpt.model.src_embed.weight.detach()[ids].numpy() * math.sqrt(trace.d_model)
    np.testing.assert_allclose(trace.token_embedding, rows, atol=1e-5)
    table = sinusoidal_encoding(len(ids), trace.d_model, ckpt.config.pe_base).numpy()
    np.testing.assert_allclose(trace.positional, table, atol=1e-5)
    np.testing.assert_allclose(trace.embedded, trace.token_embedding + trace.positional, atol=1e-6)


def test_memory_and_output_distribution(ckpt, trace):
    with torch.inference_mode():
        memory, _, _ = ckpt.model.encode(torch.tensor([ckpt.source_tokenizer.encode(TEXT).ids]))
    np.testing.assert_allclose(trace.memory, memory[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(trace.probabilities.sum(-1), 1.0, atol=1e-5)
    greedy_choices = [trace.target_vocab[i] for i in trace.probabilities.argmax(-1)]
    assert tuple(greedy_choices) == trace.generated_tokens
    best, probability = trace.top_candidates(0, k=1)[0]
    assert best == trace.generated_tokens[0] and 0 < probability <= 1


@pytest.mark.parametrize("bad", [dict(text="   "), dict(head=99)])
def test_refuses_what_it_cannot_trace(ckpt, bad):
    with pytest.raises(ValueError):
        trace_translation(ckpt, **{"text": TEXT, **bad})


def test_refuses_other_architectures():
    ckpt = load_checkpoint(TRANSLATION.with_name("sentiment.safetensors"))
    with pytest.raises(ValueError, match="encoder-decoder"):
        trace_translation(ckpt, "good")


def test_the_walkthrough_reads_the_forward_pass_trace_not_private_model_parts(ckpt, trace):
    import inspect
    import re

    from core.lessons import projections, walkthrough
    from core.text.tokenizer import BOS_ID
    for module in (walkthrough, projections):
        assert not re.search(r"\b(model|layer)\._[a-z]", inspect.getsource(module)), module.__name__
    src = torch.tensor([ckpt.source_tokenizer.encode(TEXT).ids])
    tgt = torch.tensor([[BOS_ID, *ckpt.target_tokenizer.encode(" ".join(trace.generated_tokens[:-1])).ids]])
    with torch.inference_mode():
        out = ckpt.model(src, tgt, record=["decoder.0.q", "encoder.0.resid_out", "encoder.embed"])
    assert tgt.shape[1] == len(trace.target_tokens)
    np.testing.assert_array_equal(trace.embedded, out.trace["encoder.embed"][0].numpy())  # read from the trace
    np.testing.assert_allclose(trace.decoder_head.q, out.trace["decoder.0.q"][0, 1].numpy(), atol=1e-5)  # head 1
    np.testing.assert_allclose(trace.layer_out, out.trace["encoder.0.resid_out"][0].numpy(), atol=1e-5)
