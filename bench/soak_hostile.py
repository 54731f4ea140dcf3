"""Hostile uploads beside honest sessions: the honest sessions' p95 alone and while three sessions
upload a GGUF bomb, a zip bomb and a backtracking tokenizer again and again (and a fourth runs a slow upload).

    python -m bench soak_hostile        (rows of the benchmark table)
    python -m bench.soak_hostile [--sessions 2] [--requests 60] [--upload-runs worker|server|none]

Non-rendering clients, threads of this process, each doing what its script thread does in the app:
the honest sessions ask the shipped translation checkpoint through the app's gate
(:func:`bench.soak_fair.gated`); the hostile ones call ``app.services.uploads.save_upload`` with a GGUF whose
metadata array claims 2⁴⁰ items or holds 5,000,000 in bounds, and with a zip whose member lies about
its size and inflates past the cap; the third encodes 20,300 characters with an uploaded
tokenizer whose split regex backtracks (``(a|aa)+$``, past the static check) in a worker process killed
after ``TOKENIZE_S`` (in the app the uploaded model's worker tokenizes, killed at the gate's run time); a fourth asks, through the same gate as the
honest sessions, an uploaded model whose maths is legal but slow (1,024 positions, width 256, a
960-character input) again and again, run in its worker process as the app does (``--upload-runs
worker``), in the server as the app did before (``server``), or not at all (``none``). Prints the honest p50/p95 per phase, the p95 ratio (goal ≤ 2×),
each hostile session's attempts, and any upload attempt that was not refused (goal 0; the slow model's
runs are legal and are counted as answered).
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from tokenizers import Regex, Tokenizer, models, pre_tokenizers

from app import resources
from app.services import storage, uploads
from app.services.limits import Gate, OverBudget, at_low_priority
from bench.soak import p95
from bench.soak_fair import ROOT, app_gate, gated
from bench.table import Row
from core import (CheckpointError, ExplainWorker, get_task, load_checkpoint, ModelConfig, save_checkpoint,
                  TokenizerWorker, Transformer)
from core import Tokenizer as CharTokenizer

SLOW = ("a" * 28 + "b") * 700  # a tenth of a second of backtracking per run of a's
ARRAY, UINT8 = 9, 0  # GGUF value types
PACE_S = 0.1  # between one hostile attempt and the next: an upload and a script rerun take at least this
TOKENIZE_S = 5.0  # seconds each backtracking attempt holds its worker before it is killed
UPLOAD = "slow uploaded model"  # the hostile session whose runs are legal, only slow
SLOW_UPLOAD_TEXT = "the cat sat on the mat. " * 40  # 960 characters for a 1,024-position model


def gguf_array(claimed: int, held: int) -> bytes:
    """A GGUF file with one metadata array of uint8 that claims ``claimed`` items and holds ``held``."""
    key = b"general.bomb"
    field = struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", ARRAY, UINT8, claimed) + b"\0" * held
    return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + field


def zip_bomb(size: int = 3 * 2**29) -> bytes:
    """A zip of one deflated member of ``size`` zero bytes (1.5 GiB: over any upload cap) whose headers
    claim 10 bytes (its CRC is never reached: it is refused while inflating). Built from one 16 MiB
    block compressed once and repeated (a full flush makes each copy stand alone): 1.5 MB, at once."""
    compressor, chunk = zlib.compressobj(9, zlib.DEFLATED, -15), 16 << 20
    block = compressor.compress(b"\0" * chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    body = block * (size // chunk) + compressor.flush()
    name = b"model.safetensors"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, len(body), 10, len(name), 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, 0, len(body), 10, len(name),
                          0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    return local + body + central + end


def backtracking_spec() -> str:
    tokenizer = Tokenizer(models.WordLevel({"a": 0, "b": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"(a|aa)+$"), "isolated")
    return tokenizer.to_str()


def slow_upload(folder: Path) -> Path:
    """A random character language model whose maths is legal but slow (1,024 positions, width 256)."""
    chars = CharTokenizer.train("char", list(get_task("lm").examples))
    torch.manual_seed(0)
    model = Transformer(ModelConfig(architecture="decoder", tgt_vocab_size=chars.vocab_size, d_model=256, n_heads=4,
                                    d_ff=1024, n_encoder_layers=4, n_decoder_layers=4, max_len=1024)).eval()
    save_checkpoint(folder / "slow-lm.safetensors", model, {"target": chars}, task="lm")
    return folder / "slow-lm.safetensors"


def upload_attack(gate: Gate, path: Path, where: str) -> Callable[[], None]:
    """One request of the slow upload through ``gate``, as ``app.resources.explain_entry`` makes it: run in
    its worker process (``where="worker"``: the app now) or in the server (``"server"``: the app before)."""
    if where != "worker":
        loaded = load_checkpoint(path)
        return lambda: gated(gate, "hostile-upload", loaded, SLOW_UPLOAD_TEXT, resources.budgeted(loaded, {}))
    worker = ExplainWorker(path, deadline_s=gate.run_s)
    facts = worker.start()
    options = resources.budgeted(facts, {})
    return lambda: gated(gate, "hostile-upload", facts, SLOW_UPLOAD_TEXT, options, grace_s=resources.WORKER_GRACE_S,
                         run=lambda: worker.explain(SLOW_UPLOAD_TEXT, deadline_s=gate.run_s, **options))


def attacks(folder: Path) -> dict[str, Callable[[], None]]:
    """Each hostile session's one attempt (it must raise the app's one-line refusal)."""
    owner, worker = storage.new_owner(), TokenizerWorker(backtracking_spec(), deadline_s=TOKENIZE_S)
    bombs = {"gguf-claims": gguf_array(2**40, 0), "gguf-holds": gguf_array(5_000_000, 5_000_000),
             "zip": zip_bomb()}
    save = partial(at_low_priority, uploads.save_upload, folder, owner)  # as app.resources.save_upload does
    return {
        "GGUF bomb": lambda: [save(f"{name}.gguf", bombs[name]) for name in ("gguf-claims", "gguf-holds")],
        "zip bomb": lambda: save("bomb.zip", bombs["zip"]),
        "backtracking tokenizer": lambda: worker.encode(SLOW),
    }


def honest(gate: Any, ckpt: Any, sessions: int, requests: int) -> list[float]:
    """``sessions`` translation sessions, ``requests`` each, through the app's gate; their latencies (s)."""
    texts, latencies, lock = get_task("translation").examples, [], threading.Lock()

    def session(index: int) -> None:
        for n in range(requests):
            started = time.perf_counter()
            try:
                gated(gate, f"honest-{index}", ckpt, texts[(index + n) % len(texts)], {})
            except OverBudget:
                continue
            with lock:
                latencies.append(time.perf_counter() - started)
            time.sleep(0.02)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def soak_hostile(sessions: int = 2, requests: int = 60, upload_runs: str = "worker") -> dict[str, Any]:
    """Honest sessions alone, beside the hostile ones, alone again; each hostile session's counts."""
    ckpt = load_checkpoint(ROOT / "assets" / "checkpoints" / "translation.safetensors")
    honest(app_gate(), ckpt, 1, 5)  # warm-up
    before = honest(app_gate(), ckpt, sessions, requests)
    stop, counts, gate = threading.Event(), {}, app_gate()
    with tempfile.TemporaryDirectory() as folder:
        tried = attacks(Path(folder))
        if upload_runs != "none":
            tried[UPLOAD] = upload_attack(gate, slow_upload(Path(folder)), upload_runs)

        def attack(name: str) -> None:
            tally = counts[name] = {"refused": 0, "accepted": 0, "longest_s": 0.0}
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    tried[name]()
                    tally["accepted"] += 1
                except (CheckpointError, ValueError):  # OverBudget too
                    tally["refused"] += 1
                tally["longest_s"] = max(tally["longest_s"], time.perf_counter() - started)
                time.sleep(PACE_S)

        threads = [threading.Thread(target=attack, args=(name,), daemon=True) for name in tried]
        for thread in threads:
            thread.start()
        time.sleep(3.0)  # every attack under way
        loud = honest(gate, ckpt, sessions, requests)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    after = honest(app_gate(), ckpt, sessions, requests)
    return {"alone": before + after, "loud": loud, "attacks": counts}


