"""Fidelity of the real pretrained models against values recorded from the original implementations.

``tests/data/pretrained_reference.json`` was recorded once with sentence-transformers (MiniLM) and
transformers' own GGUF loader (SmolLM2); ``tests/data/record_pretrained_reference.py`` says how.
The models come from the packages of ``requirements-pretrained.txt``; without them these tests
skip, except where ``ATTNSCOPE_REQUIRE_PRETRAINED=1`` (CI), where they fail.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core import analysis, explain, explain_batch, load_pretrained, sentence_similarity
from core.inspect.sentences import sentence_embeddings
from tests.helpers.paths import DATA
from tests.helpers.pretrained_files import COREFERENCE, installed

REFERENCE = json.loads((DATA / "pretrained_reference.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def minilm():
    return load_pretrained(installed("all-MiniLM-L6-v2").path)


@pytest.fixture(scope="module")
def smollm():
    return load_pretrained(installed("SmolLM2-135M-Instruct").path)


# ---------------------------------------------------------------- MiniLM (BERT)
def test_minilm_token_ids_equal_the_original(minilm):
    ref = REFERENCE["minilm"]
    for sentence, ids, tokens in zip(ref["sentences"], ref["token_ids"], ref["tokens"]):
        encoding = minilm.tokenizer.encode(sentence)
        assert encoding.ids == ids
        assert encoding.tokens == tokens


def test_minilm_embeddings_equal_sentence_transformers(minilm):
    ref = REFERENCE["minilm"]
    expected = np.array(ref["embeddings"], dtype=np.float32)
    np.testing.assert_allclose(sentence_embeddings(minilm, ref["sentences"]), expected, atol=1e-5)  # one padded batch
    for sentence, vector in zip(ref["sentences"], expected):
        np.testing.assert_allclose(explain(minilm, sentence).prediction.vector, vector, atol=1e-5)


def test_minilm_maps(minilm):
    result = explain(minilm, COREFERENCE, return_scores=True)
    maps, n = result.attention["encoder"], len(result.source_tokens)
    assert result.prediction.kind == "embedding" and maps.shape == (6, 12, n, n)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    scores = torch.from_numpy(result.scores["encoder"])
    np.testing.assert_allclose(scores.softmax(-1).numpy(), maps, atol=1e-6)
    with torch.inference_mode():  # the fused kernel (no maps) computes the same states
        ids = torch.tensor([minilm.tokenizer.encode(COREFERENCE).ids])
        assert torch.allclose(minilm.model(ids).logits, minilm.model(ids, return_attention=True).logits, atol=1e-5)


def test_minilm_padding_is_never_attended(minilm):
    short, long_ = explain_batch(minilm, ["Hello there.", COREFERENCE])
    pads = [i for i, t in enumerate(short.source_tokens) if t == "[PAD]"]
    assert pads and np.all(short.attention["encoder"][..., pads] == 0.0)
    np.testing.assert_allclose(short.prediction.vector, explain(minilm, "Hello there.").prediction.vector, atol=1e-5)
    assert len(short.source_tokens) == len(long_.source_tokens)


def test_minilm_coreference_head_found(minilm):
    result = explain(minilm, COREFERENCE)
    tokens = result.source_tokens
    ranked = analysis.head_finder(result.attention["encoder"], tokens.index("it"), ignore=[0, len(tokens) - 1])
    animal = [r for r in ranked if tokens[r["key"]] == "animal"]
    assert animal and animal[0]["weight"] > 0.5  # a head where "it" attends most to "animal"
    assert ranked.index(animal[0]) < 5


def test_minilm_similarity(minilm):
    close = sentence_similarity(minilm, "A man is playing a guitar.", "Someone plays an instrument.")
    far = sentence_similarity(minilm, "A man is playing a guitar.", "The stock market fell sharply.")
    assert close > 0.5 > far
    assert sentence_similarity(minilm, COREFERENCE, COREFERENCE) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError, match="language model"):
        sentence_embeddings(_smollm_path(), ["hi"])


def _smollm_path():
    return installed("SmolLM2-135M-Instruct").path


def test_minilm_interventions(minilm):
    base = explain(minilm, COREFERENCE)
    knocked = [[1] * 12 for _ in range(6)]
    knocked[3][1] = 0
    out = explain(minilm, COREFERENCE, head_mask={"encoder": knocked})
    assert not np.allclose(out.prediction.vector, base.prediction.vector, atol=1e-4)
    np.testing.assert_array_equal(out.attention["encoder"][:4], base.attention["encoder"][:4])  # layers before: same
    hard = explain(minilm, COREFERENCE, hard=True).attention["encoder"]
    assert set(np.unique(hard)) == {0.0, 1.0}
    flat = explain(minilm, COREFERENCE, temperature=0.0).attention["encoder"]
    np.testing.assert_allclose(flat, 1.0 / flat.shape[-1], atol=1e-6)


# ---------------------------------------------------------------- SmolLM2 (Llama, GGUF)
def test_smollm_token_ids_equal_the_original(smollm):
    ref = REFERENCE["smollm2"]
    cases = ref["tokenizer_cases"] + ref["prompts"] + [ref["fixed_prompt"]]
    for case in cases:
        assert smollm.tokenizer.encode(case["text"]).ids == case["ids"], case["text"]


def test_smollm_knows_the_capital_of_france(smollm):
    result = explain(smollm, "The capital of France is")
    assert result.prediction.kind == "next_token" and result.prediction.labels[0] == " Paris"
    assert result.target_tokens == ("The", " capital", " of", " France", " is")
    assert result.head_groups == {"decoder": (0, 0, 0, 1, 1, 1, 2, 2, 2)}


def test_smollm_logits_agree_with_the_reference(smollm):
    """Every position's top-1 equals the original's and the top-5 logits agree closely: the
    rotary layout (GGUF Q/K un-permutation), GQA and tied embeddings are right."""
    fixed = REFERENCE["smollm2"]["fixed_prompt"]
    with torch.inference_mode():
        logits = smollm.model(tgt=torch.tensor([fixed["ids"]])).logits[0]  # (T, V)
    for position, ref in enumerate(fixed["top5_per_position"]):
        assert int(logits[position].argmax()) == ref["ids"][0], position
        ours = logits[position, ref["ids"]].numpy()
        np.testing.assert_allclose(ours, ref["logits"], atol=2e-3)
    for prompt in REFERENCE["smollm2"]["prompts"]:
        with torch.inference_mode():
            last = smollm.model(tgt=torch.tensor([prompt["ids"]])).logits[0, -1]
        assert last.topk(10).indices.tolist() == prompt["last_top10"]["ids"]


def test_smollm_greedy_continuation_equals_the_original(smollm):
    ref = REFERENCE["smollm2"]["greedy_continuation"]
    result = explain(smollm, ref["prompt"], continuation=8)
    prompt_ids = smollm.tokenizer.encode(ref["prompt"]).ids
    assert result.prediction.text == smollm.tokenizer.decode(ref["ids"][len(prompt_ids):])
    maps = result.attention["decoder"]
    assert maps.shape[2] == len(result.target_tokens) == len(ref["ids"]) - 1


def test_smollm_maps_and_interventions(smollm):
    text = "The animal didn't cross the street because it was too tired."
    base = explain(smollm, text, return_scores=True)
    maps = base.attention["decoder"]
    t = len(base.target_tokens)
    assert maps.shape == (30, 9, t, t)
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(maps, 1) == 0.0)  # causal: exactly zero above the diagonal
    ids = torch.tensor([smollm.tokenizer.encode(text).ids])
    with torch.inference_mode():
        fused = smollm.model(tgt=ids).logits
        explicit = smollm.model(tgt=ids, return_attention=True).logits
    assert torch.allclose(fused, explicit, atol=1e-3)
    assert np.triu(explain(smollm, text, causal=False).attention["decoder"], 1).sum() > 0
    knocked = [[1] * 9 for _ in range(30)]
    knocked[0] = [0] * 9  # the whole first layer's attention out
    out = explain(smollm, text, head_mask={"decoder": knocked}).prediction
    assert out.labels != base.prediction.labels or not np.allclose(out.probabilities, base.prediction.probabilities)
    hard = explain(smollm, text, hard=True).attention["decoder"]
    assert set(np.unique(hard)) == {0.0, 1.0}
    sharper = explain(smollm, text, temperature=2.0).attention["decoder"]
    np.testing.assert_allclose(sharper.sum(-1), 1.0, atol=1e-5)
    assert sharper.max(-1).mean() > maps.max(-1).mean()  # β > 1 sharpens every row
