"""Decoding: greedy, beam search and sampling on tiny random models, both generating architectures."""

from __future__ import annotations

import itertools

import pytest
import torch

from core.generate.decode import Generation, beam_search, greedy, sample
from core.model.transformer import Transformer
from tests.helpers.tiny import BOS, EOS, PAD, random_ids, tiny_model

GENERATING = ["encoder-decoder", "decoder"]


def inputs(architecture: str, batch: int = 1, seed: int = 0) -> tuple[torch.Tensor | None, torch.Tensor]:
    src = random_ids(batch, 6, seed=seed) if architecture == "encoder-decoder" else None
    return src, torch.full((batch, 1), BOS)


def rigged(model: Transformer, token: int, margin: float = 5.0) -> Transformer:
    """Make ``token`` the most likely next token everywhere (all others tie at 0)."""
    # the last LayerNorm before the output layer: the stack's final norm, or (post-norm) the last layer's
    last = model.decoder_norm if model.config.has_final_norm else model.decoder_layers[-1].norm3
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()
        last.bias[0] = 1.0
        model.lm_head.weight.zero_()
        model.lm_head.weight[token, 0] = margin
    return model


def flattened(model: Transformer) -> Transformer:
    """A near-uniform next-token distribution (high entropy)."""
    with torch.no_grad():
        model.lm_head.weight.mul_(0.01)
    return model


def hand_greedy(model: Transformer, src, prefix: torch.Tensor, max_new_tokens: int) -> list[int]:
    ids = prefix[0].tolist()
    with torch.no_grad():
        for _ in range(min(max_new_tokens, model.config.max_len - len(ids))):
            logits = model(src, torch.tensor([ids])).logits[0, -1]
            logits[[model.config.pad_id, 1]] = float("-inf")  # decoding never produces <pad> or <bos>
            ids.append(int(logits.argmax()))
            if ids[-1] == EOS:
                break
    return ids


def sequence_logprob(model: Transformer, src, ids: list[int], start: int = 1) -> float:
    with torch.no_grad():
        logits = model(src, torch.tensor([ids[:-1]])).logits[0]
        logits[:, [model.config.pad_id, 1]] = float("-inf")  # as decoding does: <pad>, <bos> excluded
        logp = logits.log_softmax(-1)
    return sum(float(logp[t - 1, ids[t]]) for t in range(start, len(ids)))


def check_generation_invariants(gen: Generation, prefix_len: int, max_len: int, src_len: int | None) -> None:
    ids = gen.ids
    assert ids.size(1) <= max_len
    for row, done in zip(ids.tolist(), gen.finished.tolist()):
        generated = row[prefix_len:]
        if done:
            end = generated.index(EOS)
            assert all(t == PAD for t in generated[end + 1 :])
        else:
            assert EOS not in generated
    steps = ids.size(1) - 1
    attention = gen.output.attention
    assert attention["decoder"].shape[-2:] == (steps, steps)
    if src_len is not None:
        assert attention["cross"].shape[-2:] == (steps, src_len)
    assert gen.output.logits.shape[:2] == (ids.size(0), steps)


# ---------------------------------------------------------------- greedy
@pytest.mark.parametrize(("architecture", "seed"), list(itertools.product(GENERATING, [0, 1, 2])))
def test_greedy_equals_a_hand_written_argmax_loop(architecture: str, seed: int) -> None:
    model = tiny_model(architecture, seed=seed)
    src, prefix = inputs(architecture, seed=seed)
    gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=30)
    expected = hand_greedy(model, src, prefix, 30)
    assert gen.ids[0].tolist() == expected
    assert bool(gen.finished[0]) == (expected[-1] == EOS)
    assert float(gen.scores[0]) == pytest.approx(sequence_logprob(model, src, expected), abs=1e-4)
    check_generation_invariants(gen, 1, model.config.max_len, None if src is None else 6)


@pytest.mark.parametrize("architecture", GENERATING)
def test_final_pass_rows_predict_the_generated_tokens(architecture: str) -> None:
    model = tiny_model(architecture, seed=4)
    src, prefix = inputs(architecture, batch=3, seed=4)
    gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=10)
    logits = gen.output.logits.clone()
    logits[..., [PAD, 1]] = float("-inf")  # decoding never produces <pad> or <bos>
    predicted = logits.argmax(-1)  # (B, T-1): row t predicted ids[t + 1]
    for b in range(3):
        for t in range(gen.ids.size(1) - 1):
            if gen.ids[b, t + 1] != PAD:
                assert predicted[b, t] == gen.ids[b, t + 1]
    check_generation_invariants(gen, 1, model.config.max_len, None if src is None else 6)


