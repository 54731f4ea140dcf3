"""The Lesson follows every kind of model (its track read from the trace): a tiny decoder-only (Llama: rotary,
RMSNorm, gated FFN, grouped heads; GPT-2: learned positions, LayerNorm) and a tiny encoder-only model (BERT,
post-norm) from the models folder (so through the worker), every stage drawn with the track's stage count, the
scores and weights equal to the model's own maps (``explain``), and a share link's stage clamped to the track."""

from __future__ import annotations

import numpy as np
import pytest

from app.views.parts import lesson_tracks as tracks
from core import explain, lessons, load_pretrained
from tests.helpers.apptest_helpers import open_page

pytest.importorskip("transformers")
from tests.helpers.hf_families import save_family  # noqa: E402

TEXT = "the cat sat on a mat"
KINDS = {"llama": "decoder", "gpt2": "decoder", "bert": "encoder"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {name: save_family(name, root / name, tokenizer=True) for name in KINDS}


@pytest.mark.parametrize("name", list(KINDS))
def test_the_trace_equals_the_models_own_maps(name, folders):
    """Layer 0's scores and weights of every head, read from the trace, equal explain's maps to 1e-6; a
    decoder-only model's mask is causal, an encoder-only model's hides nothing."""
    model = load_pretrained(folders[name])
    kind = KINDS[name]
    explained = explain(model, TEXT, return_scores=True)
    for head in range(model.config.n_heads):
        trace = lessons.trace_sentence(model, TEXT, head=head)
        assert trace.kind == kind and len(tracks.track(kind)) == (15 if kind == "decoder" else 13)
        S = len(trace.source_tokens)
        np.testing.assert_allclose(trace.encoder_head.weights, np.asarray(explained.attention[kind][0, head])[:S, :S],
                                   atol=1e-6)
        scores = np.asarray(explained.scores[kind][0, head])[:S, :S]
        allowed = trace.encoder_head.mask
        np.testing.assert_allclose(trace.encoder_head.scaled[allowed], scores[allowed], atol=1e-5)
        np.testing.assert_allclose(trace.encoder_head.weights.sum(-1), 1.0, atol=1e-6)
        assert np.array_equal(allowed, np.tril(np.ones((S, S), bool)) if kind == "decoder" else np.ones((S, S), bool))
    assert trace.norm == ("post" if name == "bert" else "pre")
    assert trace.positions == ("rotary" if name == "llama" else "learned")
    assert trace.gated == (name == "llama") and (trace.norm_type == "rmsnorm") == (name == "llama")


@pytest.mark.slow  # 20–40 s: every stage of the track, the model in its worker process
@pytest.mark.parametrize("name", list(KINDS))
def test_every_stage_of_the_track_draws(name, folders, runs, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(folders[name].parent))
    track = tracks.track(KINDS[name])
    at = open_page("lesson", ckpt=f"models:{name}", query={"lesson_text": TEXT, "lesson_head": "1"},
                   state={"lesson_ask": False}, timeout=90)
    trace = lessons.trace_sentence(load_pretrained(folders[name]), TEXT, head=1)
    notes = []
    for stage, step in enumerate(track):
        at.selectbox(key="lesson_stage").set_value(stage).run()
        assert not at.exception and not at.error, (stage, at.error, [e.message for e in at.exception])
        assert at.header[0].value == f"{stage + 1}. {step.title}"
        notes += [i.value for i in at.info]
        if step.title == "Softmax":  # the formula shows the live weight of token 0
            assert f"= {trace.encoder_head.weights[0].max():.2f}" in at.latex[0].value
    joined = " ".join(notes)
    assert ("decoder-only" in joined) == (KINDS[name] == "decoder")
    assert ("encoder-only" in joined) == (KINDS[name] == "encoder")
    assert ("rotary positions" in joined) == (name == "llama")
    assert not any("Cross-attention" in s.title or "Decoder masked" in s.title for s in track)
    assert at.button(key="lesson_next").disabled  # the last stage of this track


def test_a_share_links_stage_past_the_track_is_clamped(folders, runs, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(folders["bert"].parent))
    at = open_page("lesson", ckpt="models:bert", query={"lesson_text": TEXT, "stage": "18"},
                   state={"lesson_ask": False}, timeout=90)
    track = tracks.ENCODER_ONLY
    assert at.session_state["lesson_stage"] == len(track) - 1
    assert at.header[0].value == f"{len(track)}. {track[-1].title}"
