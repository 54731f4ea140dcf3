"""Phi-3 folders equal ``transformers`` eager: the fused qkv_proj / gate_up_proj split into Llama's projections,
partial rotary, a sliding window, and LongRoPE (``longrope`` and its older name ``su``) within the
pretraining length; rope types Phi-3 does not have and malformed LongRoPE factors are refused, named."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from core import explain, load_pretrained
from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_phi3 import phi3_config
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, TEXT, VOCAB, compare, reference_model, save_folder

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
SHORT = [1.0, 1.5, 2.0, 3.0]  # one per rotated pair of a head of 8
LONGROPE = {"type": "longrope", "short_factor": SHORT, "long_factor": [4.0] * 4}

PHI3 = {
    "phi3": lambda: transformers.Phi3Config(**TINY),
    "phi3-partial-window": lambda: transformers.Phi3Config(**TINY, partial_rotary_factor=0.5, sliding_window=5),
    # trained on 48 positions, stretched to 256: cos/sin × √(1 + ln(256/48) / ln 48)
    "phi3-longrope": lambda: transformers.Phi3Config(**dict(TINY, max_position_embeddings=256),
                                                     original_max_position_embeddings=48, rope_scaling=LONGROPE),
}


@pytest.mark.parametrize("name", sorted(PHI3))
def test_phi3_folder_matches_transformers(name, tmp_path):
    reference = reference_model(PHI3[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=True)
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 1e-6
    assert result.logit_error <= 1e-5 * max(1.0, result.logit_scale)
    assert result.ours_continuation == result.reference_continuation


@pytest.fixture(scope="module")
def longrope_pair(tmp_path_factory):
    reference = reference_model(PHI3["phi3-longrope"]())
    return save_folder(reference, tmp_path_factory.mktemp("phi3") / "phi3", add_bos=True), reference


def _edited(folder, tmp_path, drop=(), **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    for key in drop:
        config.pop(key, None)
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def test_longrope_is_read_from_its_older_su_name_and_runs_within_the_pretraining_length(longrope_pair, tmp_path):
    folder, reference = longrope_pair
    config = phi3_config(folder)
    assert config.longrope_short_factors == tuple(SHORT) and config.max_len == 48
    assert abs(config.longrope_attention_factor - (1 + torch.log(torch.tensor(256 / 48)) / torch.log(torch.tensor(48.)))
               ** 0.5) < 1e-6
    legacy = _edited(folder, tmp_path, drop=("rope_parameters",), rope_theta=10000.0,
                     rope_scaling={"type": "su", "short_factor": SHORT, "long_factor": [4.0] * 4})
    assert phi3_config(legacy) == config
    result = compare(legacy, reference)
    assert result.map_error <= 1e-6 and result.ours_continuation == result.reference_continuation
    with pytest.raises(ValueError, match="exceeds max_len 48"):
        load_pretrained(folder).model(None, torch.ones(1, 49, dtype=torch.long))


@torch.no_grad()
def test_the_sliding_window_shows_in_the_maps_and_the_kv_cache_equals_recomputation(tmp_path):
    folder = save_folder(reference_model(PHI3["phi3-partial-window"]()), tmp_path / "phi3", add_bos=True)
    model = load_pretrained(folder).model
    ids = torch.tensor([[BOS, 40, 41, 42, 43, 44, 45, 46, 47]])  # (1, 9)
    maps = model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, 9, 9)
    rows = torch.arange(9)
    allowed = (rows[:, None] >= rows[None, :]) & (rows[:, None] - rows[None, :] < 5)
    assert bool((maps[..., ~allowed] == 0).all()) and bool((maps[..., allowed] > 0).all())
    cache = model.kv_cache()
    for end in (3, 4, 6, 9):
        torch.testing.assert_close(model.next_token_logits(ids[:, :end], cache=cache),
                                   model.next_token_logits(ids[:, :end]), atol=1e-5, rtol=1e-5)
    assert explain(folder, TEXT).attention["decoder"].shape[:2] == (2, 4)


@pytest.mark.parametrize("changes, message", [
    (dict(rope_parameters={"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}),
     "rope scaling type 'yarn' is not supported for phi3; supported: default, longrope"),
    (dict(rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}), "type 'linear' is not supported"),
    (dict(rope_parameters={"rope_type": "longrope", "long_factor": [1.0] * 4, "rope_theta": 1e4}),
     "longrope 'short_factor' must be a list of numbers above 0, got None"),
    (dict(rope_parameters={"rope_type": "longrope", "short_factor": [1.0, -2.0, 1.0, 1.0], "rope_theta": 1e4}),
     "'short_factor' must be a list of numbers above 0"),
    (dict(rope_parameters={"rope_type": "longrope", "short_factor": [1.0] * 3, "rope_theta": 1e4}),
     "LongRoPE needs 4 short factors .half the rotated width., got 3"),
    (dict(partial_rotary_factor=1.5), "'partial_rotary_factor' 1.5 differs from its rope_parameters' 1.0"),
    (dict(partial_rotary_factor=1.5, rope_parameters=dict(LONGROPE, rope_theta=1e4, partial_rotary_factor=1.5)),
     "'partial_rotary_factor' must be in \\(0, 1\\], got 1.5"),
    (dict(attn_logit_softcapping=30.0), "'attn_logit_softcapping' is not understood by this reader"),
    (dict(num_key_value_heads=4),
     "config.json claims .* but model.safetensors holds model.layers.0.self_attn.qkv_proj"),
])
def test_phi3_settings_the_model_cannot_reproduce_are_refused_by_name(longrope_pair, tmp_path, changes, message):
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(longrope_pair[0], tmp_path, **changes))


def test_a_loaded_phi3_keeps_the_model_contract(longrope_pair):
    from tests.helpers.contract_checks import check_contract

    check_contract(load_pretrained(longrope_pair[0]).model, None,
                   torch.tensor([[BOS, 40, 41, 42, 43, 44], [BOS, 50, 51, 52, 53, 54]]))


def test_a_bf16_folder_runs_in_its_precision_like_the_reference(tmp_path):
    """Kept in bf16 as transformers keeps it: the maps within one step of its rounding (greedy steps may part
    on a near-tie: the fused kernel and the reference's eager one round half precision differently)."""
    import copy

    reference = reference_model(PHI3["phi3-longrope"]())
    folder = save_folder(copy.deepcopy(reference).to(torch.bfloat16), tmp_path / "phi3", add_bos=True)
    loaded = load_pretrained(folder)
    assert {p.dtype for p in loaded.model.parameters()} == {torch.bfloat16}
    half = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    result = compare(folder, half)
    assert result.ids_equal and result.logit_error <= 1e-2 * result.logit_scale
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])  # (1, T)
    with torch.no_grad():
        maps = loaded.model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T) float32
        theirs = half(ids, output_attentions=True).attentions
    rounded = max(float((maps[i].to(torch.bfloat16).float() - a.float()).abs().max()) for i, a in enumerate(theirs))
    assert rounded <= 2 ** -8
