"""The decoder families opened as Hugging Face folders equal the reference implementation (``transformers``).

Llama, Mistral (sliding window), Qwen2 (q/k/v biases), Qwen3 (q/k RMSNorm), Gemma (1 + g norms,
√d embedding scale, GeGLU, explicit head width), GPT-2, GPT-NeoX/Pythia, OPT and Phi: token ids
equal, every layer's maps within 1e-5, logits within 1e-4 × their scale, greedy continuations equal.
"""

from __future__ import annotations

import copy
import json
import math
import struct

import pytest
import torch

from core import explain, load_pretrained
from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_gpt import gpt_config
from core.io.pretrained.hf_llama import llama_config
from core.model.contract import AttentionControls
from core.model.families.gpt import GptConfig, GptModel
from core.model.families.llama import LlamaConfig, LlamaModel
from tests.helpers.hf_decoder_reference import BOS, EOS, PAD, TEXT, VOCAB, compare, reference_model, save_folder

transformers = pytest.importorskip("transformers")

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)

LLAMA_FAMILY = {
    "llama": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, tie_word_embeddings=False),
    "llama-tied-biases": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=4, tie_word_embeddings=True,
                                                          attention_bias=True, mlp_bias=True),
    "llama3-rope": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8, "rope_theta": 500.0}),
    "llama-linear-rope": lambda: transformers.LlamaConfig(**TINY, num_key_value_heads=2, rope_scaling={
        "rope_type": "linear", "factor": 3.0, "rope_theta": 10000.0}),
    "mistral": lambda: transformers.MistralConfig(**TINY, num_key_value_heads=2, sliding_window=4),
    "qwen2": lambda: transformers.Qwen2Config(**TINY, num_key_value_heads=2, tie_word_embeddings=True),
    "qwen3": lambda: transformers.Qwen3Config(**TINY, num_key_value_heads=2, head_dim=16),
    "gemma": lambda: transformers.GemmaConfig(**TINY, num_key_value_heads=1, head_dim=16),
}


@pytest.mark.parametrize("name", sorted(LLAMA_FAMILY))
def test_llama_family_folder_matches_transformers(name, tmp_path):
    reference = reference_model(LLAMA_FAMILY[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=True)
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 1e-5
    assert result.logit_error <= 1e-4 * result.logit_scale
    assert result.ours_continuation == result.reference_continuation


LAYERNORM_FAMILY = {
    "gpt2": lambda: transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                            bos_token_id=EOS, eos_token_id=EOS),
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**TINY, rotary_pct=0.5),
    "gpt_neox-sequential": lambda: transformers.GPTNeoXConfig(**TINY, use_parallel_residual=False,
                                                              tie_word_embeddings=True),
    "opt": lambda: transformers.OPTConfig(**_opt_sizes()),
    "opt-post-norm": lambda: transformers.OPTConfig(**_opt_sizes(), do_layer_norm_before=False),
    "phi": lambda: transformers.PhiConfig(**TINY, partial_rotary_factor=0.5),
    "phi-grouped": lambda: transformers.PhiConfig(**TINY, num_key_value_heads=2, partial_rotary_factor=0.75),
}


def _opt_sizes() -> dict:
    sizes = {k: v for k, v in TINY.items() if k != "intermediate_size"}
    return dict(sizes, ffn_dim=64, word_embed_proj_dim=32, bos_token_id=EOS)


@pytest.mark.parametrize("name", sorted(LAYERNORM_FAMILY))
def test_layernorm_family_folder_matches_transformers(name, tmp_path):
    reference = reference_model(LAYERNORM_FAMILY[name]())
    folder = save_folder(reference, tmp_path / name, add_bos=name.startswith("opt"))
    result = compare(folder, reference)
    assert result.ids_equal
    assert result.map_error <= 1e-5
    assert result.logit_error <= 1e-4 * result.logit_scale
    assert result.ours_continuation == result.reference_continuation


