"""Transformer: attention maps, fused vs explicit paths, per-call controls and input checks."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

from core.config import ARCHITECTURES, SCORES, ModelConfig
from core.budget import parameter_count
from core.model.layers import LayerCall
from core.model.contract import AttentionControls
from core.model.transformer import Transformer
from tests.helpers.tiny import BOS, PAD, random_ids, tiny_model

COMBOS = list(itertools.product(ARCHITECTURES, SCORES, ("post", "pre")))
KINDS = {"encoder-decoder": ("encoder", "decoder", "cross"), "encoder": ("encoder",), "decoder": ("decoder",)}


def padded_batch(architecture: str) -> dict[str, torch.Tensor]:
    """src (3, 6) with padding in row 1; tgt (3, 5) starting with <bos>, padding in rows 1 and 2."""
    src = random_ids(3, 6, seed=1)
    src[1, 4:] = PAD
    tgt = random_ids(3, 5, seed=2)
    tgt[:, 0] = BOS
    tgt[1, 3:] = PAD
    tgt[2, 4:] = PAD
    batch = {}
    if architecture != "decoder":
        batch["src"] = src
    if architecture != "encoder":
        batch["tgt"] = tgt
    return batch


def allowed(kind: str, batch: dict[str, torch.Tensor], causal: bool = True) -> torch.Tensor:
    """(B, Tq, Tk) True where the query may attend to the key."""
    if kind == "encoder":
        src = batch["src"]
        return (src != PAD)[:, None, :].expand(-1, src.size(1), -1)
    tgt = batch["tgt"]
    keys = batch["src"] if kind == "cross" else tgt
    mask = (keys != PAD)[:, None, :].expand(-1, tgt.size(1), -1)
    if kind == "decoder" and causal:
        mask = mask & torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool).tril()
    return mask


def state_snapshot(model: Transformer) -> dict:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def attribute_snapshot(model: Transformer) -> dict:
    """Every module's attributes, one level deep (so new parameters, buffers or submodules show too)."""
    return {name: {k: dict(v) if isinstance(v, dict) else v for k, v in vars(module).items()}
            for name, module in model.named_modules()}


# ---------------------------------------------------------------- attention maps
@pytest.mark.parametrize(("architecture", "score", "norm"), COMBOS)
def test_attention_rows_sum_to_one_and_masked_cells_are_exactly_zero(architecture, score, norm) -> None:
    model = tiny_model(architecture, score=score, norm=norm)
    batch = padded_batch(architecture)
    with torch.no_grad():
        out = model(**batch, return_attention=True)
    assert tuple(out.attention) == KINDS[architecture]
    for kind, maps in out.attention.items():
        mask = allowed(kind, batch)[None, :, None]  # (1, B, 1, Tq, Tk)
        assert maps.dtype == torch.float32 and torch.isfinite(maps).all()
        assert torch.all(maps.masked_select(~mask.expand_as(maps)) == 0), kind
        sums = maps.sum(-1)
        live = mask.any(-1).expand_as(sums)
        torch.testing.assert_close(sums[live], torch.ones_like(sums[live]), atol=1e-5, rtol=0)
        assert torch.all(sums[~live] == 0)
    if "decoder" in out.attention:
        assert torch.all(out.attention["decoder"].triu(diagonal=1) == 0)
    assert torch.isfinite(out.logits).all()


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_attention_shapes_are_layers_batch_heads_queries_keys(architecture: str) -> None:
    model = tiny_model(architecture, n_encoder_layers=3, n_decoder_layers=2)
    batch = padded_batch(architecture)
    with torch.no_grad():
        out = model(**batch, return_attention=True)
    expected = {"encoder": (3, 3, 4, 6, 6), "decoder": (2, 3, 4, 5, 5), "cross": (2, 3, 4, 5, 6)}
    assert {k: tuple(v.shape) for k, v in out.attention.items()} == {k: expected[k] for k in KINDS[architecture]}
    assert out.scores is None


@pytest.mark.parametrize(("architecture", "score", "norm"), COMBOS)
def test_fused_and_explicit_paths_give_the_same_logits(architecture, score, norm) -> None:
    model = tiny_model(architecture, score=score, norm=norm, seed=3)
    batch = padded_batch(architecture)
    head_mask = {kind: torch.tensor([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.5]]) for kind in KINDS[architecture]}
    for controls in (AttentionControls(), AttentionControls(temperature=0.5, head_mask=head_mask)):
        with torch.no_grad():
            fused = model(**batch, controls=controls)
            explicit = model(**batch, controls=controls, return_attention=True)
        assert fused.attention is None and fused.scores is None
        torch.testing.assert_close(fused.logits, explicit.logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("architecture", "score"), list(itertools.product(ARCHITECTURES, SCORES)))
