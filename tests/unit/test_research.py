"""Research views in core, against their single-run definitions: the logit lens (its last layer is the model's own
prediction), the head-importance sweep (each cell equals one knock-out run of that head), head types (hand-built
attention with a known previous-token and induction head scores as it should) and the map divergence."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core.inspect.head_types import (coreference_score, induction_probe, induction_score, map_divergence,
                                     previous_token_score, sink_share)
from core.inspect.lens import logit_lens
from core.inspect.maps import OnDemandMaps
from core.inspect.subject import as_subject
from core.inspect.sweep import head_sweep
from core.model.contract import AttentionControls
from tests.helpers.paths import SHIPPED


@pytest.fixture(scope="module")
def shipped():
    return {name: core.load_checkpoint(SHIPPED / f"{name}.safetensors") for name in ("lm", "translation", "sentiment")}


@pytest.mark.parametrize("name, text", [("lm", "the cat sat"), ("translation", "the black cat")])
def test_the_logit_lens_last_layer_is_the_models_own_prediction(shipped, name, text):
    lens = logit_lens(shipped[name], text, top_k=3)
    exp = core.explain(shipped[name], text)
    stages, positions = len(lens.stages), len(lens.tokens)
    assert lens.stages[0] == "embeddings" and stages == shipped[name].config.n_decoder_layers + 1
    assert lens.top_probs.shape == (stages, positions, 3) and lens.final_prob.shape == (stages, positions)
    assert lens.tokens == exp.target_tokens
    if name == "translation":  # the rows read the source and predict the output, as Explore's
        assert lens.predicted[: len(exp.generated_tokens)] == exp.generated_tokens
    np.testing.assert_allclose(lens.final_prob[-1], lens.top_probs[-1, :, 0], rtol=1e-6)  # the final choice: top
    np.testing.assert_allclose(lens.top_probs.sum(-1) <= 1 + 1e-5, True)
    assert (lens.final_prob >= 0).all() and (lens.final_prob <= 1).all()


def test_the_logit_lens_reads_every_layer_of_a_pretrained_decoder():
    from core.model.families.llama import LlamaConfig, LlamaModel
    from tests.helpers.pretrained_files import TINY_LLAMA
    torch.manual_seed(0)
    llama = LlamaModel(LlamaConfig(vocab_size=40, **TINY_LLAMA)).eval()
    ids = torch.tensor([[1, 5, 6, 7]])
    with torch.inference_mode():
        out = llama(tgt=ids, record=["decoder.*.resid_out"])
        for layer in range(2):  # unembed of the last stream is the model's logits; earlier ones differ
            got = llama.unembed(out.trace[f"decoder.{layer}.resid_out"])
            assert torch.allclose(got, out.logits, atol=1e-6) == (layer == 1)


def _single(model, kind, layer, head, **inputs):
    mask = torch.ones(model.config.n_layers(kind), model.config.n_heads)
    mask[layer, head] = 0.0
    with torch.inference_mode():
        return model(**inputs, controls=AttentionControls(head_mask={kind: mask})).logits


@pytest.mark.parametrize("name, text", [("lm", "the cat"), ("sentiment", "i love this film"),
                                        ("translation", "the black cat")])
def test_each_sweep_cell_equals_one_knock_out_run(shipped, name, text):
    model = shipped[name]
    progress = []
    sweep = head_sweep(model, text, batch=3, on_progress=lambda done, total: progress.append((done, total)))
    assert sweep.complete and progress[-1][0] == progress[-1][1] == sum(v.size for v in sweep.change.values())
    subject = as_subject(model)
    if name == "lm":
        ids = torch.tensor([[*subject.input_prefix, *subject.target_tokenizer.encode(text).ids]])
        with torch.inference_mode():
            intact = model.model(tgt=ids).logits[0, -1]
        chosen = int(intact.argmax())
        for layer, head in [(0, 0), (1, 3)]:
            got = _single(model.model, "decoder", layer, head, tgt=ids)[0, -1].float().log_softmax(-1)[chosen]
            want = float(got) - float(intact.float().log_softmax(-1)[chosen])
            assert sweep.change["decoder"][layer, head] == pytest.approx(want, abs=1e-5)
    elif name == "sentiment":
        src = torch.tensor([subject.source_tokenizer.encode(text).ids])
        with torch.inference_mode():
            chosen = int(model.model(src).logits[0].argmax())
            base = float(model.model(src).logits[0].float().log_softmax(-1)[chosen])
        got = float(_single(model.model, "encoder", 1, 2, src=src)[0].float().log_softmax(-1)[chosen])
        assert sweep.change["encoder"][1, 2] == pytest.approx(got - base, abs=1e-5)
        assert "class" in sweep.measure
    else:
        assert set(sweep.change) == {"encoder", "decoder", "cross"} and "own output" in sweep.measure
        assert np.isfinite(np.concatenate([v.ravel() for v in sweep.change.values()])).all()


def test_a_stopped_sweep_says_so_and_leaves_the_rest_unswept(shipped):
    sweep = head_sweep(shipped["lm"], "the cat", batch=2, should_stop=lambda: True)
    assert not sweep.complete and np.isnan(sweep.change["decoder"]).sum() == sweep.change["decoder"].size - 2


def test_a_target_is_measured_teacher_forced(shipped):
    model = shipped["lm"]
    sweep = head_sweep(model, "the", target=" cat", batch=8)
    subject = as_subject(model)
    prompt = [*subject.input_prefix, *subject.target_tokenizer.encode("the").ids]
    goal = subject.target_tokenizer.encode(" cat").ids
    with torch.inference_mode():
        logits = model.model(tgt=torch.tensor([prompt + goal])).logits[0].float().log_softmax(-1)
    want = sum(float(logits[len(prompt) - 1 + i, g]) for i, g in enumerate(goal))
    assert sweep.baseline == pytest.approx(want, abs=1e-5) and "target" in sweep.measure


def _hand_built(length: int = 12, repeat: int = 5, sharp: float = 50.0) -> OnDemandMaps:
    """Two heads of one causal layer built by hand: keys one-hot by position, head 0's query i points at
    position i − 1 (previous token), head 1's at i − repeat + 1 (induction on a sequence repeated at ``repeat``)."""
    keys = np.eye(length, dtype=np.float32)[None, None]  # (1, 1, T, T): key j = e_j
    q = np.zeros((1, 2, length, length), np.float32)
    for i in range(length):
        q[0, 0, i, max(i - 1, 0)] = sharp
        q[0, 1, i, max(i - repeat + 1, 0) if i >= repeat else 0] = sharp
    causal = np.tril(np.ones((length, length), bool))[None]
    return OnDemandMaps(q=q, k=keys, scale=np.array([1.0]), kv_head_of=(0, 0), masks=(causal,), mask_of=(0,),
                        bias_of=(-1,), softcap=(0.0,))


