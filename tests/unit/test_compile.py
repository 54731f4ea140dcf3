"""``--compile``: the training forward of every architecture is one graph for ``torch.compile`` (a graph break,
such as reading a mask or the ids back to the host, splits the step and made the compiled base model slower
than ``nn.Transformer`` compiled on an H200), with the same numbers as the eager forward."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

from tests.helpers.tiny import random_ids, tiny_model


def _inputs(architecture: str) -> tuple:
    src, tgt = random_ids(2, 6), random_ids(2, 5)
    src[0, -2:], tgt[1, -1:] = 0, 0  # padding in both, so every mask is built
    return {"encoder-decoder": (src, tgt), "encoder": (src, None), "decoder": (None, tgt)}[architecture]


@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder", "decoder"])
def test_the_training_forward_compiles_without_a_graph_break(architecture: str) -> None:
    model = tiny_model(architecture).train()
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(*_inputs(architecture))
    assert explained.graph_break_count == 0, [str(b.reason).splitlines()[0] for b in explained.break_reasons]
    assert explained.graph_count == 1


@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder", "decoder"])
def test_the_traced_forward_gives_the_eager_logits(architecture: str) -> None:
    model = tiny_model(architecture).eval()
    args = _inputs(architecture)
    torch._dynamo.reset()
    traced = torch.compile(model, backend="eager", fullgraph=True)  # dynamo's graph, run by eager kernels
    with torch.no_grad():
        assert torch.equal(traced(*args).logits, model(*args).logits)
