"""The BERT-like families as Hugging Face folders, against the reference library (``transformers``, eager,
``output_attentions=True``) on tiny random models built here: BERT, RoBERTa, XLM-RoBERTa, ELECTRA,
DistilBERT and ALBERT, each bare and with its task heads; then the folder's robustness."""

from __future__ import annotations

import json
import time

import pytest
import torch

transformers = pytest.importorskip("transformers")

from core import CheckpointError, load_checkpoint, load_pretrained  # noqa: E402
from core.model.contract import AttentionControls  # noqa: E402
from tests.helpers.hf_reference import (BERT_SPECIALS, ROBERTA_SPECIALS, REF_WORDS, open_and_compare, randomize,  # noqa: E402
                                ref_batch, ref_forward, ref_wordpiece, save_ref_folder, assert_close_scaled,
                                assert_maps_equal)

VOCAB = len(BERT_SPECIALS) + len(REF_WORDS)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}
_BERTISH = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                max_position_embeddings=64)


def _config(family: str, **extra):
    """A tiny random config of ``family`` (RoBERTa-likes: pad id 1 and two extra positions)."""
    labels = dict(id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    if family == "bert":
        return transformers.BertConfig(**_BERTISH, **labels, **extra)
    if family in ("roberta", "xlm-roberta"):
        kind = transformers.RobertaConfig if family == "roberta" else transformers.XLMRobertaConfig
        return kind(**{**_BERTISH, "max_position_embeddings": 66}, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                    type_vocab_size=1, **labels, **extra)
    if family == "electra":
        return transformers.ElectraConfig(**_BERTISH, **{"embedding_size": 16, **labels, **extra})
    if family == "distilbert":
        return transformers.DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                             max_position_embeddings=64, **labels, **extra)
    return transformers.AlbertConfig(**{**_BERTISH, "num_hidden_layers": 3, "embedding_size": 16,
                                        "num_hidden_groups": 1, **labels, **extra})


_PREFIX = {"bert": "Bert", "roberta": "Roberta", "xlm-roberta": "XLMRoberta", "electra": "Electra",
           "distilbert": "DistilBert", "albert": "Albert"}
_HEADS = {"Model": ("hidden", "last_hidden_state"), "ForMaskedLM": ("masked_lm", "logits"),
          "ForSequenceClassification": ("classes", "logits"), "ForTokenClassification": ("token_classes", "logits")}


def _tokenizer(family: str):
    return ref_wordpiece(ROBERTA_SPECIALS if "roberta" in family else BERT_SPECIALS)


@pytest.mark.parametrize("family", list(_PREFIX))
@pytest.mark.parametrize("suffix", list(_HEADS))
def test_family_and_head_equal_the_reference(tmp_path, family, suffix):
    torch.manual_seed(0)
    model = randomize(getattr(transformers, _PREFIX[family] + suffix)(_config(family)))
    head, field = _HEADS[suffix]
    pretrained = open_and_compare(model, tmp_path / family, _tokenizer(family), field)
    assert (pretrained.family, pretrained.head) == (family, head)
    assert pretrained.labels == (tuple(LABELS.values()) if head in ("classes", "token_classes") else ())


def test_electra_discriminator_scores_replaced_tokens(tmp_path):
    model = randomize(transformers.ElectraForPreTraining(_config("electra")))
    pretrained = open_and_compare(model, tmp_path / "disc", _tokenizer("electra"))
    assert (pretrained.head, pretrained.labels) == ("token_classes", ("replaced",))


def test_bert_pretraining_folder_opens_as_masked_lm(tmp_path):
    model = randomize(transformers.BertForPreTraining(_config("bert")))
    pretrained = open_and_compare(model, tmp_path / "pre", _tokenizer("bert"), "prediction_logits")
    assert pretrained.head == "masked_lm"


def test_is_decoder_bert_attends_causally(tmp_path):
    model = randomize(transformers.BertModel(_config("bert", is_decoder=True)))
    pretrained = open_and_compare(model, tmp_path / "causal", _tokenizer("bert"), "last_hidden_state")
    ids, real = ref_batch(pretrained, tmp_path / "causal")
    maps = pretrained.model(ids, return_attention=True, key_mask=real).attention["encoder"]  # (L, B, H, T, T)
    assert maps.triu(1).abs().max() == 0  # no query sees a later key
    open_maps = pretrained.model(ids, controls=AttentionControls(causal=False), return_attention=True,
                                 key_mask=real).attention["encoder"]
    assert open_maps.triu(1).abs().max() > 0.01  # the control lifts the look-ahead mask


