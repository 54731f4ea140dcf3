"""Explore adapts to the model's kind (issue 21), for models from the models folder (``--models DIR``):
tiny random Hugging Face folders of BERT (an encoder), GPT-2 and Llama with grouped key/value heads
(decoders) and BART (an encoder-decoder). What each section shows is core's own number: the cosine
similarity, the head finder's ranking, the continuation (greedy, sampled, seeded) and its step rows, the
translation's cross-attention rows step by step;
a sampling control runs the sampled continuation alone, never the head view's explanation again."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from app import pretrained_resources, resources
from core import analysis, explain, ExplainWorker, load_pretrained, sentence_similarity
from core.lessons import LessonWorker
from tests.helpers.apptest_helpers import as_matrix, canvas_titles, canvas_weights, chart, charts_in, open_page, outputs
from tests.helpers.pretrained_files import write_tiny_bert

transformers = pytest.importorskip("transformers")
from tests.helpers.hf_decoder_reference import reference_model, save_folder  # noqa: E402 - needs transformers
from tests.helpers.hf_seq2seq_reference import bart  # noqa: E402

TEXT = "the animal didn't cross the street because it was tired"
PAIR = ("A man is playing a guitar.", "Someone plays an instrument.")  # the similarity section's default pair
DECODER = dict(vocab_size=320, bos_token_id=1, eos_token_id=2)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A models folder holding a tiny BERT, GPT-2, Llama (4 query heads sharing 2 key/value heads) and BART."""
    root = tmp_path_factory.mktemp("models")
    write_tiny_bert(root / "bert")
    gpt2 = transformers.GPT2Config(n_positions=64, n_embd=16, n_layer=2, n_head=4, **DECODER)
    save_folder(reference_model(gpt2), root / "gpt2", add_bos=False)
    llama = transformers.LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, max_position_embeddings=64, **DECODER)
    save_folder(reference_model(llama), root / "llama", add_bos=True)
    bart(root / "bart")
    return root


@pytest.fixture
def explore(models, runs, monkeypatch):
    """Open Explore on ``models:<name>`` with ``text`` typed, the models folder given as ``ATTNSCOPE_MODELS``."""
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(models))
    resources.explanation.clear()

    def opened(name: str, text: str = TEXT, errors: bool = False):
        at = open_page("explore", ckpt=f"models:{name}", query={"text": text})
        assert errors or not at.error, [e.value for e in at.error]
        return at
    return opened


@pytest.fixture
def explained(monkeypatch) -> list[dict]:
    """The options of every explanation the app runs from here on, in the server (``core.explain``) or in a
    models-folder model's worker process (``ExplainWorker.explain``); cached results are not runs."""
    calls: list[dict] = []
    real, real_worker = resources.explain, ExplainWorker.explain

    def spy(model, text, **options):
        calls.append(options)
        return real(model, text, **options)

    def worker_spy(worker, text, *, deadline_s=None, **options):
        calls.append(options)
        return real_worker(worker, text, deadline_s=deadline_s, **options)

    monkeypatch.setattr(resources, "explain", spy)
    monkeypatch.setattr(ExplainWorker, "explain", worker_spy)
    return calls


def subheaders(at) -> list[str]:
    return [h.value for h in at.subheader]


def generate(at, **settings):
    """Set the writing form's widgets (``decoding``, ``temperature``, ``top_k``, ``top_p``, ``seed``,
    ``tokens``), then press Generate."""
    for name, value in settings.items():
        key = f"explore_gen_{name}"
        widget = {"decoding": at.radio, "seed": at.number_input}.get(name, at.slider)(key=key)
        widget.set_value(value)
    next(b for b in at.button if b.label == "Generate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def shown_rows(at, prefix: str, step: int, layer: int, expected: np.ndarray, heads: list[str]):
    """Move the steps part (keys ``<prefix>_step``, ``<prefix>_layer``) to ``step`` and ``layer`` (from 1); its
    per-head chart must draw ``expected`` (H, K), rows labelled ``heads``. Returns the chart's frame."""
    at.slider(key=f"{prefix}_step").set_value(step)
    at.slider(key=f"{prefix}_layer").set_value(layer).run()
    frame = chart(at, f"Step {step}, layer {layer}: each head's row")[0]
    assert list(dict.fromkeys(frame["row"])) == heads
    rows = as_matrix(frame)  # (H, K)
    np.testing.assert_allclose(rows, expected, atol=1e-6)
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-5)
    return frame


def continuation(at) -> str:
    """The continuation the writing section shows (the last code block on the page, under its caption)."""
    assert any(c.value.startswith("Continuation (") for c in at.caption)
    return outputs(at)[-1]


