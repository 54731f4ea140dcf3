"""Attention functions and MultiHeadAttention, checked against hand computations and PyTorch."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from core.model.attention import MultiHeadAttention, attention, attention_weights, make_score

D, H, DK = 16, 4, 4


def scores_and_mask(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores (2, 3, 5) and a mask whose batch 1 has padded keys 3-4 and a fully masked row 2."""
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, 3, 5, generator=generator) * 3
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[1, :, 3:] = False
    mask[1, 2] = False
    return scores, mask


def entropy(weights: torch.Tensor) -> torch.Tensor:
    return -(weights * weights.clamp_min(1e-30).log()).sum(-1)


# ---------------------------------------------------------------- attention_weights
@pytest.mark.parametrize("hard", [False, True])
def test_rows_sum_to_one_masked_cells_zero_and_fully_masked_rows_zero(hard: bool) -> None:
    scores, mask = scores_and_mask()
    weights = attention_weights(scores, mask, hard=hard)
    assert weights.dtype == torch.float32
    assert torch.all(weights[~mask] == 0)
    assert torch.all(weights[1, 2] == 0) and not weights.isnan().any()
    live = mask.any(-1)
    torch.testing.assert_close(weights.sum(-1)[live], torch.ones(int(live.sum())), atol=1e-6, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_low_precision_scores_give_finite_float32_weights(dtype: torch.dtype) -> None:
    scores, mask = scores_and_mask()
    weights = attention_weights(scores.to(dtype) * 1000, mask)  # large enough to overflow fp16 if exponentiated
    assert weights.dtype == torch.float32 and torch.isfinite(weights).all()
    assert torch.all(weights[~mask] == 0) and torch.all(weights[1, 2] == 0)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3), atol=1e-6, rtol=0)


def test_all_false_mask_gives_zeros_not_nan() -> None:
    scores = torch.randn(4, 6)
    for hard in (False, True):
        weights = attention_weights(scores, torch.zeros(4, 6, dtype=torch.bool), hard=hard)
        assert torch.equal(weights, torch.zeros(4, 6))


def test_weights_equal_softmax_of_beta_times_scores() -> None:
    scores, mask = scores_and_mask()
    for beta in (0.25, 1.0, 3.0):
        expected = torch.softmax((beta * scores).masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)
        torch.testing.assert_close(attention_weights(scores, mask, temperature=beta), expected, atol=1e-6, rtol=0)


def test_beta_zero_gives_uniform_rows_over_allowed_keys() -> None:
    scores, mask = scores_and_mask()
    weights = attention_weights(scores, mask, temperature=0.0)
    allowed = mask.float()
    expected = allowed / allowed.sum(-1, keepdim=True).clamp_min(1)
    torch.testing.assert_close(weights, expected, atol=1e-7, rtol=0)


def test_larger_beta_gives_lower_entropy() -> None:
    scores = torch.randn(8, 10, generator=torch.Generator().manual_seed(1))
    entropies = [entropy(attention_weights(scores, temperature=beta)) for beta in (0.0, 0.5, 1.0, 2.0, 8.0)]
    for hotter, colder in zip(entropies, entropies[1:]):
        assert torch.all(colder < hotter)
    torch.testing.assert_close(entropies[0], torch.full((8,), math.log(10)), atol=1e-5, rtol=0)


@pytest.mark.parametrize("beta", [-0.5, float("nan"), float("inf"), -float("inf")])
def test_negative_or_non_finite_temperature_is_rejected(beta: float) -> None:
    q = torch.randn(1, 3, 4)
    with pytest.raises(ValueError, match="temperature"):
        attention_weights(torch.randn(3, 3), temperature=beta)
    with pytest.raises(ValueError, match="temperature"):
        attention(q, q, q, temperature=beta)
    with pytest.raises(ValueError, match="temperature"):
        MultiHeadAttention(D, H, cross=False)(torch.randn(1, 3, D), temperature=beta)


def test_hard_attention_is_one_hot_at_the_argmax_of_allowed_scores() -> None:
    scores, mask = scores_and_mask(seed=3)
    weights = attention_weights(scores, mask, hard=True)
    assert set(weights.unique().tolist()) <= {0.0, 1.0}
    best = scores.masked_fill(~mask, float("-inf")).argmax(-1)
    for b in range(2):
        for q in range(3):
            if not mask[b, q].any():
                continue
            assert weights[b, q].sum() == 1 and weights[b, q, best[b, q]] == 1


# ---------------------------------------------------------------- attention()
def test_attention_equals_softmax_qk_over_sqrt_d_times_v_by_hand() -> None:
    generator = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 3, 8, generator=generator), torch.randn(2, 5, 8, generator=generator)
    v = torch.randn(2, 5, 6, generator=generator)
    output, weights = attention(q, k, v)
    for b in range(2):
        for i in range(3):
            logits = [float(q[b, i] @ k[b, j]) / math.sqrt(8) for j in range(5)]
            top = max(logits)
            exp = [math.exp(x - top) for x in logits]
            row = torch.tensor([e / sum(exp) for e in exp])
            torch.testing.assert_close(weights[b, i], row, atol=1e-6, rtol=0)
            torch.testing.assert_close(output[b, i], row @ v[b], atol=1e-6, rtol=0)


def test_attention_with_mask_ignores_masked_values() -> None:
    q, k, v = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    mask = torch.tensor([[True, True, False]])
    output, weights = attention(q, k, v, mask)
    changed = v.clone()
    changed[0, 2] = 1e6
    assert torch.equal(attention(q, k, changed, mask)[0], output)
    assert torch.all(weights[..., 2] == 0)


