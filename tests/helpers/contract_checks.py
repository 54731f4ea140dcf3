"""One check every model on the contract must pass — ours in its three architectures and every family.

``check_contract(model, src, tgt)`` runs a model's ``forward`` with maps and asserts what
``core/model/contract.py`` promises: a config that answers :class:`ModelSpec`, maps per kind of shape
(L, B, H, Tq, Tk) with rows summing to 1, masked cells exactly 0, and every control honoured
(β, hard attention, the causal toggle, a head knocked out). Family tests call it on their tiny models.
"""

from __future__ import annotations

import torch

from core.model.contract import AttentionControls, ModelOutput, ModelSpec


def _run(model, src, tgt, controls: AttentionControls = AttentionControls()) -> ModelOutput:
    with torch.inference_mode():
        return model(src, tgt, controls=controls, return_attention=True, return_scores=True)


def check_contract(model: torch.nn.Module, src: torch.Tensor | None, tgt: torch.Tensor | None) -> None:
    """Assert the contract on ``model`` with ids ``src`` (B, S) / ``tgt`` (B, T) as its architecture needs."""
    spec = model.config
    assert isinstance(spec, ModelSpec)
    out = _run(model, src, tgt)
    kinds = {key for key in out.scores if "/" not in key}
    assert set(out.attention) == set(spec.attention_kinds) == kinds
    for key in set(out.scores) - kinds:  # the parts a family's scores are the sum of: "<kind>/<part>"
        assert key.split("/")[0] in kinds and out.scores[key].shape == out.scores[key.split("/")[0]].shape
    lengths = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}
    for kind, maps in out.attention.items():
        queries, keys = lengths[kind]
        assert maps.shape == (spec.n_layers(kind), queries.size(0), spec.n_heads, queries.size(1), keys.size(1))
        assert maps.dtype == torch.float32
        torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]), atol=1e-5, rtol=0)
    if "decoder" in out.attention:  # the look-ahead mask: the future is exactly 0, and the toggle lifts it
        assert bool((out.attention["decoder"].triu(1) == 0).all())
        peek = _run(model, src, tgt, AttentionControls(causal=False))
        assert bool((peek.attention["decoder"].triu(1) > 0).any())
    kind = spec.attention_kinds[0]
    hard = _run(model, src, tgt, AttentionControls(hard=True)).attention[kind]
    assert bool(((hard == 0) | (hard == 1)).all()) and bool((hard.sum(-1) == 1).all())
    sharp = _run(model, src, tgt, AttentionControls(temperature=4.0)).attention[kind]
    # β > 1 sharpens every row of the first layer (the later layers read what the sharper attention made)
    assert bool((sharp[0].amax(-1) >= out.attention[kind][0].amax(-1) - 1e-6).all())
    mask = torch.ones(spec.n_layers(kind), spec.n_heads)
    mask[0, 0] = 0.0
    knocked = _run(model, src, tgt, AttentionControls(head_mask={kind: mask}))
    assert not torch.equal(knocked.logits, out.logits)  # the head's output is gone