# ----------------------------------------------------------------------------- encoder
def test_an_encoder_shows_its_embedding_and_the_similarity_core_computes(explore, models):
    at = explore("bert")
    assert "Sentence embedding and similarity" in subheaders(at)
    assert not {"Let it write, one step at a time", "The output step by step: where each head looks in the source"
                } & set(subheaders(at))
    model = load_pretrained(models / "bert")
    shown = chart(at, "Sentence embedding")[0]
    np.testing.assert_allclose(shown["value"], explain(model, TEXT).prediction.vector, atol=1e-6)
    assert at.metric[0].value == f"{sentence_similarity(model, *PAIR):.3f}"
    at.text_input(key="explore_sim_b").set_value("a cat sat on the mat").run()
    other = sentence_similarity(model, PAIR[0], "a cat sat on the mat")
    assert at.metric[0].value == f"{other:.3f}" != f"{sentence_similarity(model, *PAIR):.3f}"


def test_the_similarity_runs_in_the_models_worker_and_a_refusal_is_one_line(explore, models, monkeypatch):
    in_server, asked = [], []
    monkeypatch.setattr(pretrained_resources, "sentence_similarity",
                        functools.wraps(sentence_similarity)(lambda *a: in_server.append(a)))
    real = LessonWorker.lesson

    def lesson(worker, name, *args, **kwargs):
        asked.append((name, args))
        if args == PAIR:
            raise ValueError("running the model took longer than 60 s and was stopped")
        return real(worker, name, *args, **kwargs)
    monkeypatch.setattr(LessonWorker, "lesson", lesson)
    at = explore("bert", errors=True)
    assert ("sentence_similarity", PAIR) in asked and not in_server and not at.metric
    assert [e.value for e in at.error] == ["Could not compare the sentences: running the model took longer than 60 s "
                                           "and was stopped"]
    assert not at.exception and "Head finder: which heads link a word to another?" in subheaders(at)
    at.text_input(key="explore_sim_b").set_value("a cat sat on the mat").run()
    other = sentence_similarity(load_pretrained(models / "bert"), PAIR[0], "a cat sat on the mat")
    assert at.metric[0].value == f"{other:.3f}" and not in_server  # computed by the worker, as core does


def test_the_head_finder_ranks_the_heads_as_core_does(explore, models):
    at = explore("bert")
    exp = explain(load_pretrained(models / "bert"), TEXT)
    tokens, maps = exp.source_tokens, exp.attention["encoder"]  # (L, H, T, T)
    for word in ("it", "street"):
        query = tokens.index(word)
        at.selectbox(key="explore_hf_word").set_value(query).run()
        ranked = analysis.head_finder(maps, query, ignore=[0, len(tokens) - 1])
        table = at.dataframe[0].value
        assert list(zip(table["layer"], table["head"])) == [(r["layer"] + 1, r["head"] + 1) for r in ranked[:len(table)]]
        np.testing.assert_allclose(table["weight"], [round(r["weight"], 4) for r in ranked[:len(table)]])
    at.selectbox(key="explore_hf_head").set_value(2).run()
    layer, head = ranked[2]["layer"], ranked[2]["head"]
    shown = as_matrix(chart(at, f"bert · layer {layer + 1}, head {head + 1}")[0])
    np.testing.assert_allclose(shown, maps[layer, head], atol=1e-6)
    np.testing.assert_allclose(shown.sum(-1), 1.0, atol=1e-5)


# ----------------------------------------------------------------------------- decoder
def test_greedy_temperature_zero_and_top_k_one_give_the_same_continuation(explore, models, explained):
    at = explore("gpt2")
    assert "Let it write, one step at a time" in subheaders(at)
    assert "Sentence embedding and similarity" not in subheaders(at)
    greedy = explain(load_pretrained(models / "gpt2"), TEXT, continuation=6)
    assert continuation(generate(at)) == greedy.prediction.text  # the form's default: greedy, 6 tokens
    runs = len(explained)
    assert continuation(generate(at, decoding="sample", temperature=0.0)) == greedy.prediction.text
    assert len(explained) == runs  # temperature 0 is the greedy run: from the cache
    assert continuation(generate(at, temperature=1.5, top_k=1)) == greedy.prediction.text
    assert explained[-1] == {"continuation": 6, "decoding": "sample", "sample_temperature": 1.5, "top_k": 1, "seed": 0}


def test_a_seeded_sample_is_core_s_and_reproducible(explore, models):
    model = load_pretrained(models / "gpt2")

    def core_sample(seed: int, **nucleus) -> str:
        return explain(model, TEXT, continuation=6, decoding="sample", sample_temperature=2.0, top_k=100, seed=seed,
                       **nucleus).prediction.text
    assert core_sample(3, top_p=0.5) != core_sample(4, top_p=0.5)  # the two seeds draw different text
    assert core_sample(3, top_p=0.5) != core_sample(3)  # and top-p changes what is drawn
    at = explore("gpt2")
    first = continuation(generate(at, decoding="sample", temperature=2.0, top_k=100, top_p=0.5, seed=3))
    assert first == core_sample(3, top_p=0.5)
    assert continuation(generate(at, seed=4)) == core_sample(4, top_p=0.5)
    resources.explanation.clear()  # drawn again, not read from the cache
    assert continuation(generate(at, seed=3)) == first


