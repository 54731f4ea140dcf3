"""The code the Lesson sets beside its stages (core.lessons.implementations): each step's source is the code in the
repository at the path and line it names, and it computes what the paper's model computes (its layers are instances
of the classes named; the attention() shown gives its multi-head attention's weights and output)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from core import attention, lessons, subsequent_mask
from tests.helpers.tiny import tiny_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("step", lessons.CODE_STEPS)
def test_each_source_is_the_file_at_its_path_and_line(step):
    code = lessons.implementation(step)
    lines = (ROOT / code.path).read_text().splitlines(keepends=True)
    count = len(code.source.splitlines())
    assert textwrap.dedent("".join(lines[code.line - 1:code.line - 1 + count])) == code.source
    assert code.name.startswith(code.path.removesuffix(".py").replace("/", ".") + ".")
    header = next(line for line in code.source.splitlines() if line.startswith(("def ", "class ")))
    assert header.split()[1].split("(")[0].rstrip(":") == code.name.rsplit(".", 1)[1]  # the code named, whole


def test_the_annotated_transformer_names_are_its_own():
    names = {lessons.implementation(s).annotated for s in lessons.CODE_STEPS} - {None}
    assert {"attention()", "MultiHeadedAttention", "SublayerConnection", "PositionwiseFeedForward",
            "subsequent_mask()", "PositionalEncoding", "Generator", "greedy_decode()"} <= names


def test_the_code_shown_is_what_the_paper_model_computes():
    """The classes named are the model's own layers, and the attention() shown gives the very weights and output
    its multi-head attention computes from the same queries, keys, values and mask."""
    from core.model.layers import FeedForward, SublayerConnection

    model = tiny_model()  # 2 + 2 layers, 4 heads
    layer = model.encoder_layers[0]
    assert lessons.implementation("add_norm").name == "core.model.layers.SublayerConnection"
    assert isinstance(layer, SublayerConnection) and isinstance(layer.ff, FeedForward)
    assert type(layer.self_attn).__qualname__ == lessons.implementation("projections").name.rsplit(".", 1)[1]
    torch.manual_seed(0)
    x, mask = torch.randn(1, 5, 16), subsequent_mask(5)  # (B, T, D), (T, T)
    with torch.no_grad():
        result = layer.self_attn(x, None, mask, need_weights=True)
        q, k, v = layer.self_attn._project(x, None, None)  # (B, H, T, dk)
        output, weights = attention(q, k, v, mask)
    torch.testing.assert_close(weights, result.weights)
    merged = output.transpose(1, 2).reshape(1, 5, 16)  # heads concatenated, (B, T, H·dk)
    torch.testing.assert_close(layer.self_attn.out_proj(merged), result.output)


def test_an_unknown_step_is_refused():
    with pytest.raises(KeyError):
        lessons.implementation("backprop")
