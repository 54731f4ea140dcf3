"""Rotary scaling in Hugging Face folders — ``linear``, ``dynamic`` (NTK), ``llama3`` and ``yarn`` — equal to
``transformers``: the frequencies and table factor to 1e-6 of ``ROPE_INIT_FUNCTIONS``, and tiny random
Llama / Qwen2 models' maps to 1e-6 and logits to 1e-5 × scale of the eager reference (greedy continuations
equal), each scaling visible in the maps. Any other type, or a key a type does not read, is refused by name,
and so is an attention setting the Llama reader does not reproduce."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from core import load_pretrained
from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_decoder import rope_settings
from core.model.families.rope import RopeScaling, frequencies
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, VOCAB, compare, reference_model, save_folder

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
#: name → (max_position_embeddings, rope_scaling): each scaling bites on TEXT (about 14 tokens) + 8 more.
SCALINGS = {
    "linear": (64, {"rope_type": "linear", "factor": 3.0, "rope_theta": 10000.0}),
    "dynamic": (8, {"rope_type": "dynamic", "factor": 8.0, "rope_theta": 10000.0}),  # T > 8: the base grows
    "llama3": (64, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8, "rope_theta": 500.0}),
    "yarn": (64, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "rope_theta": 500.0}),
    "yarn-mscale": (64, {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 256, "beta_fast": 4.0,
                         "beta_slow": 1.0, "mscale": 0.8, "mscale_all_dim": 0.5, "truncate": False,
                         "rope_theta": 1000.0}),
    "yarn-attention-factor": (64, {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32,
                                   "attention_factor": 1.3, "rope_theta": 10000.0}),
}


def _config(name: str, cls: str = "LlamaConfig", **extra):
    trained, rope = SCALINGS[name]
    return getattr(transformers, cls)(**TINY, max_position_embeddings=trained, rope_scaling=dict(rope), **extra)


def _ours(config) -> tuple[RopeScaling, float]:
    rope = rope_settings(config.to_dict(), Path("folder"))
    return RopeScaling(rope["type"], rope["factor"], rope["low"], rope["high"], rope["original"], rope["beta_fast"],
                       rope["beta_slow"], rope["truncate"], rope["attention_factor"]), rope["base"]


@pytest.mark.parametrize("name", sorted(SCALINGS))
@pytest.mark.parametrize("length", [None, 40])
def test_frequencies_equal_the_reference(name: str, length: int | None) -> None:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = _config(name)
    init = ROPE_INIT_FUNCTIONS[config.rope_parameters["rope_type"]]
    inv_freq, attention_scaling = init(config, None, seq_len=length) if length else init(config, None)
    scaling, base = _ours(config)
    ours = frequencies(config.head_dim, base, scaling, length)  # (dk/2,)
    torch.testing.assert_close(ours, inv_freq, rtol=1e-6, atol=0.0)
    assert scaling.table_scale == pytest.approx(attention_scaling, rel=1e-12)
    assert not torch.allclose(ours, frequencies(config.head_dim, base), rtol=1e-3) or (name, length) == (
        "dynamic", None)  # each scaling moves the frequencies (dynamic only past the trained context)


@pytest.mark.parametrize("name, cls", [(n, "LlamaConfig") for n in sorted(SCALINGS)] + [("yarn", "Qwen2Config")])
def test_scaled_folder_matches_transformers(name: str, cls: str, tmp_path: Path) -> None:
    reference = reference_model(_config(name, cls))
    folder = save_folder(reference, tmp_path / name, add_bos=True)
    result = compare(folder, reference)
    assert result.ids_equal and result.ours_continuation == result.reference_continuation
    assert result.map_error <= 1e-6 and result.logit_error <= 1e-5 * result.logit_scale
    assert load_pretrained(folder).model.config.rope_type == SCALINGS[name][1]["rope_type"]
    raw = json.loads((folder / "config.json").read_text())
    unscaled = reference_model(getattr(transformers, cls)(**dict(TINY, max_position_embeddings=64),
                                                          rope_theta=SCALINGS[name][1]["rope_theta"]))
    unscaled.load_state_dict(copy.deepcopy(reference.state_dict()))
    assert compare(folder, unscaled).map_error > 1e-3, raw["rope_parameters"]  # the scaling is in the maps


def test_a_dynamic_model_reads_past_its_trained_context(tmp_path: Path) -> None:
    folder = save_folder(reference_model(_config("dynamic")), tmp_path / "dynamic", add_bos=True)
    assert load_pretrained(folder).model.config.max_len == 64  # 8 × the 8 trained positions


def _folder_with(tmp_path: Path, **changes) -> Path:
    config = transformers.LlamaConfig(**TINY, max_position_embeddings=64).to_dict()
    config.update(changes)
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("changes, message", [
    ({"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0], "long_factor": [2.0]}},
     "rope scaling type 'longrope' is not supported; supported: default, linear, dynamic, llama3, yarn"),
    ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4, "extrapolation_factor": 1.0}},
     "rope scaling key 'extrapolation_factor' is not understood for type 'yarn'"),
    ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4, "low_freq_factor": 1.0}},
     "rope scaling key 'low_freq_factor' is not understood for type 'linear'; understood: factor"),
    ({"rope_scaling": "yarn"}, "'rope_scaling' must be an object"),
    ({"attn_logit_softcapping": 50.0}, "'attn_logit_softcapping' is not understood by this reader"),
    ({"attention_chunk_size": 8192}, "'attention_chunk_size' is not understood by this reader"),
    ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types .* is not supported"),
    ({"sliding_window": 16}, "a sliding_window in a llama config is not supported"),
])
def test_an_attention_or_rotary_setting_not_understood_is_refused_by_name(changes, message, tmp_path) -> None:
    with pytest.raises(CheckpointError, match=message) as caught:
        load_pretrained(_folder_with(tmp_path, **changes))
    assert "\n" not in str(caught.value) and str(caught.value).startswith("llama: ")