@pytest.mark.parametrize("architecture", GENERATING)
def test_batched_greedy_equals_one_row_at_a_time(architecture: str) -> None:
    model = tiny_model(architecture, seed=5)
    src, prefix = inputs(architecture, batch=3, seed=5)
    batched = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=12)
    for b in range(3):
        alone = greedy(model, None if src is None else src[b : b + 1], prefix[b : b + 1], eos_id=EOS,
                       max_new_tokens=12)
        width = alone.ids.size(1)
        assert batched.ids[b, :width].tolist() == alone.ids[0].tolist()
        assert torch.all(batched.ids[b, width:] == PAD)
        assert batched.finished[b] == alone.finished[0]
        assert float(batched.scores[b]) == pytest.approx(float(alone.scores[0]), abs=1e-4)  # padding adds nothing


@pytest.mark.parametrize("architecture", GENERATING)
def test_generation_stops_at_eos(architecture: str) -> None:
    # (beam search answers non-empty here: see the next test)
    model = rigged(tiny_model(architecture), EOS)
    src, prefix = inputs(architecture)
    for gen in (greedy(model, src, prefix, eos_id=EOS, max_new_tokens=10),
                sample(model, src, prefix, eos_id=EOS, max_new_tokens=10, generator=torch.Generator(), top_k=1)):
        assert gen.ids.tolist() == [[BOS, EOS]] and gen.finished.tolist() == [True]
        assert gen.output.attention["decoder"].shape[-2:] == (1, 1)


@pytest.mark.parametrize("architecture", GENERATING)
@pytest.mark.parametrize("min_new_tokens", [0, 1, 3])
def test_beam_never_returns_an_empty_output_while_a_non_empty_one_exists(architecture: str, min_new_tokens: int) -> None:
    # the model wants <eos> at once; beam search still answers with the best non-empty sequence
    model = rigged(tiny_model(architecture), EOS)
    src, prefix = inputs(architecture)
    gen = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=10, beam_size=3, min_new_tokens=min_new_tokens)
    ids = gen.ids[0].tolist()
    assert gen.finished.tolist() == [True] and ids[-1] == EOS and EOS not in ids[1:-1]
    assert len(ids) - 2 == max(1, min_new_tokens)  # the shortest non-empty output the rules allow
    assert float(gen.scores[0]) == pytest.approx(sequence_logprob(model, src, ids), abs=1e-4)


@pytest.mark.parametrize("architecture", GENERATING)
def test_beam_with_a_budget_too_short_to_finish_returns_an_unfinished_non_empty_output(architecture: str) -> None:
    model = rigged(tiny_model(architecture), 5)  # never says <eos> first
    src, prefix = inputs(architecture)
    gen = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=3, beam_size=4, min_new_tokens=0)
    assert gen.finished.tolist() == [False] and gen.ids.tolist() == [[BOS, 5, 5, 5]]
    greedy_gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=3)
    assert greedy_gen.ids.tolist() == gen.ids.tolist()


def test_beam_decodes_a_batch_like_each_row_alone() -> None:
    model = tiny_model("encoder-decoder", seed=5)
    src, prefix = inputs("encoder-decoder", batch=4, seed=5)
    src[1, 4:] = PAD  # rows of different lengths
    batched = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=9, beam_size=3)
    for b in range(4):
        alone = beam_search(model, src[b : b + 1], prefix[b : b + 1], eos_id=EOS, max_new_tokens=9, beam_size=3)
        width = alone.ids.size(1)
        assert batched.ids[b, :width].tolist() == alone.ids[0].tolist()
        assert torch.all(batched.ids[b, width:] == PAD)
        assert batched.finished[b] == alone.finished[0]
        assert float(batched.scores[b]) == pytest.approx(float(alone.scores[0]), abs=1e-4)


@pytest.mark.parametrize("architecture", GENERATING)
def test_generation_never_exceeds_max_len_or_max_new_tokens(architecture: str) -> None:
    model = rigged(tiny_model(architecture, max_len=7), 5)  # never says <eos>
    src, _ = inputs(architecture)
    prompt = torch.tensor([[BOS, 6, 7]])
    assert greedy(model, src, prompt, eos_id=EOS, max_new_tokens=2).ids.tolist() == [[BOS, 6, 7, 5, 5]]
    for gen in (greedy(model, src, prompt, eos_id=EOS, max_new_tokens=100),
                beam_search(model, src, prompt, eos_id=EOS, max_new_tokens=100, beam_size=2),
                sample(model, src, prompt, eos_id=EOS, max_new_tokens=100, generator=torch.Generator())):
        assert gen.ids.size(1) == 7 and gen.finished.tolist() == [False]
        check_generation_invariants(gen, 3, 7, None if src is None else 6)


