"""Whisper base against the app's run gate: ``explain_speech`` as the Speech page calls it (the 5 s Spanish
clip translated, at most 8 s of audio and 64 new tokens, every map), greedy and beam search (4 beams),
with the app's intra-op threads (2) and with one.

Run: ``python -m bench.whisper_gate`` (prints its table). Each figure comes from a fresh process (the
model loaded there, not timed): wall-clock seconds against the gate's ``RUN_S`` (60 s), the process's
CPU seconds beside it, and the load average when it ran. On a shared machine wall-clock time mostly
measures the other processes; CPU time does not, except that idle intra-op threads spin (CPU time then
grows with the load too).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bench.table import Row, markdown
from bench.whisper import spawned

CLIP = Path(__file__).resolve().parents[1] / "assets" / "audio" / "yo_tengo_gatos.flac"
GATE_S = 60.0  # app.resources.RUN_S (bench does not import the app)
OPTIONS = {"task": "translate", "language": "es", "max_seconds": 8.0, "max_new_tokens": 64}


def _child(decoding: str, threads: int, queue) -> None:
    import torch

    from core import explain_speech, load_pretrained, pretrained_models

    torch.set_num_threads(threads)
    entry = next(e for e in pretrained_models("audio") if e.name == "Whisper base")
    model = load_pretrained(entry.path)
    wall, cpu = time.perf_counter(), time.process_time()
    result = explain_speech(model, CLIP, decoding=decoding, **OPTIONS)
    queue.put({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "load": os.getloadavg()[0],
               "text": result.prediction.text})


def run() -> list[Row]:
    """Wall and CPU seconds per (decoding, threads), or no rows when Whisper base is not installed."""
    from core import pretrained_models

    if not any(e.name == "Whisper base" for e in pretrained_models("audio")):
        return []
    rows = []
    for decoding in ("greedy", "beam"):
        for threads in (2, 1):
            got = spawned(_child, decoding, threads)
            what = f"base, 5 s Spanish clip translated, {decoding}, {threads} thread(s), load {got['load']:.1f}"
            rows.append(Row("whisper-gate", f"{what}: wall", f"≤ {GATE_S:g} s", got["wall"], "s", None,
                            got["wall"] <= GATE_S))
            rows.append(Row("whisper-gate", f"{what}: CPU ({got['text']!r})", "—", got["cpu"], "s"))
    return rows


if __name__ == "__main__":
    sys.stdout.write(markdown(run()) + "\n")