def test_a_sampling_control_never_reruns_the_head_view_s_explanation(explore, explained):
    at = explore("gpt2")
    page_runs = list(explained)
    assert page_runs and all("decoding" not in options for options in page_runs)  # the head view's run(s)
    events = resources.MODEL_EVENTS["run"]
    at.slider(key="explore_gen_temperature").set_value(1.2).run()  # moved, not submitted: nothing runs
    assert explained == page_runs and resources.MODEL_EVENTS["run"] == events
    generate(at, decoding="sample", temperature=0.7, seed=5)
    assert explained[len(page_runs):] == [{"continuation": 6, "decoding": "sample", "sample_temperature": 0.7,
                                           "top_k": 40, "seed": 5}]
    assert resources.MODEL_EVENTS["run"] == events + 1
    assert any(t.startswith("Decoder masked self-attention — layer 1, head 1") for t in canvas_titles(at))  # still drawn


def test_the_steps_are_the_sampled_run_s_rows_and_grouped_heads_are_labelled(explore, models):
    at = explore("llama")
    title = next(t for t in canvas_titles(at) if t.startswith("Decoder masked self-attention — layer 1, head 1"))
    assert title.endswith("· kv head 1 of 2")
    assert any("4 query heads share 2 key/value heads (kv 1: heads 1, 2; kv 2: heads 3, 4)" in c.value
               for c in at.caption)
    at.session_state["head"] = 4  # pinned on the canvas
    at.run()
    assert any(t.endswith("head 4 · kv head 2 of 2") for t in canvas_titles(at))
    generate(at, decoding="sample", temperature=1.0, seed=2, tokens=4)
    model = load_pretrained(models / "llama")
    prompt = len(explain(model, TEXT).target_tokens)
    sampled = explain(model, TEXT, continuation=4, decoding="sample", sample_temperature=1.0, top_k=40, seed=2)
    maps = sampled.attention["decoder"]  # (L, H, T, T)
    for step, layer in [(1, 1), (3, 2)]:
        q = prompt - 1 + step - 1
        shown_rows(at, "explore_gen", step, layer, maps[layer - 1, :, q, : q + 1],
                   [f"head {h + 1} · kv {h // 2 + 1}" for h in range(4)])


# ----------------------------------------------------------------------------- encoder-decoder
def test_an_encoder_decoder_translates_with_its_cross_attention(explore, models):
    text = "the cat sat on a mat"
    at = explore("bart", text)
    expected = explain(load_pretrained(models / "bart"), text, decoding="greedy")
    assert any(c.value == "Generated output" for c in at.caption)
    assert (expected.prediction.text or "(empty)") in outputs(at)
    assert not {"Sentence embedding and similarity", "Let it write, one step at a time"} & set(subheaders(at))
    assert "The output step by step: where each head looks in the source" in subheaders(at)
    at.segmented_control(key="kind").set_value("cross").run()
    assert "Cross-attention (decoder → encoder) — layer 1, head 1" in canvas_titles(at)
    np.testing.assert_allclose(canvas_weights(at, 0, 0), expected.attention["cross"][0, 0], atol=1e-3)
    at.segmented_control(key="view").set_value("generation").run()
    assert chart(at, "Cross-attention over the source (layer 1, head 1)")  # the generation view


def test_an_encoder_decoder_shows_each_head_s_cross_attention_row_step_by_step(explore, models):
    text = "the cat sat on a mat"
    at = explore("bart", text)
    expected = explain(load_pretrained(models / "bart"), text, decoding="greedy")
    cross = expected.attention["cross"]  # (L, H, T, S)
    assert not charts_in(at) and canvas_titles(at) == ["Encoder self-attention — layer 1, head 1"]  # off at first
    at.toggle(key="explore_tr_on").set_value(True).run()
    for step, layer in [(1, 1), (3, 2)]:
        frame = shown_rows(at, "explore_tr", step, layer, cross[layer - 1, :, step - 1], [f"head {h + 1}" for h in range(4)])
        assert list(dict.fromkeys(frame["col"]))[0].endswith(expected.source_tokens[0])
        per_layer = as_matrix(chart(at, f"Step {step}: every layer")[0])  # (L, S)
        np.testing.assert_allclose(per_layer, cross[:, :, step - 1].mean(1), atol=1e-6)
    assert f"after “{expected.target_tokens[2]}” the model writes “{expected.generated_tokens[2]}”" in \
        " ".join(t.value for t in at.text)