def test_prefix_that_fills_max_len_leaves_no_room() -> None:
    model = tiny_model("decoder", max_len=4)
    with pytest.raises(ValueError, match="no room"):
        greedy(model, None, torch.tensor([[BOS, 5, 6, 7]]), eos_id=EOS, max_new_tokens=3)


# ---------------------------------------------------------------- beam search
@pytest.mark.parametrize(("architecture", "seed"), list(itertools.product(GENERATING, [0, 1, 2, 14, 43])))
def test_beam_size_one_equals_greedy(architecture: str, seed: int) -> None:
    model = tiny_model(architecture, seed=seed)
    src, prefix = inputs(architecture, seed=seed)
    beam = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=30, beam_size=1)
    best = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=30)
    assert beam.ids.tolist() == best.ids.tolist() and beam.finished.tolist() == best.finished.tolist()
    torch.testing.assert_close(beam.scores, best.scores, atol=1e-4, rtol=0)


@pytest.mark.parametrize(("architecture", "seed"), list(itertools.product(GENERATING, [0, 1, 2])))
def test_beam_with_the_kv_cache_equals_beam_without_it(monkeypatch, architecture: str, seed: int) -> None:
    # the cache follows the beams (reordered by parent at every step): same hypotheses, scores and maps
    model = tiny_model(architecture, seed=seed)
    src, _ = inputs(architecture, batch=2, seed=seed)
    prefix = torch.tensor([[BOS, 5], [BOS, 7]])
    cached = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=20, beam_size=3, min_new_tokens=5)
    monkeypatch.delattr(Transformer, "kv_cache")  # decoding then re-runs the whole prefix every step
    plain = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=20, beam_size=3, min_new_tokens=5)
    assert cached.ids.tolist() == plain.ids.tolist() and cached.finished.tolist() == plain.finished.tolist()
    assert cached.ids.size(1) >= 7  # several steps, so the reordering mattered
    torch.testing.assert_close(cached.scores, plain.scores, atol=1e-5, rtol=0)
    for kind, maps in plain.output.attention.items():
        torch.testing.assert_close(cached.output.attention[kind], maps, atol=0, rtol=0)


@pytest.mark.parametrize(("architecture", "seed"), list(itertools.product(GENERATING, range(4))))
def test_exhaustive_beam_finds_the_best_finished_sequence_and_beats_greedy(architecture: str, seed: int) -> None:
    # With a beam wider than every hypothesis, beam search is exhaustive: it must return the most
    # likely finished sequence. (A narrow beam is not guaranteed to beat greedy: see the report.)
    model = flattened(tiny_model(architecture, seed=seed, vocab=6, max_len=4))
    src = random_ids(1, 3, vocab=6, seed=seed) if architecture == "encoder-decoder" else None
    prefix = torch.tensor([[BOS]])
    beam = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=3, beam_size=256, length_penalty=0.0)
    # the empty output is left out: beam search only returns it when nothing else exists
    finished = [[BOS, *body, EOS] for n in range(1, 3) for body in itertools.product([t for t in range(6) if t != EOS],
                                                                                repeat=n)]
    scores = {tuple(ids): sequence_logprob(model, src, ids) for ids in finished}
    best_ids = max(scores, key=scores.get)
    assert beam.finished.tolist() == [True]
    assert float(beam.scores[0]) == pytest.approx(scores[best_ids], abs=1e-4)
    assert float(beam.scores[0]) == pytest.approx(scores[tuple(beam.ids[0].tolist())], abs=1e-4)
    best = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=3)
    if bool(best.finished[0]) and best.ids.size(1) > 2:
        assert float(beam.scores[0]) >= float(best.scores[0]) - 1e-5


@pytest.mark.parametrize("architecture", GENERATING)
def test_beam_score_is_the_log_probability_of_its_sequence(architecture: str) -> None:
    model = tiny_model(architecture, seed=3)
    src, prefix = inputs(architecture, batch=2, seed=3)
    beam = beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=8, beam_size=3)
    for b in range(2):
        ids = beam.ids[b].tolist()
        if beam.finished[b]:
            ids = ids[: ids.index(EOS, 1) + 1]  # drop the padding after <eos>
        row_src = None if src is None else src[b : b + 1]
        assert float(beam.scores[b]) == pytest.approx(sequence_logprob(model, row_src, ids), abs=1e-4)
    check_generation_invariants(beam, 1, model.config.max_len, None if src is None else 6)


def test_beam_size_below_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="beam_size"):
        beam_search(tiny_model("decoder"), None, torch.tensor([[BOS]]), eos_id=EOS, max_new_tokens=3, beam_size=0)


# ---------------------------------------------------------------- sampling
def draws(model: Transformer, seed: int, **kwargs) -> torch.Tensor:
    return sample(model, None, torch.full((4, 1), BOS), eos_id=EOS, max_new_tokens=12,
                  generator=torch.Generator().manual_seed(seed), **kwargs).ids