def test_softmax_of_returned_scores_equals_the_weights(architecture: str, score: str) -> None:
    model = tiny_model(architecture, score=score, seed=4)
    batch = padded_batch(architecture)
    with torch.no_grad():
        out = model(**batch, controls=AttentionControls(temperature=1.7), return_attention=True, return_scores=True)
    for kind in KINDS[architecture]:
        scores, weights = out.scores[kind], out.attention[kind]
        assert scores.shape == weights.shape
        mask = allowed(kind, batch)[None, :, None].expand_as(scores)
        expected = scores.masked_fill(~mask, float("-inf")).softmax(-1).nan_to_num(0.0)
        torch.testing.assert_close(weights, expected, atol=1e-6, rtol=0)


def test_scores_alone_still_give_logits_and_no_weights() -> None:
    model = tiny_model()
    with torch.no_grad():
        out = model(**padded_batch("encoder-decoder"), return_scores=True)
    assert out.attention is None and set(out.scores) == {"encoder", "decoder", "cross"}


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_hard_attention_is_one_hot_at_the_argmax_of_the_scores(architecture: str) -> None:
    model = tiny_model(architecture, seed=5)
    batch = padded_batch(architecture)
    with torch.no_grad():
        out = model(**batch, controls=AttentionControls(hard=True), return_attention=True, return_scores=True)
    for kind in KINDS[architecture]:
        weights, scores = out.attention[kind], out.scores[kind]
        mask = allowed(kind, batch)[None, :, None].expand_as(scores)
        assert set(weights.unique().tolist()) <= {0.0, 1.0}
        live = mask.any(-1)
        assert torch.all(weights.sum(-1) == live.float())
        best = scores.masked_fill(~mask, float("-inf")).argmax(-1, keepdim=True)
        assert torch.all(weights.gather(-1, best).squeeze(-1)[live] == 1)


# ---------------------------------------------------------------- controls
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_controls_never_mutate_the_model(architecture: str) -> None:
    model = tiny_model(architecture, dropout=0.3)
    before_state, before_attrs = state_snapshot(model), attribute_snapshot(model)
    batch = padded_batch(architecture)
    head_mask = {kind: torch.zeros(2, 4) for kind in KINDS[architecture]}
    for controls in (AttentionControls(causal=False, padding=False, temperature=0.0, hard=True, head_mask=head_mask),
                     AttentionControls(temperature=5.0)):
        with torch.no_grad():
            model(**batch, controls=controls, return_attention=True, return_scores=True)
            model(**batch, controls=controls)
    assert attribute_snapshot(model) == before_attrs
    after = model.state_dict()
    assert after.keys() == before_state.keys()
    assert all(torch.equal(after[k], v) for k, v in before_state.items())
    assert not model.training


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder"])
def test_causal_off_lets_queries_see_the_future(architecture: str) -> None:
    model = tiny_model(architecture, seed=6)
    batch = padded_batch(architecture)
    with torch.no_grad():
        on = model(**batch, return_attention=True)
        off = model(**batch, controls=AttentionControls(causal=False), return_attention=True)
    above = torch.ones(5, 5, dtype=torch.bool).triu(1)
    assert torch.all(on.attention["decoder"][..., above] == 0)
    assert torch.all(off.attention["decoder"][:, 0][..., above] > 0)  # row 0 has no padding
    assert not torch.allclose(on.logits, off.logits, atol=1e-4)
    mask = allowed("decoder", batch, causal=False)[None, :, None].expand_as(off.attention["decoder"])
    assert torch.all(off.attention["decoder"][~mask] == 0)  # padding still applies


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_padding_off_changes_only_padded_rows(architecture: str) -> None:
    model = tiny_model(architecture, seed=7)
    batch = padded_batch(architecture)
    with torch.no_grad():
        on = model(**batch).logits
        off = model(**batch, controls=AttentionControls(padding=False)).logits
    assert not torch.allclose(on[1], off[1], atol=1e-4)
    torch.testing.assert_close(on[0], off[0], atol=1e-5, rtol=0)


@pytest.mark.parametrize(("kind", "layer", "head"), [("encoder", 0, 1), ("decoder", 1, 3), ("cross", 0, 2)])
def test_knocking_out_a_head_changes_outputs_but_not_its_own_maps(kind: str, layer: int, head: int) -> None:
    model = tiny_model(seed=8)
    batch = padded_batch("encoder-decoder")
    mask = torch.ones(2, 4)
    mask[layer, head] = 0
    with torch.no_grad():
        full = model(**batch, return_attention=True)
        knocked = model(**batch, controls=AttentionControls(head_mask={kind: mask}), return_attention=True)
    assert not torch.allclose(full.logits, knocked.logits, atol=1e-4)
    assert torch.equal(full.attention[kind][: layer + 1], knocked.attention[kind][: layer + 1])


def test_all_ones_head_mask_changes_nothing() -> None:
    model = tiny_model(seed=9)
    batch = padded_batch("encoder-decoder")
    ones = {kind: torch.ones(2, 4) for kind in KINDS["encoder-decoder"]}
    with torch.no_grad():
        torch.testing.assert_close(model(**batch).logits,
                                   model(**batch, controls=AttentionControls(head_mask=ones)).logits)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (3, 4), (1, 2, 4)])
