"""The one explain pipeline over the contract: what an encoder predicts follows its head, a family needs
no special case, and generation keeps the app's cap."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.helpers.tiny import tiny_model
from core import PretrainedModel, explain, save_checkpoint
from core.inspect.sentences import sentence_embeddings
from core.inspect.explainer import GENERATION_CAP
from core.inspect.subject import as_subject
from core.model.contract import ModelOutput
from core.model.families.bert import BertConfig, BertModel
from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.text.tokenizer import Tokenizer
from tests.helpers.pretrained_files import _bert_tokenizer


class HeadedEncoder(nn.Module):
    """A tiny BERT with a linear head on its hidden states: (B, T, D) → (B, T, C) or pooled (B, C)."""

    def __init__(self, outputs: int, pooled: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = BertModel(BertConfig(vocab_size=30, d_model=32, n_encoder_layers=2, n_heads=4, d_ff=64))
        self.head, self.pooled, self.config = nn.Linear(32, outputs), pooled, self.body.config

    def forward(self, src=None, tgt=None, targets=None, **kwargs) -> ModelOutput:
        out = self.body(src, **kwargs)
        hidden = out.logits[:, 0] if self.pooled else out.logits  # (B, D) or (B, T, D)
        return replace(out, logits=self.head(hidden))


def _pretrained(head: str, outputs: int, pooled: bool = False, labels: tuple[str, ...] = ()) -> PretrainedModel:
    hf = _bert_tokenizer()
    hf.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])  # as a real BERT tokenizer.json has them
    tokenizer = PretrainedTokenizer(hf, kind="wordpiece", max_len=32)
    return PretrainedModel(HeadedEncoder(outputs, pooled).eval(), tokenizer, Path("tiny"), "bert", "tiny",
                           head=head, labels=labels)


def test_a_masked_language_model_fills_in_the_mask():
    model = _pretrained("masked_lm", 18)
    result = explain(model, "the [MASK] was tired", top_n=3)
    vocab = model.tokenizer
    probs = model.model(torch.tensor([vocab.encode("the [MASK] was tired").ids])).logits[0, 2].softmax(-1)
    probs[sorted(vocab.special_ids)] = 0.0  # special tokens are never a fill-in
    best = vocab.token_strings([int(probs.argmax())])[0]
    assert result.prediction.kind == "fill" and result.prediction.labels[0] == best
    assert len(result.prediction.labels) == 3 and best in result.prediction.text
    np.testing.assert_allclose(result.prediction.probabilities, probs.topk(3).values.detach().numpy(), rtol=1e-5)
    assert "no [MASK] in the input" in explain(model, "the animal was tired").prediction.text


def test_a_token_classifier_labels_every_token_and_a_classifier_its_text():
    labels = ("O", "B-ANIMAL", "I-ANIMAL")
    result = explain(_pretrained("token_classes", 3, labels=labels), "the animal was tired")
    assert result.prediction.kind == "tokens"
    assert len(result.prediction.labels) == len(result.source_tokens) and set(result.prediction.labels) <= set(labels)
    assert result.prediction.text.split()[1].startswith("the/")
    names = ("negative", "positive")
    verdict = explain(_pretrained("classes", 2, pooled=True, labels=names), "the animal was tired").prediction
    assert verdict.kind == "class" and set(verdict.labels) == set(names)
    assert verdict.probabilities.sum() == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="a classifier"):
        sentence_embeddings(_pretrained("classes", 2, pooled=True, labels=names), ["the animal"])


def test_the_subject_reads_each_kind_of_model_once():
    ours = as_subject(Path(__file__).parents[2] / "assets" / "checkpoints" / "lm.safetensors")
    assert (ours.head, ours.input_prefix, ours.task, ours.grouped) == ("next_token", (1,), "lm", False)
    theirs = as_subject(_pretrained("hidden", 32))
    assert (theirs.head, theirs.input_prefix, theirs.task) == ("hidden", (), None)
    assert theirs.token_limit <= theirs.spec.max_len


def never_ending(path: Path, architecture: str, char_tokenizer: Tokenizer, max_len: int) -> Path:
    """A checkpoint whose every step picks token 5: never ``<eos>``, so it generates up to its limit."""
    model = tiny_model(architecture, vocab=char_tokenizer.vocab_size, max_len=max_len, output_bias=True)
    with torch.no_grad():
        model.lm_head.weight.zero_()
        model.lm_head.bias.zero_()
        model.lm_head.bias[5] = 1.0
    roles = {"target": char_tokenizer} if architecture == "decoder" else {"source": char_tokenizer,
                                                                          "target": char_tokenizer}
    save_checkpoint(path, model, roles)
    return path


def test_generation_keeps_the_apps_cap(tmp_path, char_tokenizer: Tokenizer):
    path = never_ending(tmp_path / "long.safetensors", "encoder-decoder", char_tokenizer, GENERATION_CAP + 40)
    result = explain(path, "hello")
    assert len(result.generated_tokens) == GENERATION_CAP and not result.prediction.finished
    assert any("length limit" in note for note in result.notes)
    asked = explain(path, "hello", max_new_tokens=GENERATION_CAP + 30)  # an explicit request is held to it too
    assert len(asked.generated_tokens) == GENERATION_CAP and any("limited to 256 new tokens" in n for n in asked.notes)


def test_a_continuation_keeps_the_apps_cap(tmp_path, char_tokenizer: Tokenizer):
    path = never_ending(tmp_path / "lm.safetensors", "decoder", char_tokenizer, 3 * GENERATION_CAP)
    short, long = explain(path, "hello", continuation=10), explain(path, "hello", continuation=2 * GENERATION_CAP)
    assert len(long.target_tokens) - len(short.target_tokens) == GENERATION_CAP - 10
    assert any(f"limited to {GENERATION_CAP} tokens" in note for note in long.notes)


def test_every_produced_token_carries_its_probability_and_unknown_words_are_named():
    translation = Path(__file__).parents[2] / "assets" / "checkpoints" / "translation.safetensors"
    known = explain(translation, "the black cat")
    assert known.unknown_words == () and known.token_probabilities.shape == (len(known.generated_tokens),)
    gen_probs = known.token_probabilities
    assert bool(((gen_probs > 0) & (gen_probs <= 1)).all())
    from core import load_checkpoint, greedy
    ckpt = load_checkpoint(translation)
    src = torch.tensor([ckpt.source_tokenizer.encode("the black cat").ids])
    gen = greedy(ckpt.model, src, torch.tensor([[1]]), eos_id=2, max_new_tokens=50)
    np.testing.assert_allclose(gen_probs, gen.step_log_probs()[0].exp().numpy(), rtol=1e-5)
    unsure = explain(translation, "the zébra sleeps")  # "é" is outside the spelling alphabet: one <unk>
    assert unsure.unknown_words == (("zébra", ("zebra", "zebras", "break")),)  # nearest known spellings
    assert unsure.source_tokens[1] == "<unk>"
    assert unsure.token_probabilities[1] < 0.5  # the word it guessed for "zebra" is faint
    assert any("unknown to the model" in note for note in unsure.notes)
    lm = explain(Path(__file__).parents[2] / "assets" / "checkpoints" / "lm.safetensors", "the cat", continuation=3)
    assert lm.token_probabilities.shape == (len(lm.generated_tokens),) and lm.token_probabilities[-1] > 0