def test_hand_built_heads_score_as_their_kind():
    maps = _hand_built()
    previous = previous_token_score(maps)
    induction = induction_score(maps, first=2, repeat=5)
    assert previous[0, 0] > 0.99 and previous[0, 1] < 0.3
    assert induction[0, 1] > 0.99 and induction[0, 0] < 0.01
    sinks = sink_share(maps)
    assert sinks[0, 1] > sinks[0, 0]  # head 1's early rows have nowhere to look but position 0
    whole = np.asarray(maps)
    assert coreference_score(maps, 7, 6)[0, 0] == pytest.approx(whole[0, 0, 7, 6])


def test_the_map_divergence_is_zero_on_itself_and_the_jensen_shannon_bits_otherwise():
    maps = _hand_built()
    assert np.allclose(map_divergence(maps, maps), 0.0, atol=1e-7)
    p, q = np.array([[[[1.0, 0.0], [0.5, 0.5]]]]), np.array([[[[0.0, 1.0], [0.5, 0.5]]]])
    assert map_divergence(p, q)[0, 0] == pytest.approx(0.5)  # rows: 1 bit, 0 bits
    with pytest.raises(ValueError, match="differ in shape"):
        map_divergence(p, np.zeros((1, 2, 2, 2)))


def test_the_induction_probe_is_seeded_and_scores_every_head(shipped):
    first, again = induction_probe(shipped["lm"], repeat=6, seed=3), induction_probe(shipped["lm"], repeat=6, seed=3)
    assert first.tokens == again.tokens and np.array_equal(first.score, again.score)
    assert first.score.shape == (2, 4) and first.kind == "decoder"
    n, start = first.repeat, first.first
    assert first.tokens[start:start + n] == first.tokens[start + n:start + 2 * n]
    assert induction_probe(shipped["lm"], repeat=6, seed=4).tokens != first.tokens
    assert induction_probe(shipped["translation"], repeat=6).kind == "encoder"
