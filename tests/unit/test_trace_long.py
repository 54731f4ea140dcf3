"""A long SmolLM2 input through the trace: one head of a 4,096-token explanation equals ``transformers`` eager.

The reference runs eager attention with ``output_attentions=True`` on the same GGUF (transformers' own reader and
dequantizer), cut to the first two layers: a layer's maps depend only on the layers before it, and two layers' maps
of 4,096 tokens fit this machine where thirty would take 18 GB. Marked slow (about a minute on 2 cores).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from tests.helpers.pretrained_files import installed

TOKENS, LAYER, HEAD = 4096, 1, 4


@pytest.mark.slow
def test_one_head_of_a_4096_token_smollm2_input_equals_transformers_eager():
    transformers = pytest.importorskip("transformers")
    entry = installed("SmolLM2-135M-Instruct")
    model = core.load_pretrained(entry.path)
    text = "The animal didn't cross the street because it was too tired, and the river ran on. " * 300
    exp = core.explain(model, text)
    ids = model.tokenizer.encode(text).ids[: len(exp.target_tokens)]
    assert exp.on_demand and len(exp.target_tokens) >= TOKENS
    ids = ids[:TOKENS]
    reference = transformers.AutoModelForCausalLM.from_pretrained(
        str(entry.path.parent), gguf_file=entry.path.name, dtype=torch.float32, attn_implementation="eager").eval()
    reference.model.layers = reference.model.layers[: LAYER + 1]
    reference.config.num_hidden_layers = LAYER + 1
    with torch.inference_mode():
        theirs = reference(torch.tensor([ids]), output_attentions=True).attentions[LAYER][0, HEAD].numpy()
    ours = exp.attention["decoder"][LAYER, HEAD, :TOKENS, :TOKENS]
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert (np.triu(ours, 1) == 0).all()