@pytest.fixture(scope="module")
def mistral_folder(tmp_path_factory):
    reference = reference_model(LLAMA_FAMILY["mistral"]())
    return save_folder(reference, tmp_path_factory.mktemp("mistral") / "mistral", add_bos=True)


@torch.no_grad()
def test_sliding_window_cells_are_exactly_zero_and_rows_sum_to_one(mistral_folder):
    loaded = load_pretrained(mistral_folder)
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])  # (1, T)
    maps = loaded.model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T)
    rows = torch.arange(ids.size(1))
    allowed = (rows[:, None] >= rows[None, :]) & (rows[:, None] - rows[None, :] < 4)  # causal, window 4
    assert ids.size(1) > 8 and bool((maps[..., ~allowed] == 0).all())
    assert bool((maps[..., allowed] > 0).all())
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))


@torch.no_grad()
def test_controls_are_honoured(mistral_folder):
    model = load_pretrained(mistral_folder).model
    ids = torch.tensor([[1, 40, 41, 42, 43, 44]])  # (1, 6)
    base = model(None, ids, return_attention=True)
    uniform = model(None, ids, return_attention=True, controls=AttentionControls(temperature=0.0))
    window = uniform.attention["decoder"][0, 0, 0, -1]  # the last query sees its 4 latest keys
    torch.testing.assert_close(window, torch.tensor([0, 0, 0.25, 0.25, 0.25, 0.25]))
    hard = model(None, ids, return_attention=True, controls=AttentionControls(hard=True)).attention["decoder"]
    assert bool(((hard == 0) | (hard == 1)).all()) and bool((hard.sum(-1) == 1).all())
    knocked = torch.ones(2, 4)
    knocked[1, 2] = 0.0
    masked = model(None, ids, controls=AttentionControls(head_mask={"decoder": knocked}))
    assert float((masked.logits - base.logits).abs().max()) > 1e-3
    open_ = model(None, ids, return_attention=True, controls=AttentionControls(causal=False)).attention["decoder"]
    assert float(open_[0, 0, 0, 0, 1:].sum()) > 0  # the first token now sees later keys (within its window)


@torch.no_grad()
def test_right_padding_leaves_the_real_tokens_unchanged(mistral_folder):
    model = load_pretrained(mistral_folder).model
    ids = torch.tensor([[1, 40, 41, 42, 43, 44], [1, 50, 51, PAD, PAD, PAD]])  # (2, 6)
    key_mask = ids != PAD
    batch = model(None, ids, return_attention=True, key_mask=key_mask)
    alone = model(None, ids[1:, :3], return_attention=True)
    torch.testing.assert_close(batch.logits[1, :3], alone.logits[0], atol=1e-5, rtol=1e-5)
    assert bool((batch.attention["decoder"][:, 1, :, :, 3:] == 0).all())


def test_loaded_decoder_reports_family_head_and_readable_tokens(mistral_folder):
    loaded = load_pretrained(mistral_folder)
    assert (loaded.family, loaded.head, loaded.architecture) == ("mistral", "next_token", "decoder")
    assert loaded.head_groups() == (0, 0, 1, 1)
    assert loaded.tokenizer.encode("the street").tokens == ["<s>", "the", " s", "tre", "et"]  # no "Ġ"


def _folder_with_config(tmp_path, config: dict):
    folder = tmp_path / config["model_type"]
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_unsupported_rope_scaling_is_refused_by_name(tmp_path):
    config = LLAMA_FAMILY["llama"]().to_dict()
    config["rope_parameters"] = {"rope_type": "proportional", "factor": 4.0, "rope_theta": 10000.0}
    with pytest.raises(CheckpointError, match="rope scaling type 'proportional' is not supported; supported: default"):
        load_pretrained(_folder_with_config(tmp_path, config))


def test_opt_with_an_embedding_projection_is_refused_in_one_line(tmp_path):
    config = transformers.OPTConfig(**dict(_opt_sizes(), word_embed_proj_dim=16)).to_dict()
    with pytest.raises(CheckpointError, match=r"^opt: an OPT embedding projection .* is not supported$"):
        load_pretrained(_folder_with_config(tmp_path, config))


