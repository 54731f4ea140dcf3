"""`explain_speech(model_or_path, audio, …) -> Explanation`: Whisper's maps for a piece of speech.

The audio becomes Whisper's log-mel spectrogram (``core.audio``), the decoder is driven by
``core.generate`` (greedy or beam) from the prompt ``<|startoftranscript|><|lang|><|task|>
<|notimestamps|>`` (English-only models: ``<|startoftranscript|><|notimestamps|>``), and the result
is the same :class:`Explanation` as for text: the source tokens are the encoder's 20 ms frames
labelled by their start time, the target tokens the decoder's, and the maps per kind.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import replace
from pathlib import Path
from typing import Mapping

import numpy as np
import torch

from core.audio.decode import MAX_SECONDS, Audio, checked_samples, load_audio
from core.audio.mel import frame_labels, frames_filled, log_mel
from core.generate import decode
from core.inspect.explainer import CAP_NOTE, GENERATION_CAP
from core.inspect.records import Explanation, Prediction
from core.io.pretrained.load import PretrainedModel, load_pretrained
from core.model.contract import AttentionControls

TASKS = ("transcribe", "translate")
DECODINGS = ("greedy", "beam")
FRAME_CHOICES = ("audio", "all")
DEFAULT_MAX_NEW_TOKENS = 224  # Whisper's own limit: half the decoder's 448 positions


def _model(source: PretrainedModel | str | os.PathLike) -> PretrainedModel:
    model = source if isinstance(source, PretrainedModel) else load_pretrained(source)
    if model.family != "whisper":
        raise ValueError(f"{model.name} is not a speech model (family {model.family})")
    return model


def _audio(audio: Audio | bytes | str | os.PathLike, max_seconds: float) -> tuple[Audio, str]:
    if isinstance(audio, Audio):
        if audio.seconds > max_seconds:
            raise ValueError(f"the audio is {audio.seconds:.1f} s long; at most {max_seconds:g} s")
        samples, notes = checked_samples(audio.samples)
        return replace(audio, samples=samples, notes=audio.notes + notes), "audio"
    if isinstance(audio, bytes):
        return load_audio(audio, max_seconds=max_seconds), "audio"
    path = Path(audio)
    if not path.is_file():
        raise ValueError(f"no audio file {path.name}")
    return load_audio(path.read_bytes(), name=path.name, max_seconds=max_seconds), path.name


def detect_language(model: PretrainedModel, features: torch.Tensor) -> tuple[str, float]:
    """(language code, probability) Whisper gives the features (1, M, 3000) after ``<|startoftranscript|>``,
    among its language tokens (the same way Whisper picks one)."""
    c = model.config
    codes, ids = zip(*c.languages)
    with torch.inference_mode():
        memory, _, _ = model.model.encode(features)
        logits = model.model.next_token_logits(torch.tensor([[c.sot_id]], device=features.device), memory)  # (1, V)
    probs = logits[0, list(ids)].float().softmax(-1)  # (languages,)
    best = int(probs.argmax())
    return codes[best], float(probs[best])


def prompt(model: PretrainedModel, task: str, language: str | None) -> list[int]:
    """The decoder's forced start: ``<|startoftranscript|>`` [``<|lang|>`` ``<|task|>``] ``<|notimestamps|>``.

    Raises:
        ValueError: an unknown task or language, or translation asked of an English-only model.
    """
    c = model.config
    if task not in TASKS:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    if not c.multilingual:
        if task != "transcribe" or language not in (None, "en"):
            raise ValueError(f"{model.name} is English-only: it transcribes English and cannot translate")
        return [c.sot_id, c.no_timestamps_id]
    languages = dict(c.languages)
    if language not in languages:
        raise ValueError(f"unknown language {language!r}; {model.name} knows {', '.join(sorted(languages))}")
    return [c.sot_id, languages[language], c.transcribe_id if task == "transcribe" else c.translate_id,
            c.no_timestamps_id]


def explain_speech(
    model_or_path: PretrainedModel | str | os.PathLike, audio: Audio | bytes | str | os.PathLike, *,
    task: str = "transcribe", language: str | None = None, decoding: str = "greedy", beam_size: int = 4,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, frames: str = "audio", temperature: float = 1.0,
    hard: bool = False, causal: bool = True, head_mask: Mapping[str, list[list[float]]] | None = None,
    return_scores: bool = False, max_seconds: float = MAX_SECONDS,
) -> Explanation:
    """Transcribe (or translate into English) ``audio`` and return every map as an :class:`Explanation`.

    Args:
        model_or_path: a loaded Whisper :class:`PretrainedModel` or its folder.
        audio: decoded :class:`Audio`, or the bytes or path of a WAV, FLAC or OGG file.
        task: ``transcribe`` or ``translate`` (into English; multilingual models only).
        language: the spoken language's code (``es``); None: detected (multilingual) or English.
        decoding: ``greedy`` or ``beam`` (``beam_size`` beams).
        max_new_tokens: generation limit (at most 256, the cap ``core.explain`` and the app keep).
        frames: ``audio``: the encoder frames the audio fills (the rest of the 30 s window is
            silence padding; cropped rows then sum to less than 1) or ``all`` 1,500.
        temperature, hard, causal, head_mask, return_scores: the inference controls.
        max_seconds: longer audio is refused (at most Whisper's 30 s window).

    Raises:
        ValueError: unreadable, too long or too large audio, or an option out of range.
        CheckpointError: a path that is not a Whisper model.
    """
    if decoding not in DECODINGS or frames not in FRAME_CHOICES or beam_size < 1 or max_new_tokens < 1:
        raise ValueError(f"decoding must be {' or '.join(DECODINGS)}, frames {' or '.join(FRAME_CHOICES)}, "
                         "beam_size and max_new_tokens at least 1")
    pretrained, (clip, name) = _model(model_or_path), _audio(audio, min(max_seconds, MAX_SECONDS))
    config, tokenizer = pretrained.config, pretrained.tokenizer
    device = next(pretrained.model.parameters()).device
    features = torch.from_numpy(log_mel(clip.samples, config.n_mels))[None].to(device)  # (1, M, 3000)
    notes = [*clip.notes, *([CAP_NOTE] if max_new_tokens > GENERATION_CAP else [])]
    max_new_tokens = min(max_new_tokens, GENERATION_CAP)
    if language is None and config.multilingual:
        language, probability = detect_language(pretrained, features)
        notes.append(f"Language detected: {language} (probability {probability:.2f}).")
    start = prompt(pretrained, task, language)
    controls = AttentionControls(causal, True, temperature, hard,
                                 {k: torch.tensor(v, dtype=torch.float32) for k, v in (head_mask or {}).items()})
    gen = _generate(pretrained, features, start, decoding, beam_size,
                    dict(eos_id=config.eot_id, max_new_tokens=max_new_tokens, controls=controls,
                         return_scores=return_scores))
    shown = frames_filled(clip.seconds, config.n_frames) if frames == "audio" else config.n_frames
    finished = bool(gen.finished[0])
    notes.extend(_notes(shown, config.n_frames, finished))
    ids = gen.ids[0].tolist()
    return Explanation(
        text=name, task=task, architecture="encoder-decoder",
        source_tokens=frame_labels(shown), source_offsets=((0, 0),) * shown,
        target_tokens=tuple(tokenizer.token_strings(ids[:-1])), target_offsets=((0, 0),) * (len(ids) - 1),
        generated_tokens=tuple(tokenizer.token_strings(ids[1:])),
        prediction=Prediction("text", tokenizer.decode(ids).strip(), finished=finished),
        attention=_cropped(gen.output.attention, shown), scores=_cropped(gen.output.scores, shown),
        options={"task": task, "language": language, "decoding": decoding, "beam_size": beam_size,
                 "frames": frames, "seconds": round(clip.seconds, 3), "prompt_tokens": len(start),
                 "model": pretrained.name, "temperature": temperature, "hard": hard, "causal": causal},
        notes=tuple(notes), features=np.ascontiguousarray(features[0, :, : 2 * shown].cpu().numpy()),
        alignment_heads=tuple(config.alignment_heads),
    )


def explain_speech_encoded(model: PretrainedModel, audio_base64: str, **options) -> Explanation:
    """:func:`explain_speech` of an audio file's bytes sent as base64 text (the JSON arguments of a worker
    process's call, :class:`core.lessons.LessonWorker`).

    Raises:
        ValueError: text that is not base64, or what :func:`explain_speech` raises.
    """
    try:
        data = base64.b64decode(audio_base64, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise ValueError("the audio did not arrive as base64 text") from None
    return explain_speech(model, data, **options)


def _notes(shown: int, n_frames: int, finished: bool) -> list[str]:
    notes = []
    if shown < n_frames:
        notes.append(f"The maps show the {shown} encoder frames ({shown * 0.02:.2f} s) the audio fills, of the "
                     f"{n_frames} (30 s) Whisper reads; the rest is silence padding, so a cropped "
                     "cross-attention row sums to less than 1.")
    if not finished:
        notes.append("The output reached the length limit without <|endoftext|>.")
    return notes


def _generate(pretrained: PretrainedModel, features: torch.Tensor, start: list[int], decoding: str,
              beam_size: int, common: dict) -> decode.Generation:
    """Greedy or beam decoding of the features (1, M, 3000) from the prompt ``start``, every map returned."""
    prefix = torch.tensor([start], device=features.device)
    with torch.inference_mode():
        if decoding == "beam":
            return decode.beam_search(pretrained.model, features, prefix, beam_size=beam_size, **common)
        return decode.greedy(pretrained.model, features, prefix, **common)


def _cropped(maps: dict[str, torch.Tensor] | None, shown: int) -> dict[str, np.ndarray] | None:
    """Each kind's (L, 1, H, Tq, Tk) maps as float32 (L, H, Tq, Tk), keys (and encoder queries) cut to the
    first ``shown`` frames."""
    if maps is None:
        return None
    frames = slice(0, shown)
    crop = {"encoder": (slice(None), 0, slice(None), frames, frames), "decoder": (slice(None), 0),
            "cross": (slice(None), 0, slice(None), slice(None), frames)}
    return {k: np.ascontiguousarray(maps[k][index].float().cpu().numpy()) for k, index in crop.items()}
