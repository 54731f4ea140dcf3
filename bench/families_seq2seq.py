"""A Marian-sized encoder-decoder: greedy decoding with every map, ours against ``transformers``.

Run: ``python -m bench.families_seq2seq`` (prints its table; needs the test-only ``transformers``).
A random Marian of opus-mt's size (6 + 6 layers, D 512, 8 heads, F 2048, 58 101 tokens) is saved as a
Hugging Face folder and opened with :func:`core.load_pretrained`. Both sides decode the same 20-token
input greedily for 20 tokens and return every encoder, decoder and cross map: ours with
:func:`core.generate.decode.greedy` (KV cache, then one pass with the maps), the reference with
``generate(output_attentions=True, return_dict_in_generate=True)`` in eager attention. Timings
alternate in one process on one thread (load on a shared machine hits both alike); peak memory is each
side's alone, loaded and decoding in a fresh process (peak resident set).
"""

from __future__ import annotations

import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.table import Row, markdown

SIZES = dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
             decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048, max_position_embeddings=512)
SOURCE_TOKENS, NEW_TOKENS, GOAL_RATIO = 20, 20, 1.0


def write_folder(folder: Path) -> None:
    """Save a random Marian of opus-mt's size (seeded) with a word-level tokenizer.json."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    pad = SIZES["vocab_size"] - 1
    config = transformers.MarianConfig(pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                                       forced_eos_token_id=None, bad_words_ids=[[pad]], scale_embedding=True,
                                       attn_implementation="eager", **SIZES)
    torch.manual_seed(0)
    transformers.MarianMTModel(config).eval().save_pretrained(folder, safe_serialization=True)
    words = [f"w{i}" for i in range(SIZES["vocab_size"] - 3)]
    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(["</s>", "<unk>", *words, "<pad>"])},
                                     unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 0)])
    tok.save(str(folder / "tokenizer.json"))


def _source(ours) -> torch.Tensor:
    text = " ".join(f"w{17 * i + 5}" for i in range(SOURCE_TOKENS - 1))
    return torch.tensor([ours.tokenizer.encode(text).ids])  # (1, 20) with </s>


def _ours(folder: Path):
    """Ours: a callable decoding the 20-token input greedily with every map."""
    from core import load_pretrained
    from core.generate import decode

    ours = load_pretrained(folder)
    src, c = _source(ours), ours.model.config
    prefix = torch.tensor([[c.decoder_start_id]])
    return lambda: decode.greedy(ours.model, src, prefix, eos_id=c.eos_id, max_new_tokens=NEW_TOKENS).ids


def _reference(folder: Path, src: torch.Tensor):
    """The reference: ``generate`` in eager attention returning every map."""
    import transformers

    reference = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()

    def run_reference():
        with torch.inference_mode():
            out = reference.generate(src, do_sample=False, num_beams=1, max_new_tokens=NEW_TOKENS,
                                     output_attentions=True, return_dict_in_generate=True)
        return out.sequences

    return run_reference


def _peak(folder: str, side: str, src: list[int], queue) -> None:
    """Child process: peak resident set (MB) of loading ``side`` alone and decoding three times."""
    torch.set_num_threads(1)
    fn = _ours(Path(folder)) if side == "ours" else _reference(Path(folder), torch.tensor([src]))
    for _ in range(3):
        fn()
    queue.put(_high_water_mb())


def _high_water_mb() -> float:
    """This process's peak resident set in MB: Linux's VmHWM (``ru_maxrss`` would carry the parent's
    peak across the spawn's exec), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _peak_mb(folder: Path, side: str, src: list[int]) -> float:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_peak, args=(str(folder), side, src, queue))
    child.start()
    result = queue.get(timeout=600)
    child.join()
    return result


def run(repeats: int = 3) -> list[Row]:
    """The rows: greedy decoding with every map, ours vs reference (one-thread CPU ms as the goal, wall ms
    beside it: on a shared machine wall time mostly measures the other processes), and peak memory of each."""
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "marian-sized"
        write_folder(folder)
        from core import load_pretrained

        src = _source(load_pretrained(folder))
        run_ours, run_reference = _ours(folder), _reference(folder, src)
        same = run_ours()[0].tolist() == run_reference()[0].tolist()
        wall: dict[str, list[float]] = {"ours": [], "reference": []}
        cpu: dict[str, list[float]] = {"ours": [], "reference": []}
        for _ in range(repeats):
            for side, fn in (("ours", run_ours), ("reference", run_reference)):  # alternate: load hits both
                tick, cpu_tick = time.perf_counter(), time.process_time()
                fn()
                wall[side].append((time.perf_counter() - tick) * 1000)
                cpu[side].append((time.process_time() - cpu_tick) * 1000)
        peaks = {side: _peak_mb(folder, side, src[0].tolist()) for side in ("ours", "reference")}
    med = {k: statistics.median(v) for k, v in (("cpu_ours", cpu["ours"]), ("cpu_ref", cpu["reference"]),
                                                ("wall_ours", wall["ours"]), ("wall_ref", wall["reference"]))}
    what = f"Marian-sized greedy, {SOURCE_TOKENS} in → {NEW_TOKENS} out, every map (same tokens: {same})"
    return [
        Row("seq2seq", what + ", CPU time, 1 thread", f"ratio ≤ {GOAL_RATIO}", med["cpu_ours"], "ms",
            med["cpu_ref"], ok=same and med["cpu_ours"] <= GOAL_RATIO * med["cpu_ref"]),
        Row("seq2seq", what + ", wall time", "report", med["wall_ours"], "ms", med["wall_ref"]),
        Row("seq2seq", "peak resident memory, load + decode (fresh process), ours vs reference", "report",
            peaks["ours"], "MB", peaks["reference"]),
    ]


if __name__ == "__main__":
    sys.stdout.write(markdown(run()) + "\n")