def test_albert_shares_weights_but_maps_are_per_layer(tmp_path):
    model = randomize(transformers.AlbertModel(_config("albert")))
    pretrained = open_and_compare(model, tmp_path / "albert", _tokenizer("albert"), "last_hidden_state")
    assert len(pretrained.model.layers) == 1 and pretrained.config.n_layers("encoder") == 3
    ids, real = ref_batch(pretrained, tmp_path / "albert")
    maps = pretrained.model(ids, return_attention=True, key_mask=real).attention["encoder"]
    assert maps.shape[0] == 3 and (maps[0] - maps[1]).abs().max() > 1e-3


def test_roberta_positions_start_after_the_pad_id(tmp_path):
    model = randomize(transformers.RobertaModel(_config("roberta")))
    pretrained = open_and_compare(model, tmp_path / "roberta", _tokenizer("roberta"), "last_hidden_state")
    ids = torch.tensor([[0, 7, 8, 2, 1, 1]])
    assert pretrained.model.embed.positions(ids).tolist() == [[2, 3, 4, 5, 1, 1]]
    assert pretrained.config.max_len == 64  # 66 position embeddings, 2 before the first real token



# ------------------------------------------------------------------ folder robustness


def _bert_folder(tmp_path, cls: str = "BertForSequenceClassification", name: str = "bert", **save_options):
    model = randomize(getattr(transformers, cls)(_config("bert")))
    return model, save_ref_folder(model, tmp_path / name, _tokenizer("bert"), **save_options)


def test_sharded_folder_opens(tmp_path):
    model, folder = _bert_folder(tmp_path, max_shard_size="20KB")
    assert (folder / "model.safetensors.index.json").is_file() and not (folder / "model.safetensors").exists()
    assert len(list(folder.glob("model-*.safetensors"))) > 1
    open_and_compare(model, folder, _tokenizer("bert"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_weights_open_as_float32(tmp_path, dtype):
    model = randomize(transformers.BertForMaskedLM(_config("bert")))
    save_ref_folder(model.to(dtype), tmp_path / "half", _tokenizer("bert"))
    pretrained = load_pretrained(tmp_path / "half")
    assert next(pretrained.model.parameters()).dtype == torch.float32
    ids, real = ref_batch(pretrained, tmp_path / "half")
    theirs = ref_forward(model.float(), ids, real)  # the reference on the same rounded weights, in float32
    with torch.no_grad():
        ours = pretrained.model(ids, return_attention=True, key_mask=real)
    assert_maps_equal(ours.attention["encoder"], theirs.attentions)
    assert_close_scaled(ours.logits, theirs.logits)


def test_pickle_only_folder_is_refused_with_the_conversion(tmp_path, marker_payload):
    _, folder = _bert_folder(tmp_path)
    (folder / "model.safetensors").unlink()
    payload, marker = marker_payload
    (folder / "pytorch_model.bin").write_bytes(payload)
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin is a pickle.*save_pretrained\(.*safe_serialization"):
        load_pretrained(folder)
    assert not marker.exists()


def test_bare_hf_weights_file_gets_a_hint(tmp_path):
    _, folder = _bert_folder(tmp_path)
    with pytest.raises(CheckpointError, match="Hugging Face weights file.*open the folder"):
        load_checkpoint(folder / "model.safetensors")


def test_config_counts_are_checked_before_building(tmp_path):
    _, folder = _bert_folder(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 100_000}))
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match="claims 100,000 layers .num_hidden_layers. but model.safetensors "
                                              "holds 2"):
        load_pretrained(folder)
    assert time.perf_counter() - start < 0.5
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 48}))
    with pytest.raises(CheckpointError, match=r"claims intermediate_size 48 but model\.safetensors holds "
                       r"bert\.encoder\.layer\.0\.intermediate\.dense\.weight with shape \(64, 32\)"):
        load_pretrained(folder)


