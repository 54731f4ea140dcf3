"""The Lesson's model map, sizes on hover, and every encoder-decoder (issue 22).

- The map is drawn from the loaded model's config and highlights the current stage's block; a click
  on a block jumps to its stage.
- Every size shown on hover equals the shape of the array it describes, and the shape the model's
  config implies; the charts carry it in their data and subtitle.
- Pretrained Marian, BART/mBART and T5 folders (tiny random, saved by ``transformers``) are traced
  stage by step equal to Hugging Face's eager forward pass, and their pre-norm / position notes
  appear on the stages; our own post-norm model gets none.

Numbers are computed from the models in the test (the translation checkpoint may be retrained).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
import torch

from app.views.lesson import STAGES
from app.views.parts.lesson_map import STAGE_BLOCKS, STAGE_TOPICS, first_stage
from core import load_checkpoint, load_pretrained, lessons
from tests.helpers.apptest_helpers import charts, component_data, is_plotly, open_page, spec
from tests.helpers.paths import SHIPPED

transformers = pytest.importorskip("transformers")
from tests.helpers import hf_seq2seq_reference as ref  # noqa: E402

TRANSLATION = SHIPPED / "translation.safetensors"
TEXT = "the cat sat on a mat"
BUILDERS = {"t5": lambda f: ref.t5(f), "bart": lambda f: ref.bart(f, "bart"), "mbart": lambda f: ref.bart(f, "mbart"),
            "marian": lambda f: ref.marian(f, spm_files=False)}


@pytest.fixture(scope="module")
def own():
    return lessons.trace_translation(load_checkpoint(TRANSLATION), "I have cats", head=1)


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def family(request, tmp_path_factory):
    folder, reference, _ = BUILDERS[request.param](tmp_path_factory.mktemp("models") / request.param)
    loaded = load_pretrained(folder)
    return request.param, folder, reference, loaded, lessons.trace_seq2seq(loaded, TEXT, head=1)


def test_every_stage_has_a_block_and_a_topic():
    assert len(STAGE_BLOCKS) == len(STAGE_TOPICS) == len(STAGES)
    for topic in filter(None, STAGE_TOPICS):
        assert topic in lessons.model_map.__globals__["TOPICS"]
    assert first_stage("cross") == 13 and first_stage("add_norm2") == first_stage("ffn") == 10
    assert first_stage("decoder_ffn") is None


def test_the_map_is_drawn_from_the_model_config(own):
    config = load_checkpoint(TRANSLATION).config
    model = lessons.model_map(own)
    assert (model.n_encoder_layers, model.n_decoder_layers, model.n_heads, model.d_model, model.d_ff) == (
        config.n_encoder_layers, config.n_decoder_layers, config.n_heads, config.d_model, config.d_ff)
    assert [b.group for b in model.blocks] == ["input"] * 2 + ["encoder"] * 5 + ["decoder"] * 3 + ["output"] * 2
    attention = next(b for b in model.blocks if b.key == "self_attention")
    assert f"{config.n_heads} heads" in attention.label
    assert f"W_qkv ∈ ℝ^(d_model × 3·h·d_k) = {config.d_model} × {3 * config.d_model}" in attention.sizes


def test_hover_sizes_equal_the_shapes_of_the_arrays(own):
    config, S, T = load_checkpoint(TRANSLATION).config, len(own.source_tokens), len(own.target_tokens)
    d, dk, f = config.d_model, config.d_model // config.n_heads, config.d_ff
    expected = {"x": (S, d), "W_qkv": (d, 3 * d), "Q": (S, dk), "K": (S, dk), "V": (S, dk), "QKᵀ": (S, S),
                "A": (S, S), "Z": (S, dk), "Concat": (S, d), "W^O": (d, d), "W_1": (d, f), "H": (S, f),
                "FFN": (S, d), "memory": (S, d), "A_dec": (T, T), "A_cross": (T, S),
                "W_out": (d, config.tgt_vocab_size), "P": (T, config.tgt_vocab_size), "E": (config.src_vocab_size, d)}
    sizes = lessons.array_sizes(own)
    for name, shape in expected.items():
        assert sizes[name].dims == shape, name
    assert sizes["Q"].hover == f"Q ∈ ℝ^(S × d_k) = {S} × {dk}"  # no LaTeX braces in plain text
    assert own.encoder_head.q.shape == sizes["Q"].dims and own.cross_weights.shape == sizes["A_cross"].dims


def _stage(at, stage: int):
    at.selectbox(key="lesson_stage").set_value(stage).run()
    assert not at.exception and not at.error, at.error
    return at


def _map(at) -> dict:
    """The model map the page sent (one component for the whole map)."""
    (found,) = component_data(at, "attnscope_lesson_map")
    return found


def _blocks(at) -> dict[str, dict]:
    return {block["key"]: block for group in _map(at)["groups"] for block in group["blocks"]}


def test_the_map_highlights_the_current_stage_and_a_click_jumps(runs):
    """One element draws the map: the current stage's block marked (and only it), each block's sizes on hover, the
    block with no stage disabled; a click's jump (the component's trigger, as the browser sends it) opens its stage
    (the click itself: tests/browser/test_browser_lesson.py)."""
    at = open_page("lesson", query={"lesson_text": "the red car"}, timeout=60)
    for stage in (1, 4, 9, 13):
        _stage(at, stage)
        blocks = _blocks(at)
        assert [key for key, block in blocks.items() if block["here"]] == [STAGE_BLOCKS[stage]], stage
        assert all(block["stage"] == first_stage(key) for key, block in blocks.items())
    sizes = lessons.array_sizes(lessons.trace_translation(load_checkpoint(TRANSLATION), "the red car"))
    assert sizes["W_qkv"].hover in _blocks(at)["self_attention"]["help"]  # sizes on hover
    assert _blocks(at)["decoder_ffn"]["stage"] is None  # disabled: no stage of its own
    assert [g["name"] for g in _map(at)["groups"]] == ["input", "encoder", "decoder", "output"]
    jumped = _blocks(at)["ffn"]["stage"]
    at.session_state["lesson_stage"] = jumped  # what the jump trigger's callback sets (lesson_map._jumped)
    at.run()
    assert jumped == 10 and at.header[0].value == f"11. {STAGES[10][0]}"
    assert _blocks(at)["ffn"]["here"]


def test_every_text_model_is_followed_itself(runs):
    """Our own reversal model (an encoder-decoder that is no translation model) is followed, not replaced."""
    at = open_page("lesson", ckpt="shipped:reverse", query={"lesson_text": "the red car"}, timeout=60)
    assert not any("so it follows" in c.value for c in at.caption) and not at.error
    assert any(c.value.startswith("Model: reverse") for c in at.caption)
    assert _blocks(at)["tokens"]["here"]


def test_charts_carry_the_sizes_of_their_arrays_on_hover(runs):
    at = open_page("lesson", query={"lesson_text": "I have cats", "lesson_stage": "2"}, timeout=60)
    trace = lessons.trace_translation(load_checkpoint(TRANSLATION), "I have cats", head=0)
    sizes = lessons.array_sizes(trace)
    shown = []
    for element in charts(at):
        tooltips = json.dumps(spec(element), ensure_ascii=False)
        if is_plotly(element):  # a block matrix: the size in its hover template and its subtitle
            trace, = spec(element)["data"]
            assert trace["hovertemplate"].count("∈") == 1 and spec(element)["layout"]["title"]["subtitle"]["text"] in \
                trace["hovertemplate"]
            shown += [name for name, size in sizes.items() if size.hover in tooltips]
            continue
        frames = [pa.ipc.open_stream(d.data.data).read_pandas() for d in element.proto.datasets]
        values = {v for frame in frames if "size" in frame for v in frame["size"]}  # a rule layer has none
        assert len(values) == 1 and '"field": "size"' in tooltips  # one array per chart, on every hover
        assert values.pop() in tooltips  # and under the title
        shown += [name for name, size in sizes.items() if size.hover in tooltips]
    assert {"W_qkv", "Q", "K", "V"} <= set(shown)


def test_our_model_gets_no_family_notes(own):
    assert all(lessons.stage_notes(own, topic) == () for topic in filter(None, STAGE_TOPICS))


def test_the_trace_equals_hugging_face(family):
    name, _, reference, loaded, trace = family
    ids = loaded.tokenizer.encode(TEXT).ids
    with torch.no_grad():
        enc = reference.get_encoder()(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    assert list(trace.source_tokens) == loaded.tokenizer.token_strings(ids)
    np.testing.assert_allclose(trace.encoder_head.weights, enc.attentions[0][0, 1].numpy(), atol=1e-6)
    np.testing.assert_allclose(trace.layer_out, enc.hidden_states[1][0].numpy(), atol=1e-5)
    np.testing.assert_allclose(trace.memory, enc.last_hidden_state[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(trace.encoder_head.weights.sum(-1), 1.0, atol=1e-6)


def test_the_decoder_maps_equal_hugging_face(family):
    name, _, reference, loaded, trace = family
    config = loaded.model.config
    src = torch.tensor([loaded.tokenizer.encode(TEXT).ids])
    decoder_ids = [config.decoder_start_id] + ([] if config.forced_bos_id is None else [config.forced_bos_id])
    generated = reference.generate(src, num_beams=1, do_sample=False, max_new_tokens=len(trace.target_tokens),
                                   decoder_start_token_id=config.decoder_start_id)
    tgt = generated[:, : len(trace.target_tokens)]
    with torch.no_grad():
        out = reference(input_ids=src, decoder_input_ids=tgt, output_attentions=True)
    assert tgt[0, : len(decoder_ids)].tolist() == decoder_ids
    np.testing.assert_allclose(trace.decoder_head.weights, out.decoder_attentions[0][0, 1].numpy(), atol=1e-6)
    np.testing.assert_allclose(trace.cross_heads, out.cross_attentions[-1][0].numpy(), atol=1e-5)
    assert np.all(np.triu(trace.decoder_head.weights, 1) == 0.0)
    np.testing.assert_allclose(trace.probabilities, out.logits[0].softmax(-1).numpy(), atol=1e-5)


def test_sizes_follow_the_family_config(family):
    name, _, _, loaded, trace = family
    c = loaded.model.config
    sizes, S = lessons.array_sizes(trace), len(trace.source_tokens)
    assert sizes["Q"].dims == (S, c.d_kv) and sizes["W_qkv"].dims == (c.d_model, 3 * c.n_heads * c.d_kv)
    assert sizes["H"].dims == (S, c.d_ff) and sizes["P"].dims[1] == c.vocab_size
    assert lessons.model_map(trace).n_encoder_layers == c.n_encoder_layers


def test_pre_norm_and_position_notes_appear_where_the_family_differs(family):
    name, _, _, _, trace = family
    pre = "This model normalises before the sub-layer: x + Sublayer("
    notes = {topic: " ".join(lessons.stage_notes(trace, topic)) for topic in filter(None, STAGE_TOPICS)}
    assert (pre in notes["add_norm"]) == (name in ("t5", "mbart"))
    assert ("T5 has no positional encoding added to embeddings" in notes["embeddings"]) == (name == "t5")
    assert ("T5 does not divide by √d_k" in notes["scaled"]) == (name == "t5")
    assert ("BART learns its positions" in notes["embeddings"]) == (name in ("bart", "mbart"))
    assert ("RMSNorm" in notes["add_norm"]) == (name == "t5")
    assert ("d_model^-0.5" in notes["output"]) == (name == "t5")
    if name == "t5":  # what the softmax sees: q·k (no scaling) + the relative bias
        head = trace.encoder_head
        np.testing.assert_allclose(head.scaled, head.dot + head.position_bias, atol=1e-5)


@pytest.mark.parametrize("name", ["t5", "bart"])  # one pre-norm and one post-norm family through the app
def test_the_lesson_follows_a_pretrained_model_from_the_models_folder(name, runs, monkeypatch, tmp_path_factory):
    folder = BUILDERS[name](tmp_path_factory.mktemp("models") / name)[0]
    trace = lessons.trace_seq2seq(load_pretrained(folder), TEXT, head=1)
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(folder.parent))
    at = open_page("lesson", ckpt=f"models:{name}", query={"lesson_text": TEXT, "lesson_head": "1"},
                   state={"lesson_ask": False}, timeout=90)
    notes = []
    for stage in range(len(STAGES)):
        _stage(at, stage)
        notes += [i.value for i in at.info]
    joined = " ".join(notes)
    assert ("normalises before the sub-layer" in joined) == (name == "t5")
    assert ("BART learns its positions" in joined) == (name == "bart")
    _stage(at, 6)
    assert f"= {trace.encoder_head.weights[0].max():.2f}" in at.latex[0].value
