"""Gemma 2 and Gemma 3 text folders equal ``transformers`` eager: token ids, every layer's maps (local and
global layers), the logits and a greedy continuation; the sliding window shows in the maps (exactly 0
outside it, in the local layers only), the softcaps bound the scores and the logits, and config.json
values the model cannot reproduce are refused, named."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from core import explain, load_pretrained
from core.cli import main as cli_main
from core.io.checkpoint import CheckpointError
from core.io.identify import find_models
from core.io.pretrained.hf_gemma import gemma_config
from core.model.contract import AttentionControls
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, TEXT, VOCAB, compare, reference_model, save_folder

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS,
            pad_token_id=PAD, sliding_window=4, query_pre_attn_scalar=12)
WINDOW = 4

GEMMA = {
    # softcaps low enough to bind on these weights (scores reach past 2)
    "gemma2": lambda: transformers.Gemma2Config(**TINY, attn_logit_softcapping=2.0, final_logit_softcapping=3.0),
    "gemma2-defaults": lambda: transformers.Gemma2Config(**dict(TINY, query_pre_attn_scalar=256)),
    "gemma2-untied-bias": lambda: transformers.Gemma2Config(**TINY, tie_word_embeddings=False, attention_bias=True),
    # local base 100 and a linearly scaled global base 5,000: each layer type reads its own tables
    "gemma3": lambda: transformers.Gemma3TextConfig(**TINY, sliding_window_pattern=2, rope_local_base_freq=100.0,
                                                    rope_theta=5000.0, rope_scaling={"rope_type": "linear",
                                                                                     "factor": 2.0}),
    "gemma3-softcapped": lambda: transformers.Gemma3TextConfig(**TINY, final_logit_softcapping=4.0),
}


@pytest.mark.parametrize("name", sorted(GEMMA))
def test_gemma_folder_matches_transformers(name, tmp_path):
    reference = reference_model(GEMMA[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=True)
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 2e-6
    assert result.logit_error <= 1e-5 * max(1.0, result.logit_scale)
    assert result.ours_continuation == result.reference_continuation


@pytest.fixture(scope="module")
def gemma2(tmp_path_factory):
    reference = reference_model(GEMMA["gemma2"]())
    return save_folder(reference, tmp_path_factory.mktemp("gemma2") / "gemma2", add_bos=True)


@pytest.fixture(scope="module")
def gemma3_pair(tmp_path_factory):
    reference = reference_model(GEMMA["gemma3"]())
    return save_folder(reference, tmp_path_factory.mktemp("gemma3") / "gemma3", add_bos=True), reference


def test_configs_written_before_layer_types_and_per_layer_rope_parameters_read_the_same(gemma3_pair, tmp_path):
    folder, reference = gemma3_pair
    legacy = tmp_path / "gemma3-legacy"
    shutil.copytree(folder, legacy)
    config = json.loads((folder / "config.json").read_text())
    rope = config.pop("rope_parameters")
    del config["layer_types"]
    config.update(sliding_window_pattern=2, rope_local_base_freq=rope["sliding_attention"]["rope_theta"],
                  rope_theta=rope["full_attention"]["rope_theta"], rope_scaling={"type": "linear", "factor": 2.0})
    (legacy / "config.json").write_text(json.dumps(config))
    parsed = gemma_config(legacy)
    assert parsed.layer_types == ("sliding_attention", "full_attention", "sliding_attention")
    assert (parsed.local_rope_base, parsed.rope_base, parsed.rope_type, parsed.rope_factor) == (100.0, 5000.0,
                                                                                                "linear", 2.0)
    assert gemma_config(folder) == parsed
    result = compare(legacy, reference)
    assert result.map_error <= 2e-6 and result.ours_continuation == result.reference_continuation


@torch.no_grad()
def test_local_layers_are_exactly_zero_outside_the_window_and_global_layers_see_the_whole_past(gemma2):
    loaded = load_pretrained(gemma2)
    assert loaded.model.config.layer_windows == (WINDOW, None, WINDOW)
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])  # (1, T)
    maps = loaded.model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T)
    rows = torch.arange(ids.size(1))
    causal = rows[:, None] >= rows[None, :]
    window = causal & (rows[:, None] - rows[None, :] < WINDOW)
    assert ids.size(1) > 2 * WINDOW
    for layer in (0, 2):  # sliding_attention
        assert bool((maps[layer][..., ~window] == 0).all()) and bool((maps[layer][..., window] > 0).all())
    assert bool((maps[1][..., ~causal] == 0).all()) and bool((maps[1][..., causal & ~window] > 0).all())
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))


@torch.no_grad()
def test_softcaps_bound_the_scores_and_the_logits(gemma2):
    model = load_pretrained(gemma2).model
    ids = torch.tensor([[BOS, 40, 41, 42, 43, 44, 45]])
    out = model(None, ids, return_scores=True)
    scores = out.scores["decoder"]  # (L, 1, H, T, T): capped at 2
    assert float(scores.abs().max()) < 2.0 and float(scores.abs().max()) > 1.5
    assert float(out.logits.abs().max()) < 3.0
    sharper = model(None, ids, return_scores=True, controls=AttentionControls(temperature=2.0)).scores["decoder"]
    torch.testing.assert_close(sharper[0], 2 * scores[0])  # β multiplies the capped scores (the first layer's
    # input is the same; later layers read what the sharper attention made)


@torch.no_grad()
def test_kv_cache_steps_equal_full_recomputation_past_the_window(gemma2):
    model = load_pretrained(gemma2).model
    ids = torch.tensor([[BOS, 40, 41, 42, 43, 44, 45, 46, 47]])  # (1, 9): past the window of 4
    cache = model.kv_cache()
    for end in (3, 4, 6, 9):
        cached = model.next_token_logits(ids[:, :end], cache=cache)
        torch.testing.assert_close(cached, model.next_token_logits(ids[:, :end]), atol=1e-5, rtol=1e-5)


def test_a_gemma_folder_opens_through_explain_the_cli_and_a_models_folder(gemma2, tmp_path, capsys):
    explanation = explain(gemma2, TEXT, continuation=2)
    maps = torch.as_tensor(explanation.attention["decoder"])  # (L, H, T, T)
    assert maps.shape[:2] == (3, 4) and explanation.prediction.kind == "next_token"
    assert cli_main(["explain", str(gemma2), "the street"]) == 0
    assert "layer 3 head 4:" in capsys.readouterr().out
    shelf = tmp_path / "models"
    shutil.copytree(gemma2, shelf / "google" / "gemma-2-tiny")
    assert [m.name for m in find_models(shelf)] == ["gemma-2-tiny"]


def _edited(folder, tmp_path, **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("changes, message", [
    (dict(use_bidirectional_attention=True), "use_bidirectional_attention .a Gemma encoder. is not supported"),
    (dict(layer_types=["sliding_attention", "chunked_attention", "full_attention"]),
     "'layer_types' has 'chunked_attention'; supported: sliding_attention, full_attention"),
    (dict(layer_types=["full_attention"]), "layer_types lists 1 layers for 3"),
    (dict(attn_logit_softcapping=-1.0), "'attn_logit_softcapping' must be null or a number above 0, got -1.0"),
    (dict(final_logit_softcapping="30"), "'final_logit_softcapping' must be null or a number above 0"),
    (dict(query_pre_attn_scalar=0), "query_pre_attn_scalar must be a finite number above 0"),
    (dict(sliding_window=0), "sliding_window must be at least 1"),
    (dict(sliding_window=None), "sliding_attention layers need a sliding_window"),
    (dict(rope_parameters={"rope_type": "longrope", "factor": 4.0, "rope_theta": 10000.0}),
     "rope scaling type 'longrope' is not supported"),
    (dict(attn_logit_soft_cap=3.0), "'attn_logit_soft_cap' is not understood by this reader"),
])
def test_gemma2_settings_the_model_cannot_reproduce_are_refused_by_name(gemma2, tmp_path, changes, message):
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(gemma2, tmp_path, **changes))


def test_gemma3_with_an_attention_softcap_is_refused(gemma3_pair, tmp_path):
    with pytest.raises(CheckpointError, match="attn_logit_softcapping in a Gemma 3 model .* is not supported"):
        load_pretrained(_edited(gemma3_pair[0], tmp_path, attn_logit_softcapping=50.0))


@pytest.mark.parametrize("rope, message", [
    ({"sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4},
      "full_attention": {"rope_type": "default", "rope_theta": 1e6}},
     r"rope_parameters\['sliding_attention'\] of rope_type 'linear'"),
    ({"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
      "chunked_attention": {"rope_type": "default", "rope_theta": 1e6}}, "rope_parameters entry 'chunked_attention'"),
])
def test_gemma3_rotary_entries_the_model_cannot_reproduce_are_refused_by_name(gemma3_pair, tmp_path, rope, message):
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(gemma3_pair[0], tmp_path, rope_parameters=rope))


@pytest.mark.parametrize("which", ["gemma2", "gemma3"])
def test_a_loaded_gemma_keeps_the_model_contract(which, gemma2, gemma3_pair):
    from tests.helpers.contract_checks import check_contract

    folder = gemma2 if which == "gemma2" else gemma3_pair[0]
    ids = torch.tensor([[BOS, 40, 41, 42, 43, 44], [BOS, 50, 51, 52, 53, 54]])
    check_contract(load_pretrained(folder).model, None, ids)


@pytest.mark.parametrize("name, dtype", [("gemma2", torch.bfloat16), ("gemma3", torch.float16)])
def test_a_half_precision_folder_runs_in_its_precision_like_the_reference(name, dtype, tmp_path):
    """Kept in bf16 / fp16 as transformers keeps it (the scores capped in that precision, norms and softmax in
    float32): every map within one step of the reference's rounding, the logits within its precision."""
    import copy

    folder = save_folder(copy.deepcopy(reference_model(GEMMA[name]())).to(dtype), tmp_path / name, add_bos=True)
    loaded = load_pretrained(folder)
    assert {p.dtype for p in loaded.model.parameters()} == {dtype}
    half = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    result = compare(folder, half)
    assert result.ids_equal and result.logit_error <= 1e-2 * result.logit_scale
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])  # (1, T)
    with torch.no_grad():
        maps = loaded.model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T) float32
        theirs = half(ids, output_attentions=True).attentions
    assert max(float((maps[i].to(dtype).float() - a.float()).abs().max()) for i, a in enumerate(theirs)) <= 2 ** -8