def _sparse_safetensors(path, shapes: dict[str, tuple[int, ...]]) -> None:
    """A safetensors file whose header names float32 ``shapes``; the data is a hole (no disk, no memory)."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(8 + len(raw) + offset)


def test_a_model_over_the_load_budget_is_refused_with_its_size_and_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(6 * 2**30))  # a machine with 6 GiB available
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=16384, n_inner=20000, n_layer=1, n_head=4,
                                     n_positions=64, bos_token_id=EOS, eos_token_id=EOS).to_dict()
    folder = _folder_with_config(tmp_path, config)
    _sparse_safetensors(folder / "model.safetensors", {
        "transformer.wte.weight": (VOCAB, 16384), "transformer.wpe.weight": (64, 16384),
        "transformer.h.0.attn.c_attn.weight": (16384, 3 * 16384),
        "transformer.h.0.mlp.c_fc.weight": (16384, 20000), "transformer.h.0.mlp.c_proj.weight": (20000, 16384)})
    with pytest.raises(CheckpointError, match=r"gpt2: 5\.5 GiB of weights as float32 is over the 4\.0 GiB this "
                                              r"machine can give a model now \(6\.0 GiB available less 2\.0 GiB"):
        load_pretrained(folder)  # the claims (2.7 GiB at 2 bytes a parameter) fit; the float32 weights do not
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(3 * 2**30))
    with pytest.raises(CheckpointError, match=r"claims at least 1,466,957,824 parameters \(2\.7 GiB at 2 bytes "
                                              r"each\), over the limit of 536,870,912 \(1\.0 GiB this machine"):
        load_pretrained(folder)


@pytest.mark.parametrize("model, expected_millions", [
    (lambda: GptModel(GptConfig(vocab_size=50257, d_model=768, n_decoder_layers=12, n_heads=12, d_ff=3072,
                                max_len=1024, n_positions=1024)), 124),  # GPT-2 small
    (lambda: GptModel(GptConfig(vocab_size=50304, d_model=768, n_decoder_layers=12, n_heads=12, d_ff=3072,
                                max_len=2048, positions="rotary", rotary_dim=16, block="parallel",
                                tie_embeddings=False)), 162),  # Pythia-160M
    (lambda: LlamaModel(LlamaConfig(vocab_size=151936, d_model=896, n_decoder_layers=24, n_heads=14, n_kv_heads=2,
                                    d_ff=4864, qkv_bias=True)), 494),  # Qwen2-0.5B
])
def test_the_common_small_decoders_fit_in_4_gib_as_float32(model, expected_millions):
    with torch.device("meta"):
        built = model()
    count = sum(p.numel() for p in built.parameters())  # tied weights counted once
    assert round(count / 1e6) == expected_millions
    assert 4 * count <= 4 * 2**30


def test_transformers_4_rotary_keys_are_read(tmp_path):
    neox = transformers.GPTNeoXConfig(**TINY).to_dict()
    del neox["rope_parameters"]
    neox.update(rotary_pct=0.5, rotary_emb_base=500.0)
    config = gpt_config(_folder_with_config(tmp_path, neox))
    assert (config.rotary_dim, config.rope_base, config.block) == (4, 500.0, "parallel")
    llama = transformers.LlamaConfig(**TINY).to_dict()
    del llama["rope_parameters"]
    llama.update(rope_theta=20000.0, rope_scaling={"type": "linear", "factor": 2.0})
    config = llama_config(_folder_with_config(tmp_path, llama))
    assert (config.rope_base, config.rope_type, config.rope_factor) == (20000.0, "linear", 2.0)


def test_a_decoder_folder_is_explained(mistral_folder):
    explanation = explain(mistral_folder, TEXT)
    maps = torch.as_tensor(explanation.attention["decoder"])  # (L, H, T, T)
    assert maps.shape[:2] == (2, 4) and maps.shape[2] == maps.shape[3] > 8
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))
    assert explanation.architecture == "decoder" and explanation.target_tokens[0] == "<s>"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_sharded_half_precision_folder_runs_in_its_precision_like_the_reference(tmp_path, dtype):
    """Kept in bf16 / fp16 as transformers keeps it (norms, softmax and rotary tables in float32): the maps
    equal the reference run in the same precision within its rounding, far closer than to float32."""
    reference = reference_model(LLAMA_FAMILY["qwen2"]())
    folder = save_folder(copy.deepcopy(reference).to(dtype), tmp_path / "qwen2", add_bos=True,
                         max_shard_size="20KB")
    assert (folder / "model.safetensors.index.json").is_file() and not (folder / "model.safetensors").exists()
    loaded = load_pretrained(folder)
    assert {p.dtype for p in loaded.model.parameters()} == {dtype}
    half = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    assert half.dtype == dtype  # transformers keeps the stored precision too
    result = compare(folder, half)
    assert result.ids_equal and result.logit_error <= 1e-2 * result.logit_scale  # (greedy steps may part on a
    # near-tie: our fused kernel and the reference's eager one round half precision differently)
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])  # (1, T)
    with torch.no_grad():
        ours = loaded.model(None, ids, return_attention=True)
        theirs = half(ids, output_attentions=True).attentions  # the reference's maps, rounded to its dtype
        wide = load_pretrained(folder).model.float()(None, ids, return_attention=True)  # float32 on the same weights
    maps = ours.attention["decoder"]  # (L, 1, H, T, T) float32
    assert ours.logits.dtype == maps.dtype == torch.float32
    rounded = max(float((maps[i].to(dtype).float() - a.float()).abs().max()) for i, a in enumerate(theirs))
    assert rounded <= 2 ** -8  # at most one step of the reference's rounding
    assert float((maps - wide.attention["decoder"]).abs().max()) > 1e-4  # the precision is the stored one


def test_a_layer_count_the_weights_do_not_hold_is_refused_before_building(tmp_path):
    folder = save_folder(reference_model(LAYERNORM_FAMILY["gpt2"]()), tmp_path / "gpt2", add_bos=False)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(dict(config, n_layer=10**9)))
    with pytest.raises(CheckpointError, match="claims 1,000,000,000 layers .n_layer. but model.safetensors holds 2"):
        load_pretrained(folder)


@pytest.mark.parametrize("family, name", [("llama", "mistral"), ("llama", "gemma"), ("gpt", "opt"), ("gpt", "phi")])
@torch.no_grad()
def test_kv_cache_steps_equal_full_recomputation(family, name, tmp_path):
    builders = LLAMA_FAMILY if family == "llama" else LAYERNORM_FAMILY
    folder = save_folder(reference_model(builders[name]()), tmp_path / name, add_bos=True)
    model = load_pretrained(folder).model
    ids = torch.tensor([[1, 40, 41, 42, 43, 44, 45, 46, 47]])  # (1, 9): past Mistral's window of 4
    cache = model.kv_cache()
    for end in (3, 4, 6, 9):  # a 3-token prompt, then one and several tokens at a time
        cached = model.next_token_logits(ids[:, :end], controls=AttentionControls(), cache=cache)
        torch.testing.assert_close(cached, model.next_token_logits(ids[:, :end]), atol=1e-5, rtol=1e-5)
    assert cache.length == 9


def test_a_tensor_the_family_does_not_know_is_refused_naming_the_folder(mistral_folder, tmp_path):
    from safetensors.torch import load_file, save_file
    folder = tmp_path / "mine"
    folder.mkdir()
    for path in mistral_folder.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    weights = load_file(folder / "model.safetensors")
    save_file({**weights, "model.adapter.weight": torch.zeros(2, 2)}, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"^mine: unexpected tensor 'model.adapter.weight'"):
        load_pretrained(folder)
