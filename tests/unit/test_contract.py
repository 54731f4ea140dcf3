"""Every model in core satisfies the one model contract (tests/helpers/contract_checks.py), and FamilySpec answers
the contract's questions for a family's config."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from tests.helpers.tiny import random_ids, tiny_model
from tests.helpers.contract_checks import check_contract
from core.model.contract import FamilySpec, ModelSpec, kv_groups
from core.model.families.bert import BertConfig, BertModel
from core.model.families.llama import LlamaConfig, LlamaModel
from tests.helpers.pretrained_files import TINY_LLAMA


@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder", "decoder"])
def test_our_transformer(architecture):
    model = tiny_model(architecture)
    src = random_ids(2, 5, seed=1) if model.config.has_encoder else None
    tgt = random_ids(2, 4, seed=2) if model.config.has_decoder else None
    check_contract(model, src, tgt)


def test_bert_and_llama():
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=40, d_model=32, n_encoder_layers=2, n_heads=4, d_ff=64)).eval()
    check_contract(bert, random_ids(2, 6, vocab=40, seed=3), None)
    llama = LlamaModel(LlamaConfig(vocab_size=40, **TINY_LLAMA)).eval()
    check_contract(llama, None, random_ids(2, 6, vocab=40, seed=4))
    assert kv_groups(llama.config) == (0, 0, 1, 1) and kv_groups(bert.config) == (0, 1, 2, 3)


def test_the_check_fails_on_a_model_that_breaks_the_contract():
    model = tiny_model("decoder")
    broken = type("Broken", (torch.nn.Module,), {
        "forward": lambda self, src=None, tgt=None, targets=None, **kw: model(
            src, tgt, **{**kw, "controls": type(kw["controls"])(causal=False)}),
    })()
    broken.config = model.config
    with pytest.raises(AssertionError):  # it ignores the controls: its decoder sees the future
        check_contract(broken, None, random_ids(1, 4))


@dataclass(frozen=True)
class Seq2SeqSpec(FamilySpec):
    d_model: int
    n_heads: int
    n_encoder_layers: int
    n_decoder_layers: int
    max_len: int = 16
    pad_id: int = 0
    architecture = "encoder-decoder"


def test_family_spec_answers_the_contract_questions():
    spec = Seq2SeqSpec(d_model=48, n_heads=6, n_encoder_layers=3, n_decoder_layers=2)
    assert isinstance(spec, ModelSpec)
    assert spec.attention_kinds == ("encoder", "decoder", "cross") and spec.has_encoder and spec.has_decoder
    assert (spec.head_dim, spec.n_layers("encoder"), spec.n_layers("decoder"), spec.n_layers("cross")) == (8, 3, 2, 2)
    assert spec.to_dict()["n_encoder_layers"] == 3
