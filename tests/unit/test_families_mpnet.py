"""MPNet folders equal ``transformers`` eager: the bare encoder and each task head, every layer's maps with the
relative position bias (exact and logarithmic buckets, clamped past 128), padding; a sentence-transformers
folder (all-mpnet-base-v2's layout) gives the mean-pooled, normalised embedding; what transformers' MPNet
fixes in its code and a config says otherwise is refused, named."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from core import load_pretrained
from core.inspect.sentences import sentence_embeddings
from core.io.checkpoint import CheckpointError
from tests.helpers.hf_reference import (REF_TEXTS, REF_WORDS, ROBERTA_SPECIALS, randomize, ref_batch, ref_forward,
                                        ref_wordpiece, save_ref_folder)

transformers = pytest.importorskip("transformers")

VOCAB = len(ROBERTA_SPECIALS) + len(REF_WORDS)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}
HEADS = {"Model": ("hidden", "last_hidden_state"), "ForMaskedLM": ("masked_lm", "logits"),
         "ForSequenceClassification": ("classes", "logits"), "ForTokenClassification": ("token_classes", "logits")}


def mpnet_config(**extra):
    return transformers.MPNetConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=64, max_position_embeddings=200, id2label=LABELS,
                                    label2id={v: k for k, v in LABELS.items()}, **extra)


def _reference(suffix: str, seed: int = 0):
    torch.manual_seed(seed)
    return randomize(getattr(transformers, "MPNet" + suffix)(mpnet_config()), seed=seed)


@pytest.mark.parametrize("suffix", list(HEADS))
def test_mpnet_and_its_heads_equal_transformers(tmp_path, suffix):
    model = _reference(suffix)
    folder = save_ref_folder(model, tmp_path / "mpnet", ref_wordpiece(ROBERTA_SPECIALS))
    pretrained = load_pretrained(folder)
    assert (pretrained.family, pretrained.head) == ("mpnet", HEADS[suffix][0])
    ids, real = ref_batch(pretrained, folder)  # two texts, the shorter right-padded
    theirs = ref_forward(model, ids, real)
    with torch.no_grad():
        ours = pretrained.model(ids, return_attention=True, key_mask=real)
    maps = ours.attention["encoder"]  # (L, B, H, T, T)
    assert float((maps - torch.stack(theirs.attentions)).abs().max()) <= 2e-6  # float32: a few ulps of the largest weights, whatever the summation order
    assert bool((maps[:, 1, :, :, ~real[1]] == 0).all())  # padding keys
    expected = getattr(theirs, HEADS[suffix][1])
    assert float((ours.logits - expected).abs().max()) <= 1e-5 * max(1.0, float(expected.abs().max()))
    if HEADS[suffix][0] in ("classes", "token_classes"):
        assert pretrained.labels == tuple(LABELS.values())


@torch.no_grad()
def test_the_relative_bias_matches_past_the_exact_and_logarithmic_buckets(tmp_path):
    model = _reference("Model", seed=1)
    folder = save_ref_folder(model, tmp_path / "mpnet", ref_wordpiece(ROBERTA_SPECIALS))
    ours = load_pretrained(folder).model
    ids = torch.randint(5, VOCAB, (1, 150), generator=torch.Generator().manual_seed(0))  # distances up to 149
    theirs = ref_forward(model, ids, torch.ones_like(ids, dtype=torch.bool))
    out = ours(ids, return_attention=True, return_scores=True)
    assert float((out.attention["encoder"] - torch.stack(theirs.attentions)).abs().max()) <= 2e-6  # 150 tokens
    assert float((out.logits - theirs.last_hidden_state).abs().max()) <= 1e-5
    # the bias is one table for every layer: the first layer's scores minus q·k/√dk are the table's entries
    table = ours.relative.table.weight  # (32, H)
    bias = ours.relative(0, 150, 150, ids.device)[0]  # (H, T, T)
    assert torch.equal(bias[:, 0, 149], table[31]) and torch.equal(bias[:, 149, 0], table[15])  # clamped buckets
    assert torch.equal(bias[:, 5, 7], table[16 + 2]) and torch.equal(bias[:, 7, 5], table[2])  # exact buckets


def test_a_sentence_transformers_folder_reads_the_bare_encoder_mean_pooled_and_normalised(tmp_path):
    model = _reference("Model")
    folder = save_ref_folder(model, tmp_path / "all-mpnet-tiny", ref_wordpiece(ROBERTA_SPECIALS))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["MPNetForMaskedLM"]}))
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    pretrained = load_pretrained(folder)
    assert pretrained.head == "hidden" and pretrained.pooling == {"mode": "mean", "normalize": True}
    ids, real = ref_batch(pretrained, folder)
    hidden = ref_forward(model, ids, real).last_hidden_state  # (B, T, D)
    mean = (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)
    expected = torch.nn.functional.normalize(mean, dim=-1)
    got = torch.as_tensor(sentence_embeddings(pretrained, list(REF_TEXTS)))
    assert float((got - expected).abs().max()) <= 1e-5


def _edited(folder, tmp_path, **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("changes, message", [
    (dict(relative_attention_num_buckets=64), "relative_attention_num_buckets 64 is not supported .MPNet computes 32"),
    (dict(pad_token_id=0), "pad_token_id 0 is not supported .MPNet counts positions from padding id 1"),
    (dict(hidden_act="swish"), "activation 'swish' is not supported"),
    (dict(architectures=["MPNetForQuestionAnswering"]), "MPNetForQuestionAnswering is not supported; the mpnet heads"),
    (dict(num_hidden_layers=10**6), "claims 1,000,000 layers"),
])
def test_mpnet_settings_the_model_does_not_build_are_refused_by_name(tmp_path, changes, message):
    folder = save_ref_folder(_reference("Model"), tmp_path / "mpnet", ref_wordpiece(ROBERTA_SPECIALS))
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(folder, tmp_path, **changes))


def test_a_loaded_mpnet_keeps_the_model_contract(tmp_path):
    from tests.helpers.contract_checks import check_contract

    folder = save_ref_folder(_reference("Model"), tmp_path / "mpnet", ref_wordpiece(ROBERTA_SPECIALS))
    check_contract(load_pretrained(folder).model, torch.tensor([[0, 10, 11, 12, 13, 2], [0, 14, 15, 2, 1, 1]]), None)
