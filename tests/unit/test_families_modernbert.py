"""ModernBERT folders equal ``transformers`` eager: the bare encoder and each head, with and without biases, CLS and
mean pooling; a local layer's cells outside its band |i − j| ≤ window are exactly 0 and a global layer's are not;
what the model does not build is refused, named."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from core import explain, load_pretrained
from core.io.checkpoint import CheckpointError
from tests.helpers.hf_reference import (BERT_SPECIALS, REF_WORDS, randomize, ref_batch, ref_forward, ref_wordpiece,
                                        save_ref_folder)

transformers = pytest.importorskip("transformers")

VOCAB = len(BERT_SPECIALS) + len(REF_WORDS)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}
WINDOW = 3  # local_attention 6: three keys on each side
HEADS = {"Model": ("hidden", "last_hidden_state"), "ForMaskedLM": ("masked_lm", "logits"),
         "ForSequenceClassification": ("classes", "logits"), "ForTokenClassification": ("token_classes", "logits")}
VARIANTS = {"plain": {}, "biased-mean": dict(norm_bias=True, attention_bias=True, mlp_bias=True, classifier_bias=True,
                                              classifier_pooling="mean")}


def modernbert_config(**extra):
    return transformers.ModernBertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=64, pad_token_id=0, cls_token_id=2, sep_token_id=3, bos_token_id=2, eos_token_id=3,
        local_attention=2 * WINDOW, global_attn_every_n_layers=3, id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()}, **extra)


def _reference(suffix: str = "Model", **extra):
    torch.manual_seed(0)
    return randomize(getattr(transformers, "ModernBert" + suffix)(modernbert_config(**extra)))


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("suffix", list(HEADS))
def test_modernbert_and_its_heads_equal_transformers(tmp_path, variant, suffix):
    model = _reference(suffix, **VARIANTS[variant])
    folder = save_ref_folder(model, tmp_path / "modernbert", ref_wordpiece())
    pretrained = load_pretrained(folder)
    assert (pretrained.family, pretrained.head) == ("modernbert", HEADS[suffix][0])
    ids, real = ref_batch(pretrained, folder)  # two texts, the shorter right-padded
    theirs = ref_forward(model, ids, real)
    with torch.no_grad():
        ours = pretrained.model(ids, return_attention=True, key_mask=real)
    rows = real[None, :, None, :, None]  # (1, B, 1, T, 1): the real queries
    assert float(((ours.attention["encoder"] - torch.stack(theirs.attentions)).abs() * rows).max()) <= 2e-6
    expected = getattr(theirs, HEADS[suffix][1])
    logits = ours.logits if ours.logits.dim() == 2 else ours.logits * real[..., None]
    expected = expected if expected.dim() == 2 else expected * real[..., None]
    assert float((logits - expected).abs().max()) <= 1e-5 * max(1.0, float(expected.abs().max()))
    if HEADS[suffix][0] in ("classes", "token_classes"):
        assert pretrained.labels == tuple(LABELS.values())


@torch.no_grad()
def test_local_layers_are_exactly_zero_outside_their_band_and_global_layers_see_every_token(tmp_path):
    folder = save_ref_folder(_reference(), tmp_path / "modernbert", ref_wordpiece())
    model = load_pretrained(folder).model
    assert model.config.layer_types == ("full_attention", "sliding_attention", "sliding_attention", "full_attention")
    ids = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(0))
    maps = model(ids, return_attention=True).attention["encoder"][:, 0]  # (L, H, T, T)
    positions = torch.arange(12)
    band = (positions[:, None] - positions[None, :]).abs() <= WINDOW
    for layer in (1, 2):
        assert bool((maps[layer][:, ~band] == 0).all()) and bool((maps[layer][:, band] > 0).all())
    assert bool((maps[0] > 0).all()) and bool((maps[3] > 0).all())
    assert explain(folder, "the cat sat on the mat").attention["encoder"].shape[:2] == (4, 4)


def test_a_loaded_modernbert_keeps_the_model_contract(tmp_path):
    from tests.helpers.contract_checks import check_contract

    folder = save_ref_folder(_reference("ForMaskedLM"), tmp_path / "modernbert", ref_wordpiece())
    check_contract(load_pretrained(folder).model, torch.tensor([[2, 10, 11, 12, 13, 3], [2, 14, 15, 3, 0, 0]]), None)


def _edited(folder, tmp_path, **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("changes, message", [
    (dict(layer_types=["full_attention", "chunked_attention", "sliding_attention", "full_attention"]),
     "'layer_types' must list sliding_attention or full_attention per layer"),
    (dict(rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1.6e5},
                           "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}),
     "rotary scaling 'linear' in a ModernBERT is not supported"),
    (dict(classifier_pooling="max", architectures=["ModernBertForSequenceClassification"]),
     "classifier_pooling 'max' is not supported"),
    (dict(architectures=["ModernBertForQuestionAnswering"]), "ModernBertForQuestionAnswering .the ModernBERT heads"),
    (dict(hidden_activation="swiglu"), "activation 'swiglu' is not one of"),
    (dict(num_hidden_layers=10**6), "claims 1,000,000 layers"),
])
def test_modernbert_settings_the_model_does_not_build_are_refused_by_name(tmp_path, changes, message):
    folder = save_ref_folder(_reference(), tmp_path / "modernbert", ref_wordpiece())
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(folder, tmp_path, **changes))
