"""Hostile uploads beside a crowd: a victim session's p95 beside 8 busy sessions, then beside the same busy
sessions and a hostile uploader (with the other hostile sessions).

    python -m bench soak_hostile        (rows of the benchmark table)
    python -m bench.soak_hostile [--busy 8] [--requests 40] [--upload-runs worker|server|none]

Non-rendering clients, threads of this process, each doing what its script thread does in the app: the victim and
the busy sessions ask the shipped translation checkpoint through the app's gate (:func:`bench.soak_fair.gated`),
the busy ones without pause. The hostile uploader sends, through the same gate as the app does
(``app.resources.gated_upload``: one check at a time in the heavy lane, at a lower priority, the model loaded only
in a worker process at a lower priority still), again and again: a GGUF whose metadata array claims 2⁴⁰ items, one
holding 5,000,000 in bounds, a zip whose member lies about its size and inflates past the cap, and a checkpoint
whose header is valid and whose weights are corrupted (refused only once its worker process has read them). Beside
it, a session encodes 20,300 characters with an uploaded tokenizer whose split regex backtracks (``(a|aa)+$``) in a
worker process killed after ``TOKENIZE_S``, and another asks, through the gate, an uploaded model whose maths is
legal but slow (1,024 positions, width 256, a 960-character input), run in its worker process as the app does
(``--upload-runs worker``), in the server (``server``), or not at all (``none``). Prints the victim's p50/p95 alone,
beside the busy sessions (quiet) and beside them and the hostile sessions (loud), the p95 ratio loud / quiet (goal
≤ 2×), the victim's refusals (goal 0), each hostile session's attempts, any upload not refused (goal 0) and the
machine's load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Regex, Tokenizer, models, pre_tokenizers

from app import resources
from app.services import storage, uploads
from app.services.limits import Gate, OverBudget
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
UPLOADER = "hostile uploader"
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


def corrupted_checkpoint() -> bytes:
    """The shipped reverse checkpoint with one byte of its weights flipped: its header passes every check, its
    checksum fails only once a worker process has read the weights."""
    data = bytearray((ROOT / "assets" / "checkpoints" / "reverse.safetensors").read_bytes())
    data[-len(data) // 3] ^= 0xFF
    return bytes(data)


def attacks(folder: Path, gate: Gate) -> dict[str, Callable[[], None]]:
    """Each hostile session's one attempt (it must raise the app's one-line refusal): the uploader's next file,
    checked through ``gate`` as the app checks uploads."""
    owner, worker = storage.new_owner(), TokenizerWorker(backtracking_spec(), deadline_s=TOKENIZE_S)
    files = [("claims.gguf", gguf_array(2**40, 0)), ("holds.gguf", gguf_array(5_000_000, 5_000_000)),
             ("bomb.zip", zip_bomb()), ("corrupted.safetensors", corrupted_checkpoint())]
    turn = iter(range(1 << 62))

    def upload() -> None:
        name, data = files[next(turn) % len(files)]
        resources.gated_upload(gate, UPLOADER, lambda: uploads.save_upload(folder, owner, name, data))

    return {UPLOADER: upload, "backtracking tokenizer": lambda: worker.encode(SLOW)}


def crowd(gate: Any, ckpt: Any, busy: int, requests: int) -> tuple[list[float], int]:
    """The victim's latencies over ``requests`` requests while ``busy`` sessions ask the same model without
    pause, through ``gate``; and how many of the victim's requests were refused."""
    texts, latencies, refused, done = get_task("translation").examples, [], 0, threading.Event()

    def busy_session(index: int) -> None:
        for n in range(1 << 62):
            if done.is_set():
                return
            try:
                gated(gate, f"busy-{index}", ckpt, texts[(index + n) % len(texts)], {})
            except OverBudget:
                pass
            time.sleep(0.02)

    threads = [threading.Thread(target=busy_session, args=(i,), daemon=True) for i in range(busy)]
    for thread in threads:
        thread.start()
    time.sleep(0.5 if busy else 0.0)  # every busy session under way
    for n in range(requests):
        started = time.perf_counter()
        try:
            gated(gate, "victim", ckpt, texts[n % len(texts)], {})
            latencies.append(time.perf_counter() - started)
        except OverBudget:
            refused += 1
        time.sleep(0.02)
    done.set()
    for thread in threads:
        thread.join(timeout=60)
    return latencies, refused


