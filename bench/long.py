"""Long inputs on the trace: ``python -m bench long`` (also ``python -m bench.long [T …]``).

SmolLM2-135M (30 layers × 9 heads, the installed GGUF) on T = 512, 2,048, 4,096 and 8,192 tokens. Ours is what
Explore asks for: ``core.explain`` (the fast pass recording each layer's queries and keys, every row's logits)
then one head's map (layer 15, head 1) and a max-pooled overview of one layer (:meth:`OnDemandMaps.pooled`). The
same run times, on the same ids and weights (dequantized from the same file by ``transformers``' own GGUF
loader), ``transformers``' forward with SDPA and no maps (the floor) and, where its T² maps fit this machine,
its eager forward with ``output_attentions=True``. Each contender runs in a fresh process (2 threads), so its
peak memory added (RSS sampled every 2 ms during the run, above the RSS after loading) is its own. Goals: time
≤ 1.3× the floor at every T; added memory ≤ 0.25× eager's at 2,048; 8,192 tokens run.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import threading
import time

from bench.table import Row, markdown

LENGTHS = (512, 2048, 4096, 8192)
EAGER_FITS = 2048  # eager's maps alone: 30 · 9 · T² · 4 bytes (4.5 GB at 2,048; 18 GB at 4,096)
THREADS = 2
LAYER, HEAD = 15, 1


class PeakRss:
    """The largest resident set size seen while the block runs, sampled every 2 ms (bytes)."""

    def __enter__(self) -> PeakRss:
        self.start = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())

    @property
    def added_mb(self) -> float:
        return (self.peak - self.start) / 2**20


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _ids(length: int, model=None) -> list[int]:
    """``length`` ids of English prose, as SmolLM2's tokenizer (of ``model``, else loaded) reads it."""
    from core import load_pretrained
    model = model or load_pretrained(_path())
    text = ("The animal didn't cross the street because it was too tired, and the river ran on past the town. "
            * (length // 8))
    ids = model.tokenizer.encode(text).ids[:length]
    assert len(ids) == length, f"the text gave {len(ids)} of {length} tokens"
    return ids


def _path() -> str:
    from core import pretrained_models
    return next(str(e.path) for e in pretrained_models() if e.name.startswith("SmolLM2"))


def _ours(length: int, repeats: int) -> dict:
    import torch
    from core import explain, load_pretrained
    torch.set_num_threads(THREADS)
    model = load_pretrained(_path())
    text = model.tokenizer.decode(_ids(length, model))
    explain(model, "warm up")
    times = []
    for _ in range(repeats):
        with PeakRss() as memory:
            start = time.perf_counter()
            exp = explain(model, text)
            maps = exp.attention["decoder"]
            head, overview = maps[LAYER, HEAD], maps.pooled(LAYER)
            times.append(time.perf_counter() - start)
        assert len(exp.target_tokens) >= length - 2 and head.shape[0] == len(exp.target_tokens), exp.notes
        del exp, maps, head, overview
    return {"s": statistics.median(times), "mb": memory.added_mb, "tokens": length}


def _reference(length: int, repeats: int, eager: bool) -> dict:
    import torch
    import transformers
    torch.set_num_threads(THREADS)
    path = _path()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), attn_implementation="eager" if eager else "sdpa",
        torch_dtype=torch.float32).eval()
    ids = torch.tensor([_ids(length)])
    with torch.inference_mode():
        model(ids[:, :8])
        times = []
        for _ in range(repeats):
            with PeakRss() as memory:
                start = time.perf_counter()
                out = model(ids, output_attentions=eager)
                times.append(time.perf_counter() - start)
            del out
    return {"s": statistics.median(times), "mb": memory.added_mb}


def _child(target, *args) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_serve, args=(queue, target, args))
    process.start()
    result = queue.get(timeout=3600)
    process.join()
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def _serve(queue, target, args) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    try:
        queue.put(target(*args))
    except Exception as error:  # the parent reports it as a row
        queue.put({"error": f"{type(error).__name__}: {error}"})


def run(lengths: tuple[int, ...] = LENGTHS) -> list[Row]:
    """The rows: per T, ours against the SDPA floor (time and memory), eager's where it fits."""
    try:
        import transformers  # noqa: F401  (a dev requirement: the reference)
        _path()
    except (ImportError, StopIteration):
        return [Row("long", "SmolLM2 long inputs: skipped (needs transformers and the SmolLM2 package)", "—", 0, "")]
    rows = []
    for length in lengths:
        repeats = 3 if length <= 2048 else 1
        sys.stderr.write(f"long: {length} tokens…\n")
        floor = _child(_reference, length, repeats, False)
        ours = _child(_ours, length, repeats)
        rows.append(Row("long", f"SmolLM2 {length:,} tokens: explain + one head + a pooled layer vs transformers "
                        "SDPA forward (no maps)", "≤ 1.3×", ours["s"] * 1000, "ms", floor["s"] * 1000,
                        ok=ours["s"] <= 1.3 * floor["s"]))
        rows.append(Row("long", f"SmolLM2 {length:,} tokens: peak memory added, ours vs SDPA floor", "—", ours["mb"],
                        "MB", floor["mb"]))
        if length <= EAGER_FITS:
            eager = _child(_reference, length, repeats, True)
            goal = "≤ 0.25×" if length == 2048 else "—"
            rows.append(Row("long", f"SmolLM2 {length:,} tokens: peak memory added, ours vs transformers eager "
                            "with all maps", goal, ours["mb"], "MB", eager["mb"],
                            ok=ours["mb"] <= 0.25 * eager["mb"] if length == 2048 else None))
            rows.append(Row("long", f"SmolLM2 {length:,} tokens: time, ours vs transformers eager with all maps", "—",
                            ours["s"] * 1000, "ms", eager["s"] * 1000))
    return rows


if __name__ == "__main__":
    chosen = tuple(int(a) for a in sys.argv[1:]) or LENGTHS
    sys.stdout.write(markdown(run(chosen)) + "\n")
