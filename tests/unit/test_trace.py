"""The trace (core/model/trace.py) and maps on demand (core/inspect/maps.py), for every model on the contract.

For each family: the maps computed from the trace's q, k, mask, bias and scale equal the maps the same pass
materialised (the eager path) to 1e-6 under β, hard attention, the causal toggle and padding; the fast pass
(fused kernel, no maps) gives the same maps and logits as the exact one; every name written is one of
TRACE_NAMES; the last layer's ``resid_out`` feeds ``final``.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

import core
from core.inspect.maps import MATERIALISE_LIMIT_BYTES, OnDemandMaps, from_trace
from core.inspect.wire import from_wire, to_wire
from core.model.contract import AttentionControls, kv_groups
from core.model.families.bert import BertConfig, BertModel
from core.model.families.deberta import DebertaConfig, DebertaModel
from core.model.families.gemma import GemmaConfig, GemmaModel
from core.model.families.modernbert import ModernBertConfig, ModernBertModel
from core.model.families.phi3 import Phi3Config, Phi3Model
from core.model.families.gpt import GptConfig, GptModel
from core.model.families.llama import LlamaConfig, LlamaModel
from core.model.families.seq2seq import Seq2SeqModel
from core.model.families.seq2seq_layers import Seq2SeqConfig
from core.model.families.whisper import WhisperConfig, WhisperModel
from core.model.trace import TRACE_NAMES, Recorder
from tests.helpers.pretrained_files import TINY_LLAMA
from tests.helpers.tiny import random_ids, tiny_model

SEQ2SEQ = dict(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=2, n_heads=4, d_kv=4, d_ff=32,
               max_len=32, pad_id=0, eos_id=2, decoder_start_id=1)
WHISPER = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=2, n_heads=2, d_ff=32,
                        eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=10, max_len=12)


def _seeded(build):
    torch.manual_seed(0)
    model = build()
    for parameter in model.parameters():  # a random model whose every weight (norms, biases, tables) matters
        parameter.data.normal_(0.0, 0.3)
    return model.eval()


MODELS = {
    "ours encoder-decoder": lambda: tiny_model("encoder-decoder"),
    "ours pre-norm encoder-decoder": lambda: tiny_model("encoder-decoder", norm="pre"),
    "ours encoder": lambda: tiny_model("encoder"),
    "ours decoder": lambda: tiny_model("decoder"),
    "bert": lambda: _seeded(lambda: BertModel(BertConfig(vocab_size=40, d_model=32, n_encoder_layers=2, n_heads=4,
                                                         d_ff=64))),
    "llama (grouped kv, q/k norms)": lambda: _seeded(lambda: LlamaModel(LlamaConfig(vocab_size=40, qk_norm=True,
                                                                                    **TINY_LLAMA))),
    "mistral (sliding window)": lambda: _seeded(lambda: LlamaModel(LlamaConfig(
        vocab_size=40, sliding_window=3, **TINY_LLAMA))),
    "gpt-2 (learned positions)": lambda: _seeded(lambda: GptModel(GptConfig(
        vocab_size=40, d_model=16, n_decoder_layers=2, n_heads=4, d_ff=32, max_len=16, n_positions=16))),
    "neox (rotary, parallel)": lambda: _seeded(lambda: GptModel(GptConfig(
        vocab_size=40, d_model=16, n_decoder_layers=2, n_heads=4, d_ff=32, max_len=16, positions="rotary",
        rotary_dim=2, block="parallel"))),
    "marian": lambda: _seeded(lambda: Seq2SeqModel(Seq2SeqConfig(family="marian", positions="sinusoidal",
                                                                 **SEQ2SEQ))),
    "t5 (relative bias, unscaled)": lambda: _seeded(lambda: Seq2SeqModel(Seq2SeqConfig(
        family="t5", positions="relative", pre_norm=True, rms_norm=True, scaled=False, bias=False, final_norm=True,
        relative_buckets=8, relative_max_distance=16, **SEQ2SEQ))),
    "whisper": lambda: _seeded(lambda: WhisperModel(WHISPER)),
    "gemma 2 (local/global, softcaps)": lambda: _seeded(lambda: GemmaModel(GemmaConfig(
        vocab_size=40, layer_types=("sliding_attention", "full_attention"), sliding_window=3,
        query_pre_attn_scalar=12.0, attn_softcap=2.0, final_softcap=3.0, local_rope_base=100.0, **TINY_LLAMA))),
    "phi-3 (partial rotary, longrope)": lambda: _seeded(lambda: Phi3Model(Phi3Config(
        vocab_size=40, rotary_dim=4, longrope_short_factors=(1.0, 2.0), longrope_attention_factor=1.2, **TINY_LLAMA))),
    "mpnet (relative bias)": lambda: _seeded(lambda: BertModel(BertConfig(
        vocab_size=40, d_model=32, n_encoder_layers=2, n_heads=4, d_ff=64, type_vocab_size=0, pad_id=1,
        position_offset=2, relative_buckets=32))),
    "deberta-v3 (disentangled)": lambda: _seeded(lambda: DebertaModel(DebertaConfig(
        vocab_size=40, d_model=32, n_encoder_layers=2, n_heads=4, d_ff=64, position_biased_input=False, span=4,
        position_buckets=4, max_relative_positions=16, c2p=True, p2c=True, share_att_key=True,
        norm_rel_embeddings=True))),
    "modernbert (local/global, rotary)": lambda: _seeded(lambda: ModernBertModel(ModernBertConfig(
        vocab_size=40, d_model=32, n_encoder_layers=3, n_heads=4, d_ff=48, window=2,
        layer_types=("full_attention", "sliding_attention", "sliding_attention")))),
}
CONTROLS = {
    "paper": AttentionControls(),
    "beta 2, no look-ahead mask": AttentionControls(temperature=2.0, causal=False),
    "hard": AttentionControls(hard=True),
    "padding off": AttentionControls(padding=False),
}


def _inputs(model) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    spec = model.config
    if isinstance(model, WhisperModel):
        torch.manual_seed(5)
        return torch.randn(2, spec.n_mels, 2 * spec.n_frames), random_ids(2, 5, vocab=30, seed=2)
    vocab = getattr(spec, "vocab_size", None) or getattr(spec, "src_vocab_size", None) or spec.tgt_vocab_size
    src = random_ids(2, 6, vocab=vocab, seed=1) if spec.has_encoder else None
    tgt = random_ids(2, 5, vocab=vocab, seed=2) if spec.has_decoder else None
    first = src if src is not None else tgt
    first[1, -2:] = spec.pad_id  # the second row is padded
    return src, tgt


def _run(model, controls: AttentionControls, **kw):
    src, tgt = _inputs(model)
    with torch.inference_mode():
        return model(src, tgt, controls=controls, **kw)


@pytest.mark.parametrize("controls", CONTROLS.values(), ids=CONTROLS.keys())
@pytest.mark.parametrize("name", MODELS)
def test_the_maps_computed_from_the_trace_equal_the_pass_maps(name, controls):
    model = MODELS[name]()
    out = _run(model, controls, return_attention=True, return_scores=True, record=["*"])
    spec = model.config
    for kind in spec.attention_kinds:
        for row in range(2):
            for scores, held in ((False, out.attention), (True, out.scores)):
                maps = from_trace(out.trace, kind, spec.n_layers(kind), row, kv_groups(spec), controls.temperature,
                                  controls.hard, scores)
                want = held[kind][:, row].numpy()  # (L, H, Tq, Tk)
                np.testing.assert_allclose(np.asarray(maps), want, atol=1e-5 if scores else 1e-6, rtol=1e-6)


@pytest.mark.parametrize("name", MODELS)
def test_the_fast_pass_gives_the_exact_pass_maps_and_logits(name):
    model = MODELS[name]()
    for controls in (AttentionControls(), AttentionControls(temperature=2.0, causal=False)):
        exact = _run(model, controls, return_attention=True)
        fast = _run(model, controls, record=core.MAP_RECORD)
        assert fast.attention is None
        torch.testing.assert_close(fast.logits, exact.logits, atol=1e-5, rtol=1e-5)
        spec = model.config
        for kind in spec.attention_kinds:
            maps = from_trace(fast.trace, kind, spec.n_layers(kind), 0, kv_groups(spec), controls.temperature, False)
            np.testing.assert_allclose(np.asarray(maps), exact.attention[kind][:, 0].numpy(), atol=1e-5)


def _pattern(name: str) -> bool:
    """Whether ``name`` is one of TRACE_NAMES' forms."""
    forms = [re.escape(f).replace(r"\{stack\}", "(encoder|decoder)").replace(r"\{kind\}", "(encoder|decoder|cross)")
             .replace(r"\{layer\}", r"\d+") for f in TRACE_NAMES]
    return any(re.fullmatch(form, name) for form in forms)


