"""Issue 21, Marian: a multilingual model's ``>>lang<<`` target-language token, and decoding that ends as
Hugging Face's ``generate`` does (``forced_eos_token_id``: ``</s>`` when the token budget runs out;
``bad_words_ids``: the pad id never produced) — greedy and 3-beam equal to ``generate`` on a tiny random
Marian for short and long budgets."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

import core  # noqa: E402
from core.generate import decode  # noqa: E402
from core.io.pretrained.load import load_pretrained  # noqa: E402
from tests.helpers import hf_seq2seq_reference as ref  # noqa: E402

LANGUAGES = (">>fra<<", ">>deu<<", ">>zho_Hans<<")
TEXT = "the cat sat on a mat and the dog ran to the big house"


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    folder, reference, tokenizer = ref.marian(tmp_path_factory.mktemp("mul"), languages=LANGUAGES)
    return folder, reference, tokenizer, load_pretrained(folder)


@pytest.mark.parametrize("text", [">>fra<< the cat sat", ">>deu<<the dog ran", ">>zho_Hans<< a big house",
                                  "the cat >>fra<<"])
def test_a_target_language_prefix_is_one_token_as_in_marian_tokenizer(text: str, multilingual) -> None:
    folder, _, reference, loaded = multilingual
    vocab = json.loads((folder / "vocab.json").read_text())
    ids = loaded.tokenizer.encode(text).ids
    if text.startswith(">>"):
        assert ids == list(reference(text).input_ids)
        assert ids[0] == vocab[text.split("<<")[0] + "<<"] and ids[1] != vocab["<unk>"]
    # matched whole wherever it stands (MarianTokenizer separates only a leading code: a known difference)
    assert sum(i in {vocab[c] for c in LANGUAGES} for i in ids) == 1


def test_without_the_codes_in_the_vocabulary_the_prefix_is_ordinary_text(tmp_path) -> None:
    folder, _, reference = ref.marian(tmp_path / "bilingual")
    ids = load_pretrained(folder).tokenizer.encode(">>fra<< the cat").ids
    assert len(ids) > 3 and ids[-1] == 0  # spelled out in pieces, then </s>


def _prefix(model) -> torch.Tensor:
    return torch.tensor([[model.config.decoder_start_id]])


@pytest.mark.parametrize("budget", [1, 3, 6, 12])
@pytest.mark.parametrize("beams", [1, 3])
def test_decoding_equals_generate_with_forced_eos(budget: int, beams: int, multilingual) -> None:
    _, reference, _, loaded = multilingual
    model, c = loaded.model, loaded.model.config
    assert c.forced_eos_id == c.eos_id == 0 and c.pad_id in c.never_generated
    src = torch.tensor([loaded.tokenizer.encode(">>fra<< " + TEXT).ids])
    theirs = reference.generate(src, do_sample=False, num_beams=beams, max_new_tokens=budget, length_penalty=0.0,
                                early_stopping=True)[0].tolist()
    if beams == 1:
        ours = decode.greedy(model, src, _prefix(model), eos_id=c.eos_id, max_new_tokens=budget)
    else:
        ours = decode.beam_search(model, src, _prefix(model), eos_id=c.eos_id, max_new_tokens=budget,
                                  beam_size=beams, length_penalty=0.0, min_new_tokens=0)
    assert ours.ids[0].tolist() == theirs
    assert theirs[-1] == c.eos_id and bool(ours.finished[0])  # the budget ends in </s>, as HF forces it
    assert c.pad_id not in theirs[1:]


def test_without_forced_eos_the_budget_ends_unfinished(multilingual) -> None:
    from dataclasses import replace

    _, _, _, loaded = multilingual
    model, c = loaded.model, loaded.model.config
    src = torch.tensor([loaded.tokenizer.encode(TEXT).ids])
    forced = decode.greedy(model, src, _prefix(model), eos_id=c.eos_id, max_new_tokens=4)
    model.config = replace(c, forced_eos_id=None)
    try:
        free = decode.greedy(model, src, _prefix(model), eos_id=c.eos_id, max_new_tokens=4)
    finally:
        model.config = c
    assert forced.ids[0, :-1].tolist() == free.ids[0, :-1].tolist()
    assert forced.ids[0, -1] == c.eos_id != free.ids[0, -1] and not bool(free.finished[0])


def test_explain_translates_with_the_language_token(multilingual) -> None:
    folder, _, _, loaded = multilingual
    explanation = core.explain(folder, ">>deu<< " + TEXT, max_new_tokens=5)
    assert explanation.source_tokens[0] == ">>deu<<"
    assert explanation.attention["cross"].shape[-1] == len(loaded.tokenizer.encode(">>deu<< " + TEXT).ids)
