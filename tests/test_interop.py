"""Importing PyTorch's nn.Transformer: identical hidden states, clear errors, and safe .pt loading."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from core.io.interop import config_for_nn_transformer, from_nn_transformer, load_state_dict_file
from core.model.transformer import Transformer
from tests.conftest import BOS, PAD, MarkerPayload, random_ids

SRC_VOCAB, TGT_VOCAB = 13, 11
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")


def reference(norm_first: bool, seed: int = 0) -> nn.Transformer:
    torch.manual_seed(seed)
    ref = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32,
                         dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    with torch.no_grad():  # non-trivial LayerNorms and biases, so a wrong mapping would show
        for name, parameter in ref.named_parameters():
            if "norm" in name or name.endswith("bias"):
                parameter.add_(torch.randn_like(parameter) * 0.2)
    return ref


def imported(ref: nn.Transformer) -> Transformer:
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, positional="none")
    return from_nn_transformer(ref, config)


def batch(padded: bool) -> tuple[torch.Tensor, torch.Tensor]:
    src, tgt = random_ids(3, 7, vocab=SRC_VOCAB, seed=1), random_ids(3, 5, vocab=TGT_VOCAB, seed=2)
    tgt[:, 0] = BOS
    if padded:
        src[1, 4:] = PAD
        src[2, 6:] = PAD
        tgt[1, 3:] = PAD
    return src, tgt


def reference_outputs(ref: nn.Transformer, model: Transformer, src: torch.Tensor, tgt: torch.Tensor):
    scale = math.sqrt(model.config.d_model)
    src_x, tgt_x = model.src_embed(src) * scale, model.tgt_embed(tgt) * scale
    causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool).triu(1)  # PyTorch: True = not allowed
    src_ignore, tgt_ignore = src == PAD, tgt == PAD
    memory = ref.encoder(src_x, src_key_padding_mask=src_ignore)
    hidden = ref(src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=src_ignore,
                 tgt_key_padding_mask=tgt_ignore, memory_key_padding_mask=src_ignore)
    return memory, hidden


# ---------------------------------------------------------------- equivalence
def test_config_follows_the_module() -> None:
    for norm_first in (False, True):
        config = config_for_nn_transformer(reference(norm_first), src_vocab_size=SRC_VOCAB,
                                           tgt_vocab_size=TGT_VOCAB, max_len=32, positional="none")
        assert (config.d_model, config.n_heads, config.d_ff) == (16, 4, 32)
        assert (config.n_encoder_layers, config.n_decoder_layers, config.dropout) == (2, 2, 0.0)
        assert config.norm == ("pre" if norm_first else "post") and config.max_len == 32


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
def test_imported_model_reproduces_nn_transformer(norm_first: bool, padded: bool) -> None:
    ref = reference(norm_first)
    model = imported(ref)
    src, tgt = batch(padded)
    with torch.no_grad():
        memory, memory_mask, _ = model.encode(src)
        hidden, _, _ = model.decode(tgt, memory, memory_mask)
    ref_memory, ref_hidden = reference_outputs(ref, model, src, tgt)
    real = src != PAD  # PyTorch may leave padded encoder positions as zeros (its fast path)
    torch.testing.assert_close(memory[real], ref_memory[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(hidden, ref_hidden, atol=1e-5, rtol=0)
    with torch.no_grad():  # and the same through forward, with both attention paths
        fused = model(src, tgt).logits
        explicit = model(src, tgt, return_attention=True).logits
    torch.testing.assert_close(fused, model.lm_head(ref_hidden), atol=1e-5, rtol=0)
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=0)


def test_import_from_a_state_dict_equals_import_from_the_module() -> None:
    ref = reference(False, seed=3)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    torch.manual_seed(0)
    a = from_nn_transformer(ref, config)
    torch.manual_seed(0)
    b = from_nn_transformer(ref.state_dict(), config)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert not a.training


def test_embeddings_and_output_projection_can_be_passed_in() -> None:
    ref = reference(True)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    src_table, tgt_table, head = torch.randn(SRC_VOCAB, 16), torch.randn(TGT_VOCAB, 16), torch.randn(TGT_VOCAB, 16)
    model = from_nn_transformer(ref, config, src_embed=src_table, tgt_embed=tgt_table, lm_head=head)
    assert torch.equal(model.src_embed.weight, src_table) and torch.equal(model.tgt_embed.weight, tgt_table)
    assert torch.equal(model.lm_head.weight, head)
    with pytest.raises(ValueError, match="src_embed"):
        from_nn_transformer(ref, config, src_embed=torch.randn(SRC_VOCAB + 1, 16))


# ---------------------------------------------------------------- errors
def test_unexpected_key_is_a_value_error() -> None:
    ref = reference(False)
    state = {**ref.state_dict(), "encoder.layers.0.rotary.weight": torch.zeros(4)}
    with pytest.raises(ValueError, match="rotary"):
        from_nn_transformer(state, config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB))


def test_missing_key_is_a_value_error() -> None:
    ref = reference(False)
    state = dict(ref.state_dict())
    del state["decoder.layers.1.multihead_attn.out_proj.weight"]
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    with pytest.raises(ValueError, match="missing"):
        from_nn_transformer(state, config)


@pytest.mark.parametrize("change", [{"d_ff": 64}, {"d_model": 32}, {"n_encoder_layers": 3}, {"n_decoder_layers": 1}])
def test_config_that_does_not_fit_the_weights_is_a_value_error(change: dict) -> None:
    ref = reference(False)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    with pytest.raises(ValueError):
        from_nn_transformer(ref, type(config).from_dict({**config.to_dict(), **change}))


@pytest.mark.parametrize("kwargs", [{"activation": "gelu"}, {"layer_norm_eps": 1e-6}, {"bias": False}])
def test_features_we_cannot_reproduce_are_refused(kwargs: dict) -> None:
    ref = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                         batch_first=True, **kwargs)
    with pytest.raises(ValueError):
        config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)


# ---------------------------------------------------------------- .pt files
def test_plain_torch_save_state_dict_loads_and_imports(tmp_path: Path) -> None:
    ref = reference(True, seed=4)
    path = tmp_path / "nn_transformer.pt"
    torch.save(ref.state_dict(), path)
    state = load_state_dict_file(path)
    assert state.keys() == ref.state_dict().keys()
    assert all(torch.equal(state[k], v) for k, v in ref.state_dict().items())
    model = from_nn_transformer(state, config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB,
                                                                 tgt_vocab_size=TGT_VOCAB, positional="none"))
    src, tgt = batch(padded=True)
    with torch.no_grad():
        memory, memory_mask, _ = model.encode(src)
        hidden, _, _ = model.decode(tgt, memory, memory_mask)
    torch.testing.assert_close(hidden, reference_outputs(ref, model, src, tgt)[1], atol=1e-5, rtol=0)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
@pytest.mark.parametrize("force_unsafe", [False, True], ids=["default-env", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"])
@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_pickle_payload_is_refused_and_never_runs(
    tmp_path: Path, marker_payload, monkeypatch: pytest.MonkeyPatch, force_unsafe: bool, writer: str
) -> None:
    payload, marker = marker_payload
    path = tmp_path / "evil.pt"
    if writer == "pickle":
        path.write_bytes(payload)
    else:
        torch.save({"weight": MarkerPayload(marker)}, path)
    if force_unsafe:
        monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(ValueError, match="evil.pt"):
        load_state_dict_file(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [([torch.zeros(2)], "state dict"), ({"w": torch.zeros(2), "step": 3}, "state dict"), (None, "cannot read")],
)
def test_files_that_are_not_state_dicts_are_refused(tmp_path: Path, content, fragment: str) -> None:
    path = tmp_path / "odd.pt"
    if content is None:
        torch.save({"w": torch.zeros(100)}, path)
        path.write_bytes(path.read_bytes()[:-30])  # truncated
    else:
        torch.save(content, path)
    with pytest.raises(ValueError, match=fragment):
        load_state_dict_file(path)


def test_missing_pt_file_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absent.pt"):
        load_state_dict_file(tmp_path / "absent.pt")