@pytest.mark.parametrize("name", MODELS)
def test_every_name_is_in_the_table_and_the_residual_stream_feeds_final(name):
    model = MODELS[name]()
    out = _run(model, AttentionControls(), record=["*"])
    spec = model.config
    assert out.trace and all(_pattern(key) for key in out.trace), sorted(k for k in out.trace if not _pattern(k))
    stacks = [s for s in ("encoder", "decoder") if s in spec.attention_kinds]
    for stack in stacks:
        layers = spec.n_layers(stack)
        assert {f"{stack}.embed", f"{stack}.final"} <= set(out.trace)
        for layer in range(layers):
            for part in ("q", "k", "v", "scale", "attn_out", "resid_mid", "ffn_out", "resid_out"):
                assert f"{stack}.{layer}.{part}" in out.trace
        last, final = out.trace[f"{stack}.{layers - 1}.resid_out"], out.trace[f"{stack}.final"]
        norms = [m for n, m in model.named_modules() if re.fullmatch(rf"({stack}_norm|{stack}\.final_norm|norm)", n)]
        with torch.inference_mode():
            fed = [last] + [norm(last) for norm in norms]
        assert any(torch.allclose(f, final, atol=1e-6) for f in fed)
    if "cross" in spec.attention_kinds:
        assert all(f"cross.{layer}.{part}" in out.trace for layer in range(spec.n_layers("cross"))
                   for part in ("q", "k", "attn_out", "resid_mid"))


