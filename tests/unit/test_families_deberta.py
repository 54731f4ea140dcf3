"""DeBERTa-v2/v3 folders equal ``transformers`` eager: the bare encoder and each head, v3's shared keys, bucketed
distances and normalised table, v2's separate position projections, absolute positions, a narrower embedding;
the content→position and position→content parts come back beside the scores and equal transformers' own
disentangled bias; what the model does not build is refused, named.

``transformers`` masks a padded query row entirely (its map is uniform); ours masks padding keys only, as
every other encoder here does, so the maps are compared on the real tokens' rows.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from core import explain, load_pretrained
from core.io.checkpoint import CheckpointError
from core.model.contract import AttentionControls
from tests.helpers.hf_reference import (BERT_SPECIALS, REF_WORDS, randomize, ref_batch, ref_forward, ref_wordpiece,
                                        save_ref_folder)

transformers = pytest.importorskip("transformers")

VOCAB = len(BERT_SPECIALS) + len(REF_WORDS)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}
VARIANTS = {
    # v3: shared keys, 8 buckets (distances past ±4 logarithmic up to 64), a layer-normalised table, no positions
    "v3": dict(relative_attention=True, position_buckets=8, max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
               share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False),
    # v2: separate position projections, distances clamped at ±6, absolute positions, segments, the old string
    "v2": dict(relative_attention=True, max_relative_positions=6, pos_att_type="c2p|p2c", position_biased_input=True,
               type_vocab_size=2),
    "c2p-narrow": dict(relative_attention=True, position_buckets=4, pos_att_type=["c2p"], embedding_size=16),
    "no-relative": dict(),
}
HEADS = {"Model": ("hidden", "last_hidden_state"), "ForMaskedLM": ("masked_lm", "logits"),
         "ForSequenceClassification": ("classes", "logits"), "ForTokenClassification": ("token_classes", "logits")}


def deberta_config(variant: str, **extra):
    return transformers.DebertaV2Config(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                        intermediate_size=64, max_position_embeddings=64, id2label=LABELS,
                                        label2id={v: k for k, v in LABELS.items()}, **VARIANTS[variant], **extra)


def _reference(variant: str, suffix: str = "Model", **extra):
    torch.manual_seed(0)
    return randomize(getattr(transformers, "DebertaV2" + suffix)(deberta_config(variant, **extra)))


def _compare(model, folder, expected_head: str, field: str):
    pretrained = load_pretrained(folder)
    assert (pretrained.family, pretrained.head) == ("deberta-v2", expected_head)
    ids, real = ref_batch(pretrained, folder)  # two texts, the shorter right-padded
    theirs = ref_forward(model, ids, real)
    with torch.no_grad():
        ours = pretrained.model(ids, return_attention=True, return_scores=True, key_mask=real)
    rows = real[None, :, None, :, None]  # (1, B, 1, T, 1): the real queries
    maps = ours.attention["encoder"]
    assert float(((maps - torch.stack(theirs.attentions)).abs() * rows).max()) <= 2e-6
    expected = getattr(theirs, field)
    logits = ours.logits if ours.logits.dim() == 2 else ours.logits * real[..., None]
    expected = expected if expected.dim() == 2 else expected * real[..., None]
    assert float((logits - expected).abs().max()) <= 1e-5 * max(1.0, float(expected.abs().max()))
    return pretrained, ours


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("suffix", list(HEADS))
def test_deberta_and_its_heads_equal_transformers(tmp_path, variant, suffix):
    model = _reference(variant, suffix)
    folder = save_ref_folder(model, tmp_path / "deberta", ref_wordpiece())
    pretrained, _ = _compare(model, folder, *HEADS[suffix])
    if HEADS[suffix][0] in ("classes", "token_classes"):
        assert pretrained.labels == tuple(LABELS.values())


def test_the_newer_masked_lm_head_layout_equals_transformers(tmp_path):
    model = _reference("v3", "ForMaskedLM", legacy=False)
    assert any(name.startswith("lm_predictions.") for name, _ in model.named_parameters())
    _compare(model, save_ref_folder(model, tmp_path / "deberta", ref_wordpiece()), "masked_lm", "logits")


@pytest.mark.parametrize("variant", ["v3", "v2"])
def test_the_position_parts_equal_transformers_disentangled_bias_and_sum_to_the_scores(tmp_path, variant,
                                                                                        monkeypatch):
    model = _reference(variant)
    folder = save_ref_folder(model, tmp_path / "deberta", ref_wordpiece())
    captured = []
    attention = type(model.encoder.layer[0].attention.self)
    original = attention.disentangled_attention_bias

    def capture(self, *args, **kwargs):
        captured.append(original(self, *args, **kwargs))  # (B·H, T, T): c2p + p2c
        return captured[-1]

    monkeypatch.setattr(attention, "disentangled_attention_bias", capture)
    _, ours = _compare(model, folder, "hidden", "last_hidden_state")
    scores = ours.scores
    assert sorted(scores) == ["encoder", "encoder/c2c", "encoder/c2p", "encoder/p2c"]
    pretrained = load_pretrained(folder)
    ids, real = ref_batch(pretrained, folder)
    pairs = (real[:, None, :, None] & real[:, None, None, :]).expand(-1, 4, -1, -1).flatten(0, 1)  # (B·H, T, T)
    for layer, bias in enumerate(captured):  # the padding's states differ past the first layer (see the module)
        position = (scores["encoder/c2p"][layer] + scores["encoder/p2c"][layer]).flatten(0, 1)  # (B·H, T, T)
        assert float(((position - bias).abs() * pairs).max()) <= 2e-6 * max(1.0, float(bias.abs().max()))
    whole = scores["encoder/c2c"] + scores["encoder/c2p"] + scores["encoder/p2c"]
    assert float((whole - scores["encoder"]).abs().max()) <= 1e-5
    assert float(scores["encoder/c2p"].abs().mean()) > 0.05 and float(scores["encoder/p2c"].abs().mean()) > 0.05
    with torch.no_grad():
        hot = pretrained.model(ids, return_scores=True, key_mask=real, controls=AttentionControls(temperature=2.0))
    torch.testing.assert_close(hot.scores["encoder/c2p"][0], 2 * scores["encoder/c2p"][0])  # times β, as the scores


def test_a_deberta_folder_is_explained(tmp_path):
    folder = save_ref_folder(_reference("v3", "ForSequenceClassification"), tmp_path / "deberta", ref_wordpiece())
    explanation = explain(folder, "the cat sat on the mat")
    maps = torch.as_tensor(explanation.attention["encoder"])  # (L, H, T, T)
    assert maps.shape[:2] == (2, 4) and explanation.prediction.kind == "class"
    torch.testing.assert_close(maps.sum(-1), torch.ones(maps.shape[:-1]))


def _edited(folder, tmp_path, **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("changes, message", [
    (dict(conv_kernel_size=3), "conv_kernel_size .DeBERTa-v2's convolution after the first layer. is not supported"),
    (dict(pos_att_type=["c2p", "p2p"]), "pos_att_type 'p2p' is not supported; supported: c2p, p2c"),
    (dict(attention_head_size=16), "attention_head_size 16 other than hidden_size / num_attention_heads"),
    (dict(pooler_hidden_size=16, architectures=["DebertaV2ForSequenceClassification"]),
     "pooler_hidden_size 16 other than hidden_size is not supported"),
    (dict(norm_rel_ebd="batch_norm"), "norm_rel_ebd 'batch_norm' is not supported"),
    (dict(share_att_key="yes"), "share_att_key 'yes' must be true or false"),
    (dict(position_buckets=16), "config.json claims 2 × position_buckets .or max_relative_positions. 32 but"),
    (dict(architectures=["DebertaV2ForMultipleChoice"]), "DebertaV2ForMultipleChoice is not supported"),
])
def test_deberta_settings_the_model_does_not_build_are_refused_by_name(tmp_path, changes, message):
    folder = save_ref_folder(_reference("v3"), tmp_path / "deberta", ref_wordpiece())
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(folder, tmp_path, **changes))


def test_a_loaded_deberta_keeps_the_model_contract(tmp_path):
    from tests.helpers.contract_checks import check_contract

    folder = save_ref_folder(_reference("v3"), tmp_path / "deberta", ref_wordpiece())
    check_contract(load_pretrained(folder).model, torch.tensor([[2, 10, 11, 12, 13, 3], [2, 14, 15, 3, 0, 0]]), None)


def test_a_folder_with_only_spm_model_is_told_how_to_write_its_tokenizer_json(tmp_path):
    folder = save_ref_folder(_reference("v3"), tmp_path / "deberta-v3-base", ref_wordpiece())
    (folder / "tokenizer.json").rename(folder / "spm.model")
    with pytest.raises(CheckpointError, match=r"^deberta-v3-base has only spm.model as its tokenizer; write its "
                                              r"tokenizer.json once with `python -c .*AutoTokenizer.*save_pretrained"):
        load_pretrained(folder)
