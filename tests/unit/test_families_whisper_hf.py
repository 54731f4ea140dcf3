"""Whisper as a Hugging Face folder (``WhisperForConditionalGeneration`` saved by ``transformers``), multilingual and
English-only: every encoder, decoder and cross map and the logits equal ``transformers`` eager; ``explain_speech``
transcribes with the greedy tokens of the reference; generation_config.json's languages, alignment heads and
suppressed ids are read, Whisper's own rules stand in without it; what the model does not build is refused, named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from core import explain, explain_speech, load_pretrained
from core.audio.decode import Audio
from core.audio.mel import log_mel
from core.io.checkpoint import CheckpointError
from tests.helpers.hf_whisper_folder import reference_whisper, save_whisper, special_id, whisper_tokenizer

transformers = pytest.importorskip("transformers")

VOCAB = whisper_tokenizer().get_vocab_size()
SOT, EOT, NO_TIMESTAMPS = (special_id(t) for t in ("<|startoftranscript|>", "<|endoftext|>", "<|notimestamps|>"))


def tone(seconds: float = 1.0) -> Audio:
    """A 440 Hz tone with a rising 880 Hz partial: speech-like enough to drive the model."""
    t = np.arange(int(16_000 * seconds), dtype=np.float32) / 16_000
    samples = 0.4 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 880 * t * (1 + t))
    return Audio(samples.astype(np.float32), 16_000, 1, "wav")


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    reference = reference_whisper(VOCAB)
    folder = save_whisper(reference, tmp_path_factory.mktemp("whisper") / "whisper-tiny", multilingual=True,
                          alignment=[[1, 0], [1, 1]], suppress=[5, 6])
    return folder, reference


@pytest.fixture(scope="module")
def english(tmp_path_factory):
    reference = reference_whisper(VOCAB, seed=1, decoder_layers=3)
    return save_whisper(reference, tmp_path_factory.mktemp("whisper") / "whisper-tiny.en", multilingual=False), \
        reference


@torch.no_grad()
@pytest.mark.parametrize("which", ["multilingual", "english"])
def test_every_map_and_the_logits_equal_transformers(which, request):
    folder, reference = request.getfixturevalue(which)
    loaded = load_pretrained(folder)
    assert (loaded.family, loaded.head, loaded.architecture) == ("whisper", "speech", "encoder-decoder")
    features = torch.from_numpy(log_mel(tone().samples))[None]  # (1, 80, 3000)
    ids = torch.tensor([[SOT, special_id("<|en|>"), special_id("<|transcribe|>"), NO_TIMESTAMPS, 40, 41, 42]])
    ours = loaded.model(features, ids, return_attention=True)
    theirs = reference(input_features=features, decoder_input_ids=ids, output_attentions=True)
    for kind, maps in (("encoder", theirs.encoder_attentions), ("decoder", theirs.decoder_attentions),
                       ("cross", theirs.cross_attentions)):
        expected = torch.stack(maps)  # (L, 1, H, Tq, Tk)
        assert ours.attention[kind].shape == expected.shape
        assert float((ours.attention[kind] - expected).abs().max()) <= 1e-6, kind
    assert float((ours.logits - theirs.logits).abs().max()) <= 1e-5 * float(theirs.logits.abs().max())


def test_generation_config_gives_languages_alignment_heads_and_suppressed_ids(multilingual, english):
    config = load_pretrained(multilingual[0]).config
    assert config.multilingual and dict(config.languages) == {"en": special_id("<|en|>"), "es": special_id("<|es|>"),
                                                             "fr": special_id("<|fr|>")}
    assert config.alignment_heads == ((1, 0), (1, 1)) and {5, 6} <= set(config.never_generated)
    assert (config.transcribe_id, config.translate_id) == (special_id("<|transcribe|>"), special_id("<|translate|>"))
    english_config = load_pretrained(english[0]).config
    assert not english_config.multilingual and english_config.languages == ()
    assert english_config.alignment_heads == ((1, 0), (1, 1), (2, 0), (2, 1))  # no list: the decoder's second half


def test_without_generation_config_whispers_own_rules_hold(multilingual, tmp_path):
    folder = tmp_path / "bare"
    shutil.copytree(multilingual[0], folder)
    (folder / "generation_config.json").unlink()
    config = load_pretrained(folder).config
    assert not config.multilingual  # fewer than 51,865 tokens: English-only, as Whisper decides
    assert config.alignment_heads == ((1, 0), (1, 1)) and config.suppress_ids == ()


def _greedy_reference(reference, features, prefix: list[int], banned: tuple[int, ...], steps: int) -> list[int]:
    seq = torch.tensor([prefix])
    with torch.no_grad():
        encoded = reference.model.encoder(features).last_hidden_state
        for _ in range(steps):
            logits = reference(encoder_outputs=(encoded,), decoder_input_ids=seq).logits[:, -1]  # (1, V)
            logits[:, list(banned)] = float("-inf")
            seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
            if int(seq[0, -1]) == EOT:
                break
    return seq[0].tolist()


@pytest.mark.parametrize("which, language", [("english", None), ("multilingual", "es")])
def test_explain_speech_decodes_the_reference_greedy_tokens(which, language, request):
    folder, reference = request.getfixturevalue(which)
    loaded = load_pretrained(folder)
    audio = tone()
    exp = explain_speech(loaded, audio, language=language, max_new_tokens=6)
    prefix = [SOT, NO_TIMESTAMPS] if language is None else [SOT, special_id("<|es|>"), special_id("<|transcribe|>"),
                                                            NO_TIMESTAMPS]
    features = torch.from_numpy(log_mel(audio.samples))[None]
    expected = _greedy_reference(reference, features, prefix, loaded.config.never_generated, 6)
    assert list(exp.target_tokens[:len(prefix)]) == loaded.tokenizer.token_strings(prefix)
    assert len(expected) > len(prefix) + 1
    assert [*exp.target_tokens, exp.generated_tokens[-1]] == loaded.tokenizer.token_strings(expected)
    assert exp.attention["cross"].shape[-1] == 50 and exp.alignment_heads == loaded.config.alignment_heads
    with pytest.raises(ValueError, match="reads speech, not text"):
        explain(loaded, "hello")


def _edited(folder, tmp_path, **changes):
    copy = tmp_path / "edited"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config.update(changes)
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("changes, message", [
    (dict(max_source_positions=750), "max_source_positions 750 .Whisper reads 30 s: 1500 frames. is not supported"),
    (dict(decoder_attention_heads=4), "encoder_attention_heads 2 ≠ decoder_attention_heads 4 is not supported"),
    (dict(activation_function="relu"), "activation_function 'relu' .Whisper's is gelu. is not supported"),
    (dict(scale_embedding=True), "scale_embedding is not supported"),
    (dict(architectures=["WhisperForAudioClassification"]), "architecture .'WhisperForAudioClassification'."),
    (dict(encoder_layers=10**6), "claims 1,000,000 layers .encoder_layers. but model.safetensors holds 2"),
    (dict(d_model=24), "config.json claims d_model 24 but model.safetensors holds"),
])
def test_settings_the_model_does_not_build_are_refused_by_name(multilingual, tmp_path, changes, message):
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(_edited(multilingual[0], tmp_path, **changes))


@pytest.mark.parametrize("extra, message", [
    ("model.encoder.layers.0.self_attn.k_proj.bias",
     "unexpected tensor 'model.encoder.layers.0.self_attn.k_proj.bias'"),
    ("proj_out.weight", "proj_out.weight differs from the token embedding"),
])
def test_tensors_the_model_does_not_have_are_refused(multilingual, tmp_path, extra, message):
    folder = _edited(multilingual[0], tmp_path)
    weights = load_file(folder / "model.safetensors")
    shape = (16,) if extra.endswith("bias") else weights["model.decoder.embed_tokens.weight"].shape
    save_file({**weights, extra: torch.ones(shape)}, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=message):
        load_pretrained(folder)


def test_a_tokenizer_without_whispers_special_tokens_is_refused(multilingual, tmp_path):
    folder = _edited(multilingual[0], tmp_path)
    whisper_tokenizer(specials=False).save(str(folder / "tokenizer.json"))
    with pytest.raises(CheckpointError, match="tokenizer.json has no <.startoftranscript.>: not a Whisper tokenizer"):
        load_pretrained(folder)


def test_a_whisper_folder_is_told_apart_as_audio_and_explained_from_base64_bytes(multilingual):
    import base64

    from core import identify, model_version
    from core.inspect.speech import explain_speech_encoded

    folder = multilingual[0]
    assert identify(folder).modality == "audio" and model_version(folder)
    clip = (Path(__file__).resolve().parents[2] / "assets" / "audio" / "i_have_two_cats.flac").read_bytes()
    loaded = load_pretrained(folder)
    sent = explain_speech_encoded(loaded, base64.b64encode(clip).decode("ascii"), language="en", max_new_tokens=3)
    direct = explain_speech(loaded, clip, language="en", max_new_tokens=3)
    assert sent.target_tokens == direct.target_tokens
    np.testing.assert_array_equal(sent.attention["cross"], direct.attention["cross"])
    with pytest.raises(ValueError, match="did not arrive as base64 text"):
        explain_speech_encoded(loaded, "not base64 at all!")