def test_record_keeps_only_what_its_patterns_name():
    model = MODELS["llama (grouped kv, q/k norms)"]()
    out = _run(model, AttentionControls(), record=["decoder.1.q", "*.resid_out"])
    assert set(out.trace) == {"decoder.1.q", "decoder.0.resid_out", "decoder.1.resid_out"}
    assert out.trace["decoder.1.q"].shape == (2, 4, 5, 8)  # (B, H, T, dk), all query heads
    k = _run(model, AttentionControls(), record=["decoder.0.k"]).trace["decoder.0.k"]
    assert k.shape == (2, 2, 5, 8)  # (B, Hkv, T, dk): grouped key/value heads as stored
    assert _run(model, AttentionControls()).trace is None
    with pytest.raises(ValueError, match="trace patterns"):
        Recorder([])


def test_a_recorded_pass_shares_nothing_with_the_next_one():
    model = MODELS["bert"]()
    first = _run(model, AttentionControls(), record=["*"]).trace
    second = _run(model, AttentionControls(), record=["encoder.0.q"]).trace
    assert set(second) == {"encoder.0.q"} and len(first) > 10  # a trace is a value of its call


def _maps() -> OnDemandMaps:
    model = MODELS["llama (grouped kv, q/k norms)"]()
    out = _run(model, AttentionControls(), record=["*"])
    return from_trace(out.trace, "decoder", 2, 1, kv_groups(model.config), 1.0, False), out


def test_indexing_computes_only_what_is_asked_and_agrees_with_the_whole():
    maps, _ = _maps()
    whole = np.asarray(maps)  # (L, H, T, T)
    assert maps.shape == whole.shape == (2, 4, 5, 5) and maps.size == whole.size and maps.dtype == np.float32
    for key in [(1, 2), (0,), (slice(None), slice(None), 3, slice(None, 4)), (Ellipsis, [0, 2]), (1, slice(1, 3), 4),
                (-1, -1, -1, -1), (np.array([1, 0]), 0)]:
        np.testing.assert_array_equal(maps[key], whole[key])
    np.testing.assert_allclose(whole.sum(-1), 1.0, atol=1e-6)
    assert (np.triu(whole, 1) == 0).all()  # the look-ahead mask: every future key exactly 0
    with pytest.raises(IndexError):
        maps[2, 0]


def test_the_pooled_overview_keeps_every_peak():
    torch.manual_seed(3)
    q, k = torch.randn(1, 2, 37, 4).numpy(), torch.randn(1, 2, 29, 4).numpy()
    maps = OnDemandMaps(q=q, k=k, scale=np.array([2.0]), kv_head_of=(0, 1), mask_of=(-1,), bias_of=(-1,),
                        softcap=(0.0,))
    whole = np.asarray(maps)[0]  # (H, 37, 29)
    pooled = maps.pooled(0, size=8)  # blocks of 5 × 4
    assert pooled.shape == (2, 8, 8)
    for h in range(2):
        for i in range(8):
            for j in range(8):
                np.testing.assert_allclose(pooled[h, i, j], whole[h, i * 5:(i + 1) * 5, j * 4:(j + 1) * 4].max(),
                                           rtol=1e-6)
    np.testing.assert_allclose(maps.pooled(0, size=64), whole, rtol=1e-6)  # small enough: the maps themselves
    mass = maps.pooled(0, size=8, reduce="mass")  # the weight a block's keys hold, averaged over its rows
    np.testing.assert_allclose(mass[1, 7, 2], whole[1, 35:37, 8:12].sum(-1).mean(), rtol=1e-5)
    np.testing.assert_allclose(mass.sum(-1), 1.0, atol=1e-5)


def test_the_analysis_reads_on_demand_maps_layer_by_layer():
    from core import analysis
    maps, _ = _maps()
    whole = np.asarray(maps)
    for name in ("mean_over_heads", "rollout_by_layer", "head_entropy", "mean_distance", "max_weight"):
        np.testing.assert_allclose(getattr(analysis, name)(maps), getattr(analysis, name)(whole), rtol=1e-12)
    assert analysis.head_finder(maps, 3) == analysis.head_finder(whole, 3)
    assert analysis.head_statistics(maps) == analysis.head_statistics(whole)