def run() -> list[Row]:
    """The hostile-upload rows of the benchmark table (``python -m bench soak_hostile``)."""
    torch.set_num_threads(resources.THREADS)
    got = soak_hostile()
    alone, loud = p95(got["alone"]) * 1e3, p95(got["loud"]) * 1e3
    accepted = sum(t["accepted"] for name, t in got["attacks"].items() if name != UPLOAD)
    return [Row("soak", "honest p95 beside a GGUF bomb, a zip bomb and a backtracking tokenizer", "≤ 2× alone", loud,
                "ms", alone, loud <= 2 * alone),
            Row("soak", "hostile uploads not refused", "0", accepted, "", None, accepted == 0)]


def main(argv: list[str] | None = None) -> int:
    """Print the honest sessions' p50/p95 per phase, the ratio and each attack's counts."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak_hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2, help="honest sessions")
    parser.add_argument("--requests", type=int, default=60, help="requests per honest session and phase")
    parser.add_argument("--upload-runs", choices=("worker", "server", "none"), default="worker",
                        help="where the slow upload's runs go: its worker process (the app), the server, or none")
    args = parser.parse_args(argv)
    torch.set_num_threads(resources.THREADS)
    got = soak_hostile(args.sessions, args.requests, args.upload_runs)
    print("| phase | honest requests | p50 ms | p95 ms |\n|---|---|---|---|")
    for name, values in (("alone", got["alone"]), ("beside the hostile uploads", got["loud"])):
        print(f"| {name} | {len(values)} | {statistics.median(values) * 1e3:.1f} | {p95(values) * 1e3:.1f} |")
    ratio = p95(got["loud"]) / p95(got["alone"])
    print(f"\nhonest p95 beside the hostile uploads / alone: {ratio:.2f}× (goal ≤ 2×)")
    for name, tally in got["attacks"].items():
        goal = " (legal runs)" if name == UPLOAD else " (goal 0)"
        print(f"{name}: {tally['refused']} refused, {tally['accepted']} answered{goal}, "
              f"longest attempt {tally['longest_s']:.1f} s")
    return 0 if all(t["accepted"] == 0 for name, t in got["attacks"].items() if name != UPLOAD) else 1


if __name__ == "__main__":
    sys.exit(main())