# ---------------------------------------------------------------- score functions
def test_score_functions_match_their_formulas() -> None:
    torch.manual_seed(0)
    q, k = torch.randn(2, H, 3, DK), torch.randn(2, H, 5, DK)
    dot = torch.einsum("bhqd,bhkd->bhqk", q, k)
    torch.testing.assert_close(make_score("dot", H, DK)(q, k), dot)
    torch.testing.assert_close(make_score("scaled_dot", H, DK)(q, k), dot / math.sqrt(DK))
    general = make_score("general", H, DK)
    torch.testing.assert_close(general(q, k), dot)  # initialised to the identity
    with torch.no_grad():
        general.weight.copy_(torch.randn(H, DK, DK))
    torch.testing.assert_close(general(q, k), torch.einsum("bhqd,hde,bhke->bhqk", q, general.weight, k))
    additive = make_score("additive", H, DK)
    got = additive(q, k)
    for b, h, i, j in [(0, 0, 0, 0), (1, 3, 2, 4), (0, 2, 1, 3)]:
        hidden = torch.tanh(q[b, h, i] @ additive.w_query[h] + k[b, h, j] @ additive.w_key[h])
        torch.testing.assert_close(got[b, h, i, j], hidden @ additive.v[h])


def test_unknown_score_function_is_rejected() -> None:
    with pytest.raises(ValueError, match="cosine"):
        make_score("cosine", H, DK)


# ---------------------------------------------------------------- against nn.MultiheadAttention
def paired_modules(cross: bool, seed: int = 0) -> tuple[nn.MultiheadAttention, MultiHeadAttention]:
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    with torch.no_grad():  # random biases so that a wrong bias split would show
        ref.in_proj_bias.normal_()
        ref.out_proj.bias.normal_()
    ours = MultiHeadAttention(D, H, cross=cross).eval()
    with torch.no_grad():
        if cross:
            ours.q_proj.weight.copy_(ref.in_proj_weight[:D])
            ours.q_proj.bias.copy_(ref.in_proj_bias[:D])
            ours.kv_proj.weight.copy_(ref.in_proj_weight[D:])
            ours.kv_proj.bias.copy_(ref.in_proj_bias[D:])
        else:
            ours.qkv_proj.weight.copy_(ref.in_proj_weight)
            ours.qkv_proj.bias.copy_(ref.in_proj_bias)
        ours.out_proj.load_state_dict(ref.out_proj.state_dict())
    return ref, ours


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
@pytest.mark.parametrize("padded", [False, True], ids=["no-padding", "key-padding"])
def test_weights_and_outputs_equal_nn_multihead_attention(cross: bool, padded: bool) -> None:
    ref, ours = paired_modules(cross)
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(3, 6, D, generator=generator)
    memory = torch.randn(3, 4, D, generator=generator) if cross else x
    ignore = torch.zeros(3, memory.size(1), dtype=torch.bool)  # PyTorch: True = ignore
    if padded:
        ignore[1, -2:] = True
        ignore[2, -1:] = True
    with torch.no_grad():
        ref_out, ref_weights = ref(x, memory, memory, key_padding_mask=ignore if padded else None,
                                   need_weights=True, average_attn_weights=False)
        mask = (~ignore).unsqueeze(1) if padded else None  # ours: True = may attend, (B, 1, Tk)
        explicit = ours(x, memory if cross else None, mask, need_weights=True)
        fused = ours(x, memory if cross else None, mask)
    assert explicit.weights.shape == ref_weights.shape == (3, H, 6, memory.size(1))
    torch.testing.assert_close(explicit.weights, ref_weights, atol=1e-6, rtol=0)
    torch.testing.assert_close(explicit.output, ref_out, atol=1e-6, rtol=0)
    torch.testing.assert_close(fused.output, ref_out, atol=1e-6, rtol=0)
    assert fused.weights is None and fused.scores is None


def test_cross_attention_needs_memory() -> None:
    with pytest.raises(ValueError, match="memory"):
        MultiHeadAttention(D, H, cross=True)(torch.randn(1, 3, D))


# ---------------------------------------------------------------- head mask
def manual_self_attention(module: MultiHeadAttention, x: torch.Tensor, dropped_head: int) -> torch.Tensor:
    """Per-head attention by hand, that head's slice of the concatenation zeroed, then out_proj."""
    q, k, v = module.qkv_proj(x).split(D, dim=-1)  # (B, T, D) each
    heads = []
    for h in range(H):
        part = slice(h * DK, (h + 1) * DK)
        weights = torch.softmax(q[..., part] @ k[..., part].transpose(1, 2) / math.sqrt(DK), dim=-1)
        heads.append(weights @ v[..., part])
    concat = torch.cat(heads, dim=-1)  # (B, T, D)
    concat[..., dropped_head * DK : (dropped_head + 1) * DK] = 0
    return module.out_proj(concat)


@pytest.mark.parametrize("head", [0, 2])
def test_head_mask_zeroes_that_heads_slice_before_out_proj(head: int) -> None:
    torch.manual_seed(0)
    module = MultiHeadAttention(D, H, cross=False).eval()
    x = torch.randn(2, 5, D)
    head_mask = torch.ones(H)
    head_mask[head] = 0
    with torch.no_grad():
        expected = manual_self_attention(module, x, head)
        full = module(x, need_weights=True)
        knocked = module(x, head_mask=head_mask, need_weights=True)
        fused = module(x, head_mask=head_mask)
    torch.testing.assert_close(knocked.output, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(fused.output, expected, atol=1e-6, rtol=0)
    assert not torch.allclose(full.output, expected, atol=1e-4)
    assert torch.equal(knocked.weights, full.weights)  # the maps themselves are untouched
