"""The fast paths give the same numbers as the plain ones (correctness only; nothing here is timed).

* the explicit softmax path in query blocks (long inputs), reaching only the keys a block may see;
* the maps written straight into one (L, B, H, Tq, Tk) tensor;
* incremental decoding with a key/value cache;
* decoding that runs the encoder once and a lean step loop: its maps are those of one plain forward.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from core.config import ARCHITECTURES, SCORES, ModelConfig
from core.generate.decode import Generation, greedy, sample
from core.inspect.explainer import explain
from core.io.checkpoint import load as load_checkpoint
from core.model import attention as attention_module
from core.model.contract import AttentionControls
from core.model.transformer import Transformer
from tests.helpers.tiny import BOS, EOS, PAD, random_ids, tiny_model


def padded_batch(architecture: str, length: int = 9) -> dict[str, torch.Tensor]:
    """src (3, length) and tgt (3, length) with padding in some rows (and one all-padding source row)."""
    src, tgt = random_ids(3, length, seed=1), random_ids(3, length, seed=2)
    src[1, length - 3:] = PAD
    src[2, :] = PAD  # every key masked: fully masked rows must come out all zero
    tgt[:, 0] = BOS
    tgt[1, length - 2:] = PAD
    return {"encoder": {"src": src}, "decoder": {"tgt": tgt}}.get(architecture, {"src": src, "tgt": tgt})


def run(model: Transformer, batch: dict, controls: AttentionControls, scores: bool):
    with torch.inference_mode():
        return model(**batch, controls=controls, return_attention=True, return_scores=scores)


CONTROLS = [AttentionControls(), AttentionControls(temperature=0.5), AttentionControls(hard=True),
            AttentionControls(causal=False), AttentionControls(padding=False)]


@pytest.mark.parametrize("architecture,score,controls,scores",
                         list(itertools.product(ARCHITECTURES, SCORES, CONTROLS[:3], [False, True]))
                         + [("decoder", "scaled_dot", c, False) for c in CONTROLS[3:]])
def test_query_blocks_give_the_same_maps_scores_and_logits(monkeypatch, architecture, score, controls, scores):
    model, batch = tiny_model(architecture, score=score), padded_batch(architecture)
    whole = run(model, batch, controls, scores)
    monkeypatch.setattr(attention_module, "BLOCK_CELLS", 3 * 4 * 9 * 2)  # 2 query rows per block
    blocked = run(model, batch, controls, scores)
    torch.testing.assert_close(blocked.logits, whole.logits, atol=1e-5, rtol=0)
    for kind, weights in whole.attention.items():
        torch.testing.assert_close(blocked.attention[kind], weights, atol=1e-6, rtol=0)
        if scores:
            torch.testing.assert_close(blocked.scores[kind], whole.scores[kind], atol=1e-6, rtol=0)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_blocked_maps_keep_the_contract(monkeypatch, architecture):
    """Rows sum to 1 (or are all zero when fully masked), masked cells exactly 0, float32."""
    monkeypatch.setattr(attention_module, "BLOCK_CELLS", 16)
    model, batch = tiny_model(architecture), padded_batch(architecture)
    out = run(model, batch, AttentionControls(), False)
    for kind, maps in out.attention.items():
        assert maps.dtype == torch.float32 and not maps.isnan().any()
        keys = batch["tgt" if kind == "decoder" else "src"]
        allowed = (keys != PAD)[:, None, None, :]  # (B, 1, 1, Tk)
        if kind == "decoder":
            allowed = allowed & torch.ones(keys.size(1), keys.size(1), dtype=torch.bool).tril()
        allowed = allowed.expand(maps.shape[1:])  # (B, H, Tq, Tk)
        assert torch.all(maps[:, ~allowed] == 0)
        sums = maps.sum(-1)  # (L, B, H, Tq)
        live = allowed.any(-1).expand_as(sums)
        torch.testing.assert_close(sums[live], torch.ones(int(live.sum())), atol=1e-5, rtol=0)
        assert torch.all(sums[~live] == 0)


def test_causal_blocks_skip_unreachable_keys_but_fill_them_with_zeros(monkeypatch):
    monkeypatch.setattr(attention_module, "BLOCK_CELLS", 4 * 12)  # 1 query row per block
    model = tiny_model("decoder")
    tgt = random_ids(1, 12, seed=3)
    maps = run(model, {"tgt": tgt}, AttentionControls(), False).attention["decoder"]  # (L, 1, H, T, T)
    assert torch.all(maps.triu(1) == 0)
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]), atol=1e-5, rtol=0)


def test_maps_of_every_layer_live_in_one_tensor():
    """The stacked maps are the tensor the layers wrote into, not a copy of per-layer tensors."""
    model = tiny_model("encoder-decoder")
    out = run(model, padded_batch("encoder-decoder"), AttentionControls(), False)
    for maps in out.attention.values():
        assert maps.is_contiguous() and maps.dtype == torch.float32
        assert maps.untyped_storage().nbytes() == maps.numel() * 4


# ---------------------------------------------------------------- incremental decoding (KV cache)
def step_by_step(model: Transformer, tgt: torch.Tensor, src: torch.Tensor | None, controls: AttentionControls,
                 first: int, cache: bool) -> list[torch.Tensor]:
    """Next-token logits (B, V) after each prefix tgt[:, :t], t = first … T, with or without a cache."""
    with torch.inference_mode():
        memory = memory_mask = None
        if src is not None:
            memory, memory_mask, _ = model.encode(src, controls)
        kv = model.kv_cache() if cache else None
        return [model.next_token_logits(tgt[:, :t], memory, memory_mask, controls, cache=kv)
                for t in range(first, tgt.size(1) + 1)]


DECODE_CONTROLS = [AttentionControls(), AttentionControls(temperature=2.0), AttentionControls(hard=True),
                   AttentionControls(padding=False), AttentionControls(causal=False),
                   AttentionControls(head_mask={"decoder": torch.tensor([[1.0, 0, 1, 1], [0, 1, 1, 1]])})]


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder"])
@pytest.mark.parametrize("controls", DECODE_CONTROLS, ids=["paper", "beta", "hard", "no-pad", "no-causal", "knock"])
@pytest.mark.parametrize("first", [1, 4], ids=["from-bos", "from-prompt"])
def test_cached_steps_give_the_logits_of_the_whole_prefix(architecture, controls, first):
    model = tiny_model(architecture)
    tgt = random_ids(3, 10, seed=4)
    tgt[:, 0] = BOS
    tgt[2, 6:] = PAD  # a finished row keeps growing with padding
    src = random_ids(3, 7, seed=5) if architecture == "encoder-decoder" else None
    if src is not None:
        src[1, 5:] = PAD
    whole = step_by_step(model, tgt, src, controls, first, cache=False)
    cached = step_by_step(model, tgt, src, controls, first, cache=True)
    for expected, got in zip(whole, cached):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("overrides", [dict(score="general"), dict(score="additive"), dict(norm="pre"),
                                       dict(positional="learned"), dict(positional="none")],
                         ids=lambda o: "-".join(map(str, o.values())))
def test_cached_steps_match_for_every_score_norm_and_positional(overrides):
    model = tiny_model("decoder", **overrides)
    tgt = random_ids(2, 12, seed=6)
    tgt[:, 0] = BOS
    for expected, got in zip(step_by_step(model, tgt, None, AttentionControls(), 1, False),
                             step_by_step(model, tgt, None, AttentionControls(), 1, True)):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_cache_grows_past_its_first_capacity_and_never_touches_the_model():
    model = tiny_model("decoder")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tgt = random_ids(1, 24, seed=7)  # max_len: beyond the first capacity of 16 positions
    tgt[:, 0] = BOS
    for expected, got in zip(step_by_step(model, tgt, None, AttentionControls(), 1, False),
                             step_by_step(model, tgt, None, AttentionControls(), 1, True)):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert not any("cache" in name for name, _ in model.named_buffers())


def test_a_cache_without_the_causal_mask_is_refused_by_decode():
    model = tiny_model("decoder")
    with pytest.raises(ValueError, match="causal"):
        model.decode(random_ids(1, 3), controls=AttentionControls(causal=False), cache=model.kv_cache())


def test_cache_past_max_len_is_refused():
    model = tiny_model("decoder")
    cache = model.kv_cache()
    with torch.inference_mode():
        model.decode(random_ids(1, 24), cache=cache)
        with pytest.raises(ValueError, match="max_len"):
            model.decode(random_ids(1, 1), cache=cache)


# ---------------------------------------------------------------- decoding: the encoder once, a lean step loop
SHIPPED = sorted((Path(__file__).resolve().parents[2] / "assets" / "checkpoints").glob("*.safetensors"))


def assert_maps_of_one_forward(model: Transformer, src: torch.Tensor | None, gen: Generation,
                               controls: AttentionControls = AttentionControls()) -> None:
    """The generation's maps and logits equal one plain forward over its decoder inputs."""
    with torch.inference_mode():
        whole = model(src, gen.inputs, controls=controls, return_attention=True)
    assert set(gen.output.attention) == set(whole.attention)
    for kind, maps in whole.attention.items():
        assert gen.output.attention[kind].is_contiguous()
        torch.testing.assert_close(gen.output.attention[kind], maps, atol=1e-6, rtol=0)
    torch.testing.assert_close(gen.output.logits, whole.logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("path", [p for p in SHIPPED if p.stem not in ("sentiment",)], ids=lambda p: p.stem)
def test_decoding_maps_of_each_shipped_checkpoint_equal_one_forward_over_its_output(path):
    ckpt = load_checkpoint(path)
    model, cfg = ckpt.model, ckpt.config
    prefix = torch.full((3, 1), BOS)
    for length, seed in ((3, 0), (cfg.max_len // 2, 1), (cfg.max_len, 2)):
        if cfg.has_encoder:
            src = random_ids(3, length, vocab=cfg.src_vocab_size, seed=seed)
            src[1, length // 2 + 1 :] = PAD  # shorter rows padded, as explain_batch pads them
            gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=cfg.max_len)
        else:  # a language model continues a prompt
            src, prompt = None, random_ids(1, min(length, cfg.max_len - 4), vocab=cfg.tgt_vocab_size, seed=seed)
            gen = greedy(model, None, torch.cat([prefix[:1], prompt], 1), eos_id=EOS, max_new_tokens=8)
        assert_maps_of_one_forward(model, src, gen)


@pytest.mark.parametrize("architecture", ["encoder-decoder", "decoder"])
@pytest.mark.parametrize("controls", [c for c in DECODE_CONTROLS if c.causal],
                         ids=["paper", "beta", "hard", "no-pad", "knock"])
def test_decoding_maps_equal_one_forward_for_every_control_and_sampling(architecture, controls):
    model = tiny_model(architecture, seed=3)
    src = random_ids(3, 7, seed=8) if architecture == "encoder-decoder" else None
    if src is not None:
        src[2, 4:] = PAD
    prefix = torch.cat([torch.full((3, 1), BOS), random_ids(3, 2, seed=9)], 1)  # a prompt of 3 tokens
    for gen in (greedy(model, src, prefix, eos_id=EOS, max_new_tokens=15, controls=controls),
                sample(model, src, prefix, eos_id=EOS, max_new_tokens=15, controls=controls,
                       generator=torch.Generator().manual_seed(0))):
        assert_maps_of_one_forward(model, src, gen, controls)


def test_explain_maps_equal_one_forward_over_the_shipped_reverse_output():
    ckpt = load_checkpoint(next(p for p in SHIPPED if p.stem == "reverse"))
    result = explain(ckpt, "abcdefgh")
    src = torch.tensor([ckpt.source_tokenizer.encode("abcdefgh").ids])
    tgt = torch.tensor([[BOS, *ckpt.target_tokenizer.encode(result.prediction.text).ids[: len(result.target_tokens) - 1]]])
    with torch.inference_mode():
        whole = ckpt.model(src, tgt, return_attention=True)
    assert result.prediction.text == "hgfedcba"
    for kind, maps in whole.attention.items():
        np.testing.assert_allclose(result.attention[kind], maps[:, 0].numpy(), atol=1e-6, rtol=0)


def test_the_layout_of_a_large_config_is_built_without_memory():
    from core.budget import parameter_count
    from core.io.verify import CPU_LAYOUT_PARAMETERS, expected_layout

    big = ModelConfig(src_vocab_size=32000, tgt_vocab_size=32000, d_model=512, n_heads=8, d_ff=2048)
    assert parameter_count(big) > CPU_LAYOUT_PARAMETERS
    layout = expected_layout(big)
    assert layout["src_embed.weight"] == (32000, 512) and layout["lm_head.weight"] == (32000, 512)
    assert sum(int(np.prod(shape)) for shape in layout.values()) == parameter_count(big)


def test_building_a_small_layout_on_the_cpu_leaves_the_callers_random_state_alone():
    from core.io.verify import expected_layout

    torch.manual_seed(3)
    state = torch.get_rng_state()
    expected_layout(ModelConfig(src_vocab_size=20, tgt_vocab_size=20))
    assert torch.equal(state, torch.get_rng_state())