def test_unexpected_tensors_are_named(tmp_path):
    from safetensors.torch import load_file, save_file

    _, folder = _bert_folder(tmp_path, cls="BertModel")
    tensors = load_file(folder / "model.safetensors")
    tensors["encoder.layer.0.crossattention.self.query.weight"] = torch.zeros(32, 32)
    tensors["adapter.weight"] = torch.zeros(2)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="unexpected tensor.*adapter.weight, encoder.layer.0.crossattention"):
        load_pretrained(folder)


def test_unsupported_head_is_refused_naming_those_that_open(tmp_path):
    _, folder = _bert_folder(tmp_path, cls="BertForQuestionAnswering")
    with pytest.raises(CheckpointError, match="BertForQuestionAnswering is not supported.*ForMaskedLM"):
        load_pretrained(folder)


def test_head_is_inferred_from_tensors_without_architectures(tmp_path):
    for cls, head in [("BertForTokenClassification", "token_classes"), ("BertForSequenceClassification", "classes")]:
        _, folder = _bert_folder(tmp_path, cls=cls, name=cls)
        config = json.loads((folder / "config.json").read_text())
        del config["architectures"]
        (folder / "config.json").write_text(json.dumps(config))
        assert load_pretrained(folder).head == head


@pytest.mark.parametrize("lowercase", [True, False])
def test_vocab_txt_folder_tokenizes_as_the_reference(tmp_path, lowercase):
    model = randomize(transformers.BertModel(_config("bert")))
    model.save_pretrained(tmp_path / "vocab", safe_serialization=True)
    words = [w if lowercase else w.capitalize() for w in REF_WORDS] + ["Café", "the"]
    vocab = [*BERT_SPECIALS, *words[: VOCAB - len(BERT_SPECIALS)]]
    (tmp_path / "vocab" / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (tmp_path / "vocab" / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase}))
    reference = transformers.BertTokenizer(str(tmp_path / "vocab" / "vocab.txt"), do_lower_case=lowercase)
    ours = load_pretrained(tmp_path / "vocab").tokenizer
    for text in ["The animal didn't cross the Street, because it was tired.", "a Cat sat on the mat", "Café crème"]:
        assert ours.encode(text).ids == reference(text)["input_ids"], text


def test_a_renamed_hf_weights_file_outside_its_folder_gets_the_plain_refusal(tmp_path):
    _, folder = _bert_folder(tmp_path)
    alone = tmp_path / "weights.safetensors"
    alone.write_bytes((folder / "model.safetensors").read_bytes())
    with pytest.raises(CheckpointError, match="not an Attnscope checkpoint") as refused:
        load_checkpoint(alone)
    assert "Hugging Face" not in str(refused.value)


@pytest.mark.parametrize("family, cls", [("bert", "BertLMHeadModel"), ("roberta", "RobertaForCausalLM")])
def test_causal_lm_heads_equal_the_reference(tmp_path, family, cls):
    model = randomize(getattr(transformers, cls)(_config(family, is_decoder=True)))
    pretrained = open_and_compare(model, tmp_path / cls, _tokenizer(family))
    assert pretrained.head == "masked_lm" and pretrained.config.causal


def test_a_head_tensor_the_model_lacks_is_refused_before_reading(tmp_path):
    from safetensors.torch import load_file, save_file

    _, folder = _bert_folder(tmp_path, cls="BertForMaskedLM")
    tensors = load_file(folder / "model.safetensors")
    tensors["cls.predictions.decoder.extra.weight"] = torch.zeros(2)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match=r"do not match config.json \(unexpected \[.head.decoder.extra.weight.\]"):
        load_pretrained(folder)


@pytest.mark.parametrize("family, cls", [("albert", "AlbertModel"), ("electra", "ElectraModel")])
def test_embedding_width_equal_to_the_model_width(tmp_path, family, cls):
    model = randomize(getattr(transformers, cls)(_config(family, embedding_size=32)))  # E = D = 32
    pretrained = open_and_compare(model, tmp_path / cls, _tokenizer(family), "last_hidden_state")
    assert (pretrained.model.embed.project is not None) == (family == "albert")  # ALBERT always projects


def test_albert_layer_groups_run_in_turn(tmp_path):
    model = randomize(transformers.AlbertModel(_config("albert", num_hidden_layers=4, num_hidden_groups=2)))
    pretrained = open_and_compare(model, tmp_path / "groups", _tokenizer("albert"), "last_hidden_state")
    assert len(pretrained.model.layers) == 2 and pretrained.config.n_layers("encoder") == 4