def test_head_mask_of_the_wrong_shape_is_rejected(shape: tuple[int, ...]) -> None:
    model = tiny_model()
    with pytest.raises(ValueError, match="head_mask"):
        model(**padded_batch("encoder-decoder"), controls=AttentionControls(head_mask={"cross": torch.ones(shape)}))


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_dropout_in_eval_mode_is_deterministic(architecture: str) -> None:
    model = tiny_model(architecture, dropout=0.5)
    batch = padded_batch(architecture)
    with torch.no_grad():
        first = model(**batch, return_attention=True)
        second = model(**batch, return_attention=True)
        fused = model(**batch)
    assert torch.equal(first.logits, second.logits)
    torch.testing.assert_close(first.logits, fused.logits, atol=1e-5, rtol=0)
    assert all(torch.equal(first.attention[k], second.attention[k]) for k in first.attention)


# ---------------------------------------------------------------- heads, loss and input checks
def test_classifier_gives_class_scores_and_survives_an_all_padding_row() -> None:
    model = tiny_model("encoder")
    src = padded_batch("encoder")["src"]
    src[2] = PAD
    with torch.no_grad():
        out = model(src, return_attention=True)
        fused = model(src)
    assert out.logits.shape == (3, 3)
    assert torch.isfinite(out.logits).all() and torch.isfinite(fused.logits).all()
    assert torch.all(out.attention["encoder"][:, 2] == 0)
    torch.testing.assert_close(out.logits, fused.logits, atol=1e-5, rtol=0)


def test_loss_is_cross_entropy_ignoring_padding_targets() -> None:
    model = tiny_model("decoder")
    tgt = padded_batch("decoder")["tgt"]
    targets = torch.cat([tgt[:, 1:], torch.full((3, 1), 2)], dim=1).masked_fill(tgt == PAD, PAD)
    with torch.no_grad():
        out = model(tgt=tgt, targets=targets)
    keep = targets != PAD
    expected = F.cross_entropy(out.logits[keep], targets[keep])
    torch.testing.assert_close(out.loss, expected)


def test_tied_embeddings_share_one_parameter_counted_once() -> None:
    model = tiny_model("decoder", tie_embeddings=True)
    assert model.lm_head.weight is model.tgt_embed.weight
    assert model.parameter_counts()["tgt_embed"] == 11 * 16 and "lm_head" not in model.parameter_counts()


@pytest.mark.parametrize(
    "tgt",
    [torch.zeros(1, 0, dtype=torch.long), torch.tensor([[1, 11]]), torch.tensor([[1, -1]]),
     torch.tensor([[1.0, 2.0]]), torch.ones(1, 25, dtype=torch.long), torch.tensor([1, 2])],
    ids=["empty", "id-too-large", "negative-id", "float-ids", "longer-than-max-len", "1d"],
)
def test_invalid_token_ids_are_rejected(tgt: torch.Tensor) -> None:
    with pytest.raises(ValueError):
        tiny_model("decoder")(tgt=tgt)


@pytest.mark.parametrize(("architecture", "missing"), [("encoder-decoder", "src"), ("encoder-decoder", "tgt"),
                                                       ("encoder", "src"), ("decoder", "tgt")])
def test_missing_input_is_rejected(architecture: str, missing: str) -> None:
    batch = {"src": random_ids(1, 3), "tgt": random_ids(1, 3)}
    batch.pop(missing)
    with pytest.raises(ValueError, match=missing):
        tiny_model(architecture)(**batch)


@pytest.mark.parametrize("norm, final", [("post", False), ("pre", True)])
def test_the_paper_post_norm_stack_has_no_final_layernorm(norm: str, final: bool) -> None:
    model = tiny_model("encoder-decoder", norm=norm)
    names = {name for name, _ in model.named_parameters()}
    assert model.config.has_final_norm is final
    assert ("encoder_norm.weight" in names) is final and ("decoder_norm.weight" in names) is final
    src = random_ids(1, 5)
    with torch.inference_mode():
        memory, _, _ = model.encode(src)
        x = model._embed(src, model.src_embed)
        for layer in model.encoder_layers:
            x, _ = layer(x, None, LayerCall())
        assert isinstance(model.encoder_norm, torch.nn.LayerNorm) is final
        expected = model.encoder_norm(x) if final else x
    torch.testing.assert_close(memory, expected)  # post-norm: the last Add & Norm is the output


def test_configs_saved_before_final_norm_existed_keep_their_final_layernorm() -> None:
    old = {k: v for k, v in tiny_model("encoder-decoder").config.to_dict().items() if k != "final_norm"}
    restored = ModelConfig.from_dict(old)
    assert restored.final_norm is True and restored.has_final_norm
    assert ModelConfig.from_dict(tiny_model("encoder-decoder").config.to_dict()).has_final_norm is False


def test_parameter_count_follows_the_final_norm_and_the_output_bias() -> None:
    for norm, final_norm, bias, tied in itertools.product(("post", "pre"), (None, True, False), (False, True),
                                                         (False, True)):
        model = tiny_model("encoder-decoder", norm=norm, final_norm=final_norm, output_bias=bias, tie_embeddings=tied)
        assert parameter_count(model.config) == sum(p.numel() for p in model.parameters())
        assert (model.lm_head.bias is not None) is bias