def test_sampling_with_the_same_seed_is_reproducible_and_seeds_differ() -> None:
    model = flattened(tiny_model("decoder", seed=6))
    assert torch.equal(draws(model, 7), draws(model, 7))
    assert not torch.equal(draws(model, 7), draws(model, 8))


@pytest.mark.parametrize("architecture", GENERATING)
def test_top_k_one_sampling_equals_greedy(architecture: str) -> None:
    model = tiny_model(architecture, seed=7)
    src, prefix = inputs(architecture, batch=2, seed=7)
    drawn = sample(model, src, prefix, eos_id=EOS, max_new_tokens=15, generator=torch.Generator().manual_seed(0),
                   top_k=1, temperature=3.0)
    best = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=15)
    assert drawn.ids.tolist() == best.ids.tolist()


@pytest.mark.parametrize("top_k", [1, 3])
def test_sampling_never_picks_outside_the_top_k(top_k: int) -> None:
    model = flattened(tiny_model("decoder", seed=8))
    prefix = torch.tensor([[BOS, 5, 6]]).expand(400, -1)
    with torch.no_grad():
        allowed = set(model(tgt=prefix[:1]).logits[0, -1].topk(top_k).indices.tolist())
    gen = sample(model, None, prefix, eos_id=EOS, max_new_tokens=1, generator=torch.Generator().manual_seed(1),
                 top_k=top_k)
    picked = set(gen.ids[:, -1].tolist())
    assert picked <= allowed
    assert len(picked) == top_k  # 400 draws from a near-uniform top k hit every one of them
    unrestricted = sample(model, None, prefix, eos_id=EOS, max_new_tokens=1,
                          generator=torch.Generator().manual_seed(1))
    assert len(set(unrestricted.ids[:, -1].tolist())) > 3


@pytest.mark.parametrize(("kwargs", "name"), [({"temperature": 0.0}, "temperature"), ({"temperature": -1.0},
                                              "temperature"), ({"top_k": 0}, "top_k")])
def test_invalid_sampling_settings_are_rejected(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        sample(tiny_model("decoder"), None, torch.tensor([[BOS]]), eos_id=EOS, max_new_tokens=3,
               generator=torch.Generator(), **kwargs)


def test_return_scores_gives_score_maps_of_the_attention_shapes() -> None:
    model = tiny_model(seed=9)
    src, prefix = inputs("encoder-decoder")
    gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=5, return_scores=True)
    assert {k: v.shape for k, v in gen.output.scores.items()} == {k: v.shape for k, v in gen.output.attention.items()}


@pytest.mark.parametrize("architecture", GENERATING)
def test_decoding_never_emits_the_padding_token(architecture: str) -> None:
    model = rigged(tiny_model(architecture), PAD)
    src, prefix = inputs(architecture)
    gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=4)
    assert PAD not in gen.ids[0, 1:].tolist()


# ---------------------------------------------------------------- row labels
@pytest.mark.parametrize("architecture", GENERATING)
def test_each_row_reads_its_input_and_predicts_the_next_token(architecture: str) -> None:
    model = tiny_model(architecture, seed=7)
    src, prefix = inputs(architecture, batch=2, seed=7)
    for gen in (greedy(model, src, prefix, eos_id=EOS, max_new_tokens=6),
                beam_search(model, src, prefix, eos_id=EOS, max_new_tokens=6, beam_size=2)):
        rows = gen.output.attention["decoder"].shape[-2]
        assert gen.inputs.shape[1] == gen.predicted.shape[1] == rows
        assert torch.equal(gen.inputs[:, 1:], gen.predicted[:, :-1])  # one step behind, by construction
        # a row's most likely token is what it predicted (greedy), and the step log-probabilities add up
        steps = gen.step_log_probs()
        torch.testing.assert_close(steps.sum(1), gen.scores, atol=1e-4, rtol=0)
    greedy_gen = greedy(model, src, prefix, eos_id=EOS, max_new_tokens=6)
    logits = greedy_gen.output.logits.clone()
    logits[..., [PAD, BOS]] = float("-inf")
    real = greedy_gen.predicted != PAD
    assert torch.equal(logits.argmax(-1)[real], greedy_gen.predicted[real])


def test_row_labels_say_what_each_row_reads_and_predicts() -> None:
    from core.inspect.records import row_labels

    assert row_labels(["<bos>", "el", "gato"], ["el", "gato", "<eos>"]) == [
        "after ‹<bos>› → predicts ‹el›", "after ‹el› → predicts ‹gato›", "after ‹gato› → predicts ‹<eos>›",
    ]
    with pytest.raises(ValueError):
        row_labels(["<bos>"], [])