def test_materialising_past_the_limit_says_what_to_index(monkeypatch):
    maps, _ = _maps()
    monkeypatch.setattr("core.inspect.maps.MATERIALISE_LIMIT_BYTES", 4 * 5 * 5)
    assert maps[0, 0].shape == (5, 5)
    with pytest.raises(ValueError, match=r"index one layer or head"):
        np.asarray(maps)
    assert MATERIALISE_LIMIT_BYTES >= 1 << 30


def test_softcap_and_bias_enter_as_the_recipe_says():
    torch.manual_seed(4)
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 1, 3, 4)
    bias = torch.randn(1, 2, 3, 3)
    maps = OnDemandMaps(q=q.numpy(), k=k.numpy(), scale=np.array([0.5]), kv_head_of=(0, 0), biases=(bias[0].numpy(),),
                        bias_of=(0,), mask_of=(-1,), softcap=(2.0,))
    raw = (q @ k.transpose(-2, -1))[0] * 0.5 + bias[0]  # (H, Tq, Tk)
    np.testing.assert_allclose(maps[0], torch.softmax(torch.tanh(raw / 2.0) * 2.0, -1).numpy(), atol=1e-6)
    scores = replace(maps, scores=True, temperature=3.0)
    np.testing.assert_allclose(scores[0], (torch.tanh(raw / 2.0) * 2.0 * 3.0).numpy(), atol=1e-6)


def test_explain_on_demand_equals_explain_exact_for_every_shipped_checkpoint(checkpoints):
    from tests.helpers.paths import SHIPPED
    texts = {"copy": "hello", "reverse": "abcdef", "sort": "dcba", "dates": "3/14/2015", "addition": "12+34",
             "translation": "the black cat", "sentiment": "i love this film", "lm": "the cat"}
    for path in sorted(SHIPPED.glob("*.safetensors")):
        ckpt = core.load_checkpoint(path)
        for options in ({}, {"temperature": 2.0, "causal": False, "return_scores": True}):
            exact = core.explain(ckpt, texts[ckpt.info.task], maps="exact", **options)
            fast = core.explain(ckpt, texts[ckpt.info.task], maps="on_demand", **options)
            assert fast.on_demand and not exact.on_demand
            assert (fast.prediction.text, fast.prediction.labels) == (exact.prediction.text, exact.prediction.labels)
            np.testing.assert_allclose(fast.prediction.probabilities, exact.prediction.probabilities, atol=1e-5)
            for kind in exact.kinds:
                np.testing.assert_allclose(np.asarray(fast.attention[kind]), exact.attention[kind], atol=1e-5)
                if options:
                    np.testing.assert_allclose(np.asarray(fast.scores[kind]), exact.scores[kind], atol=1e-4,
                                               rtol=1e-5)


def test_an_on_demand_explanation_crosses_the_wire_and_pickles():
    import pickle
    ckpt = core.load_checkpoint(next(iter(sorted(__import__("tests.helpers.paths", fromlist=["SHIPPED"]).SHIPPED
                                                 .glob("translation*.safetensors")))))
    exp = core.explain(ckpt, "the black cat", maps="on_demand")
    records, arrays = to_wire([exp])
    (back,) = from_wire(records, arrays)
    again = pickle.loads(pickle.dumps(exp))
    for kind in exp.kinds:
        assert isinstance(back.attention[kind], OnDemandMaps)
        np.testing.assert_array_equal(np.asarray(back.attention[kind]), np.asarray(exp.attention[kind]))
        np.testing.assert_array_equal(np.asarray(again.attention[kind]), np.asarray(exp.attention[kind]))


def test_auto_holds_small_maps_whole_and_computes_long_ones(monkeypatch, checkpoints):
    model = checkpoints["decoder"]
    assert not core.explain(model, "abcabc").on_demand
    monkeypatch.setattr("core.inspect.explainer.MAP_BUDGET_BYTES", 16)
    long = core.explain(model, "abcabc")
    assert long.on_demand
    np.testing.assert_allclose(np.asarray(long.attention["decoder"]),
                               core.explain(model, "abcabc", maps="exact").attention["decoder"], atol=1e-6)
    scored = tiny_model("decoder", score="additive")
    assert fnmatch.fnmatch("decoder.0.q", core.MAP_RECORD[0])
    out = _run(scored, AttentionControls(), record=core.MAP_RECORD)
    assert "decoder.0.scale" not in out.trace  # additive scores are not a dot product: no map from q and k
    with pytest.raises(ValueError, match="cannot be computed on demand"):
        from_trace(out.trace, "decoder", 2, 0, (0, 1, 2, 3), 1.0, False)
