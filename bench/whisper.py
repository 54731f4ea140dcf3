"""Whisper tiny.en on a 5-second clip: log-mel features, the encoder with every map, and greedy decoding
with every map, against ``transformers`` (test-only) on the same weights in the same run.

Run: ``python -m bench.whisper`` (prints its table). Times: both contenders in one process, timed in
alternation (median of ``REPEATS`` after a warm-up), so load changes hit both alike. Peak memory and the
greedy ids: each contender alone in a fresh process (peak resident memory of that process). Ours: ``core.audio.mel.log_mel``,
``WhisperModel.encode`` with maps, ``core.greedy`` (KV cache, then one final pass with every map).
Theirs: ``WhisperFeatureExtractor``, the eager encoder with ``output_attentions=True``, and
``GenerationMixin.generate`` (greedy, KV cache) with ``output_attentions=True``, the same ids suppressed.
On a shared machine wall-clock times mostly measure the other processes: say the load with the numbers.
"""

from __future__ import annotations

import multiprocessing
import resource
import sys
from pathlib import Path

import numpy as np
import torch

from bench.table import Row, markdown, paired_ms

CLIP = Path(__file__).resolve().parents[1] / "assets" / "audio" / "the_black_cat_sleeps.flac"
SECONDS, REPEATS, NEW_TOKENS = 5.0, 5, 40


def _clip() -> np.ndarray:
    from core.audio.decode import load_audio

    samples = load_audio(CLIP.read_bytes()).samples
    return np.pad(samples, (0, int(SECONDS * 16_000) - samples.size))  # 5 s: the clip, then silence


def _ours() -> dict:
    """Our three stages as callables (and the greedy ids)."""
    from core import greedy, load_pretrained, pretrained_models
    from core.audio.mel import log_mel

    entry = next(e for e in pretrained_models("audio") if e.name == "Whisper tiny.en")
    model = load_pretrained(entry.path)
    c, samples = model.config, _clip()
    features = torch.from_numpy(log_mel(samples))[None]
    prefix = torch.tensor([[c.sot_id, c.no_timestamps_id]])

    def decode():
        return greedy(model.model, features, prefix, eos_id=c.eot_id, max_new_tokens=NEW_TOKENS).ids[0].tolist()

    return {"features": lambda: log_mel(samples), "encoder": lambda: model.model.encode(features, need_weights=True),
            "greedy": decode}


def _theirs() -> dict:
    """transformers' three stages on the same weights (mapped by the fidelity test's names)."""
    import transformers

    from core import load_pretrained, pretrained_models
    from tests.helpers.hf_whisper_reference import hf_whisper_state  # test-only code, as transformers is

    entry = next(e for e in pretrained_models("audio") if e.name == "Whisper tiny.en")
    ours = load_pretrained(entry.path)
    c, samples = ours.config, _clip()
    config = transformers.WhisperConfig(
        vocab_size=c.vocab_size, num_mel_bins=c.n_mels, d_model=c.d_model, encoder_layers=c.n_encoder_layers,
        decoder_layers=c.n_decoder_layers, encoder_attention_heads=c.n_heads, decoder_attention_heads=c.n_heads,
        encoder_ffn_dim=c.d_ff, decoder_ffn_dim=c.d_ff, max_source_positions=c.n_frames, max_target_positions=c.max_len,
        pad_token_id=c.eot_id, bos_token_id=c.eot_id, eos_token_id=c.eot_id, decoder_start_token_id=c.sot_id,
        attn_implementation="eager")
    model = transformers.WhisperForConditionalGeneration(config)
    model.load_state_dict(hf_whisper_state(ours.model), strict=False)
    model.eval()
    del ours
    extractor = transformers.WhisperFeatureExtractor(feature_size=80)
    features = torch.from_numpy(extractor(samples, sampling_rate=16_000, return_tensors="np").input_features)
    prefix = torch.tensor([[c.sot_id, c.no_timestamps_id]])
    banned = [i for i in c.never_generated if i != c.eot_id]

    def decode():
        return transformers.GenerationMixin.generate(
            model, input_features=features, decoder_input_ids=prefix, max_new_tokens=NEW_TOKENS, do_sample=False,
            num_beams=1, suppress_tokens=banned, output_attentions=True,
            return_dict_in_generate=True).sequences[0].tolist()

    return {"features": lambda: extractor(samples, sampling_rate=16_000, return_tensors="np"),
            "encoder": lambda: model.model.encoder(features, output_attentions=True), "greedy": decode}


def _child(which: str, queue) -> None:
    """One contender alone (its ids and peak memory), or both timed in alternation (``paired``)."""
    torch.set_num_threads(2)
    with torch.inference_mode():
        if which == "paired":
            ours, theirs = _ours(), _theirs()
            queue.put({stage: paired_ms(ours[stage], theirs[stage], REPEATS) for stage in ours})
            return
        stages = _ours() if which == "ours" else _theirs()
        stages["encoder"]()
        ids = stages["greedy"]()
    queue.put({"ids": ids, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})


def spawned(target, *args) -> dict:
    """What ``target(*args, queue)`` puts on its queue, run alone in a fresh process."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    result = queue.get(timeout=1800)
    process.join()
    return result


def run() -> list[Row]:
    """The table's rows (one per stage, ours vs transformers), or none when tiny.en is not installed."""
    from core import pretrained_models

    if not any(e.name == "Whisper tiny.en" for e in pretrained_models("audio")):
        return []
    times, ours, theirs = (spawned(_child, which) for which in ("paired", "ours", "theirs"))
    rows = [Row("whisper", f"tiny.en, 5 s clip: {what}", "ratio ≤ 1.0", times[stage][0], "ms", times[stage][1],
                times[stage][0] <= times[stage][1])
            for stage, what in (("features", "log-mel features"), ("encoder", "encoder with every map"),
                                ("greedy", f"greedy decoding (≤ {NEW_TOKENS} tokens) with every map"))]
    rows.append(Row("whisper", "tiny.en: peak resident memory of the process (vs transformers')", "—",
                    ours["rss_mib"], "MiB", theirs["rss_mib"]))
    rows.append(Row("whisper", f"tiny.en: greedy ids equal transformers' ({len(ours['ids'])} ids)", "equal",
                    float(ours["ids"] == theirs["ids"]), "", None, ours["ids"] == theirs["ids"]))
    return rows


if __name__ == "__main__":
    sys.stdout.write(markdown(run()) + "\n")