def soak_hostile(busy: int = 8, requests: int = 40, upload_runs: str = "worker") -> dict[str, Any]:
    """The victim alone, beside ``busy`` sessions, then beside them and the hostile sessions; their counts."""
    ckpt = load_checkpoint(ROOT / "assets" / "checkpoints" / "translation.safetensors")
    crowd(app_gate(), ckpt, 0, 5)  # warm-up
    load = {"before": os.getloadavg()[0]}
    alone, _ = crowd(app_gate(), ckpt, 0, requests)
    quiet, quiet_refused = crowd(app_gate(), ckpt, busy, requests)
    stop, counts, gate = threading.Event(), {}, app_gate()
    with tempfile.TemporaryDirectory() as folder:
        tried = attacks(Path(folder), gate)
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
        loud, loud_refused = crowd(gate, ckpt, busy, requests)
        load["during"] = os.getloadavg()[0]
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    return {"alone": alone, "quiet": quiet, "loud": loud, "refused": quiet_refused + loud_refused,
            "attacks": counts, "busy": busy, "load": load}


def run() -> list[Row]:
    """The hostile-upload rows of the benchmark table (``python -m bench soak_hostile``)."""
    torch.set_num_threads(resources.THREADS)
    got = soak_hostile()
    quiet, loud = p95(got["quiet"]) * 1e3, p95(got["loud"]) * 1e3
    accepted = sum(t["accepted"] for name, t in got["attacks"].items() if name != UPLOAD)
    return [Row("soak", f"victim p95 beside {got['busy']} busy sessions and a hostile uploader", "≤ 2× without the "
                "uploader", loud, "ms", quiet, loud <= 2 * quiet),
            Row("soak", "victim requests refused", "0", got["refused"], "", None, got["refused"] == 0),
            Row("soak", "hostile uploads not refused", "0", accepted, "", None, accepted == 0)]


def main(argv: list[str] | None = None) -> int:
    """Print the victim's p50/p95 per phase, the ratio, each attack's counts and the machine's load."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak_hostile", description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=8, help="busy sessions beside the victim")
    parser.add_argument("--requests", type=int, default=40, help="victim requests per phase")
    parser.add_argument("--upload-runs", choices=("worker", "server", "none"), default="worker",
                        help="where the slow upload's runs go: its worker process (the app), the server, or none")
    args = parser.parse_args(argv)
    torch.set_num_threads(resources.THREADS)
    got = soak_hostile(args.busy, args.requests, args.upload_runs)
    print("| phase | victim requests | p50 ms | p95 ms |\n|---|---|---|---|")
    for name, values in (("alone", got["alone"]), (f"beside {got['busy']} busy sessions (quiet)", got["quiet"]),
                         ("beside them and the hostile sessions (loud)", got["loud"])):
        print(f"| {name} | {len(values)} | {statistics.median(values) * 1e3:.1f} | {p95(values) * 1e3:.1f} |")
    ratio = p95(got["loud"]) / p95(got["quiet"])
    print(f"\nvictim p95 loud / quiet: {ratio:.2f}× (goal ≤ 2×); victim requests refused: {got['refused']} (goal 0)")
    for name, tally in got["attacks"].items():
        goal = " (legal runs)" if name == UPLOAD else " (goal 0)"
        print(f"{name}: {tally['refused']} refused, {tally['accepted']} answered{goal}, "
              f"longest attempt {tally['longest_s']:.1f} s")
    print(f"load average (1 min): {got['load']['before']:.2f} before, {got['load']['during']:.2f} during the loud "
          f"phase; {os.cpu_count()} CPUs")
    return 0 if all(t["accepted"] == 0 for name, t in got["attacks"].items() if name != UPLOAD) else 1


if __name__ == "__main__":
    sys.exit(main())
