"""Decoder families as Hugging Face folders: GPT-2-small-sized random weights (124 M parameters).

Run: ``python -m bench.families_decoders`` (prints its table) or ``run()`` for the rows. The folder
is written by ``transformers`` (safetensors) with a byte-level BPE tokenizer.json; a fresh process
then loads it with :func:`core.load_pretrained` (load time and peak memory) and times a 32-token
forward with every map against the reference library's eager forward with ``output_attentions=True``,
in the same process, alternating, on one pinned thread (goal: ratio ≤ 1.0). ``transformers`` is a
test-only dependency: without it the section is skipped with one line.
"""

from __future__ import annotations

import importlib.util
import logging
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.table import Row, markdown, paired_ms

log = logging.getLogger(__name__)
TOKENS = 32
THREADS = 1


def small_byte_bpe():
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on one sentence (about 300 tokens): enough to feed a
    random model real ids."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(["The animal didn't cross the street because it was too tired."] * 8, trainer)
    return tokenizer


def _write_folder(folder: Path) -> None:
    """A random GPT-2-small folder (config.json, model.safetensors, tokenizer.json)."""
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config())  # 124 M parameters, vocabulary 50257
    model.save_pretrained(folder, safe_serialization=True)
    small_byte_bpe().save(str(folder / "tokenizer.json"))


def _measure(folder: str, queue, repeats: int) -> None:
    """Child process: load time and peak memory, then the paired forward timings."""
    torch.set_num_threads(THREADS)
    from core import load_pretrained

    start = time.perf_counter()
    loaded = load_pretrained(folder)
    load_s = time.perf_counter() - start
    load_peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import transformers

    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    text = "The animal didn't cross the street because it was too tired. " * 8
    ids = torch.tensor([loaded.tokenizer.encode(text).ids[:TOKENS]])  # (1, 32)
    def ours():
        return loaded.model(None, ids, return_attention=True)

    def theirs():
        return reference(ids, output_attentions=True)

    with torch.inference_mode():
        maps, reference_maps = ours().attention["decoder"], theirs().attentions  # (L, 1, H, T, T), L × (1, H, T, T)
        error = max(float((maps[i] - a).abs().max()) for i, a in enumerate(reference_maps))
        ours_ms, theirs_ms = paired_ms(ours, theirs, repeats)
        ours_cpu, theirs_cpu = paired_ms(ours, theirs, repeats, clock=time.process_time)
    queue.put({"load_s": load_s, "load_peak_mb": load_peak_mb, "ours_ms": ours_ms, "theirs_ms": theirs_ms,
               "ours_cpu": ours_cpu, "theirs_cpu": theirs_cpu, "map_error": error,
               "maps": len(reference_maps) * reference_maps[0].shape[1]})


def run(repeats: int = 15) -> list[Row]:
    """Rows for the GPT-2-small folder (baseline column: transformers eager, same process)."""
    if importlib.util.find_spec("transformers") is None:
        log.warning("transformers is not installed: the decoder families benchmark is skipped")
        return []
    with tempfile.TemporaryDirectory(prefix="attnscope-bench-gpt2-") as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        _write_folder(folder)
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        child = context.Process(target=_measure, args=(str(folder), queue, repeats))
        child.start()
        m = queue.get(timeout=900)
        child.join()
    load = os.getloadavg()[0]
    name = f"GPT-2 124M folder ({THREADS} thread, load average {load:.1f})"
    return [
        Row("families", f"{name}: {TOKENS}-token forward, all {m['maps']} maps (max map diff {m['map_error']:.1e})",
            "≤ 1.0× transformers eager", m["ours_ms"], "ms", m["theirs_ms"], ok=m["ours_ms"] <= m["theirs_ms"]),
        Row("families", f"{name}: same forward, CPU time (robust to a busy machine)", "≤ 1.0× transformers eager",
            m["ours_cpu"], "ms", m["theirs_cpu"], ok=m["ours_cpu"] <= m["theirs_cpu"]),
        Row("families", f"{name}: load (config, safetensors, tokenizer → model)", "—", m["load_s"] * 1000, "ms"),
        Row("families", f"{name}: process peak memory after the load", "—", m["load_peak_mb"], "MB"),
    ]


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    table = run()
    sys.stdout.write((markdown(table) if table else "Skipped: transformers is not installed.") + "\n")
