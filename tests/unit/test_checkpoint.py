"""Checkpoints: bit-exact round trips, every fault refused with a CheckpointError naming the file,
and atomic saves that never lose the previous file."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from core.io.checkpoint import CheckpointError, load, read_info, save
from core.text.tokenizer import Tokenizer
from tests.helpers.checkpoint_files import read_raw, refused, rewrite
from tests.helpers.tiny import LABELS, build_checkpoint, random_ids, tiny_model


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize(
    ("architecture", "tie", "bias"),
    [("encoder-decoder", False, False), ("encoder", False, False), ("decoder", False, True),
     ("encoder-decoder", True, True), ("decoder", True, False)],
)
def test_save_then_load_is_bit_exact(tmp_path: Path, char_tokenizer: Tokenizer, architecture: str, tie: bool,
                                     bias: bool) -> None:
    vocab = char_tokenizer.vocab_size
    model = tiny_model(architecture, vocab=vocab, tie_embeddings=tie, positional="learned", score="general",
                       output_bias=bias)
    with torch.no_grad():  # make every parameter distinctive (LayerNorms start as ones/zeros)
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.01)
    tokenizers = {"source": char_tokenizer, "target": char_tokenizer}
    extra_tensors = {"snap/encoder": torch.rand(2, 3, 4, dtype=torch.float16), "steps": torch.arange(5)}
    path = tmp_path / "m.safetensors"
    sha = save(path, model, tokenizers, task="reverse", metrics={"accuracy": 0.25, "bleu": [1, 2]},
               extra={"labels": LABELS, "nested": {"a": None}}, extra_tensors=extra_tensors)
    ckpt = load(path)
    assert not ckpt.model.training and ckpt.config == model.config
    before, after = model.state_dict(), ckpt.model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) and before[k].dtype == after[k].dtype for k in before)
    assert ckpt.info.tokenizers == tokenizers
    assert (ckpt.info.task, ckpt.info.metrics) == ("reverse", {"accuracy": 0.25, "bleu": [1, 2]})
    assert ckpt.info.extra == {"labels": LABELS, "nested": {"a": None}}
    assert ckpt.extra_tensors.keys() == extra_tensors.keys()
    assert all(torch.equal(ckpt.extra_tensors[k], v) and ckpt.extra_tensors[k].dtype == v.dtype
               for k, v in extra_tensors.items())
    assert ckpt.info.sha256 == sha == read_info(path).sha256
    batch = {}
    if model.config.has_encoder:
        batch["src"] = random_ids(2, 7, vocab=vocab)
    if model.config.has_decoder:
        batch["tgt"] = random_ids(2, 5, vocab=vocab)
    with torch.no_grad():
        assert torch.equal(model(**batch).logits, ckpt.model(**batch).logits)
    if tie:
        assert ckpt.model.lm_head.weight is ckpt.model.tgt_embed.weight
        assert "lm_head.weight" not in read_raw(path)[1]


def test_read_info_needs_no_model_and_matches_load(saved: Path) -> None:
    info = read_info(saved)
    assert info.path == saved and info.task == "reverse"
    assert info.config == load(saved).config


# ---------------------------------------------------------------- unreadable files
def pt_bytes(tmp_path: Path) -> bytes:
    torch.save(tiny_model().state_dict(), tmp_path / "weights.pt")
    return (tmp_path / "weights.pt").read_bytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda good, tmp: b"",
        lambda good, tmp: good[:4],
        lambda good, tmp: good[: len(good) // 2],
        lambda good, tmp: good[:-1],
        lambda good, tmp: random.Random(0).randbytes(4096),
        lambda good, tmp: b"This is a README, not a checkpoint.\n" * 20,
        lambda good, tmp: pt_bytes(tmp),
    ],
    ids=["0-bytes", "4-bytes", "half", "size-minus-1", "random-bytes", "text-file", "pt-renamed"],
)
def test_unreadable_file_is_refused_naming_it(saved: Path, tmp_path: Path, make) -> None:
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes(make(saved.read_bytes(), tmp_path))
    refused(bad)


def test_missing_file_is_refused_as_not_found(tmp_path: Path) -> None:
    refused(tmp_path / "absent.safetensors", "not found")


def test_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "folder.safetensors"
    folder.mkdir()
    refused(folder, "not a file")


def test_pickle_payload_renamed_to_safetensors_never_runs(tmp_path: Path, marker_payload) -> None:
    payload, marker = marker_payload
    bad = tmp_path / "evil.safetensors"
    bad.write_bytes(payload)
    refused(bad)
    assert not marker.exists()


# ---------------------------------------------------------------- integrity and consistency
def test_rewrite_helper_alone_keeps_the_file_loadable(saved: Path) -> None:
    rewrite(saved)  # so the refusals below come from the change, not from the helper
    assert load(saved).config.d_model == 16


def test_one_flipped_byte_in_the_tensor_data_is_a_checksum_mismatch(saved: Path) -> None:
    data = bytearray(saved.read_bytes())
    header = int.from_bytes(data[:8], "little")
    position = 8 + header + (len(data) - 8 - header) // 2
    data[position] ^= 0x01
    saved.write_bytes(bytes(data))
    refused(saved, "checksum")


def test_metadata_edit_without_a_new_checksum_is_caught(saved: Path) -> None:
    metadata, tensors = read_raw(saved)
    metadata["task"] = json.dumps("sort")
    save_file(tensors, str(saved), metadata=metadata)
    refused(saved, "checksum")


def test_safetensors_file_without_our_metadata_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain.safetensors"
    save_file(dict(tiny_model().state_dict()), str(plain))
    refused(plain, "not an Attnscope checkpoint")


def test_newer_format_version_is_refused(saved: Path) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.update(format_version="2"))
    refused(saved, "version")


@pytest.mark.parametrize(
    ("built_with", "change", "field"),
    [({}, {"d_model": 32}, "d_model"), ({}, {"d_ff": 64}, "d_ff"),
     ({"positional": "learned"}, {"max_len": 30}, "max_len")],
)
def test_config_that_does_not_match_the_weights_names_the_field(
    tmp_path: Path, char_tokenizer: Tokenizer, built_with: dict, change: dict, field: str
) -> None:
    path = build_checkpoint(tmp_path / "changed.safetensors", "encoder-decoder", char_tokenizer, **built_with)
    rewrite(path, config=change)
    refused(path, field)  # from the header's shapes alone: read_info refuses it too


def test_config_with_more_layers_than_the_weights_lists_the_missing_keys(saved: Path) -> None:
    rewrite(saved, config={"n_encoder_layers": 3})
    with pytest.raises(CheckpointError, match="missing encoder_layers.2."):
        load(saved)


def test_renamed_module_lists_unexpected_and_missing_keys(saved: Path) -> None:
    def rename(metadata, tensors):
        tensors["decoder_layers.0.norm1.gain"] = tensors.pop("decoder_layers.0.norm1.weight")

    rewrite(saved, edit=rename)
    with pytest.raises(CheckpointError) as caught:
        load(saved)
    message = str(caught.value)
    assert "decoder_layers.0.norm1.weight" in message and "decoder_layers.0.norm1.gain" in message


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_weight_is_refused(saved: Path, value: float) -> None:
    def poison(metadata, tensors):
        tensors["encoder_layers.0.ff.linear1.weight"][0, 0] = value

    rewrite(saved, edit=poison)
    with pytest.raises(CheckpointError, match="non-finite") as caught:
        load(saved)
    assert saved.name in str(caught.value) and "encoder_layers.0.ff.linear1.weight" in str(caught.value)


def test_tokenizer_whose_vocab_differs_from_the_embedding_is_refused(tmp_path: Path, char_tokenizer) -> None:
    path = tmp_path / "mismatch.safetensors"
    model = tiny_model(vocab=char_tokenizer.vocab_size + 1)
    save(path, model, {"source": char_tokenizer, "target": char_tokenizer})
    refused(path, "tokenizer")


def test_missing_tokenizer_role_is_refused(tmp_path: Path, char_tokenizer: Tokenizer) -> None:
    path = tmp_path / "no-target.safetensors"
    save(path, tiny_model(vocab=char_tokenizer.vocab_size), {"source": char_tokenizer})
    refused(path, "target tokenizer")


def test_missing_metadata_entry_is_refused(saved: Path) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.pop("extra"))
    refused(saved, "extra")


def test_invalid_config_json_is_refused(saved: Path) -> None:
    rewrite(saved, config={"norm": "sideways"})
    refused(saved, "norm")


# ---------------------------------------------------------------- atomic saves
@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_failed_save_keeps_the_previous_checkpoint_and_leaves_no_temp_files(
    saved: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    before = load(saved).model.state_dict()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, broken)
    with pytest.raises(CheckpointError, match=saved.name):
        save(saved, tiny_model(seed=99, vocab=load(saved).config.src_vocab_size),
             dict(read_info(saved).tokenizers))
    monkeypatch.undo()
    after = load(saved).model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert sorted(p.name for p in saved.parent.iterdir()) == [saved.name]


def test_unserialisable_metadata_is_refused_before_touching_the_file(saved: Path) -> None:
    original = saved.read_bytes()
    with pytest.raises(CheckpointError, match="JSON"):
        save(saved, load(saved).model, dict(read_info(saved).tokenizers), metrics={"when": object()})
    assert saved.read_bytes() == original
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]


def test_replacing_a_checkpoint_keeps_its_permissions(saved: Path) -> None:
    saved.chmod(0o600)
    save(saved, load(saved).model, dict(read_info(saved).tokenizers), task="again")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert read_info(saved).task == "again"


def test_new_checkpoint_gets_the_umask_default_mode(tmp_path: Path, char_tokenizer: Tokenizer) -> None:
    umask = os.umask(0o022)
    try:
        path = build_checkpoint(tmp_path / "sub" / "fresh.safetensors", "decoder", char_tokenizer)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert load(path).config.architecture == "decoder"
