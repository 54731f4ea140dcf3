"""Pretrained families against the reference library, same run: a 32-token forward with every map.

Run: ``python -m bench.families`` (prints its table) or ``run()`` for the rows. For each case a
random model of a real model's size is built with ``transformers`` (a test/bench-only dependency),
saved as a Hugging Face folder, and measured in a fresh process: the time
:func:`core.load_pretrained` takes and the peak memory it adds, then our forward with every map
against the reference's eager forward with ``output_attentions=True``, alternated so a busy
machine slows both alike (ratio = ours ÷ reference; the goal is ≤ 1.0).
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

TOKENS = 32
#: case name → (transformers config class, its settings): random weights of the named model's size.
CASES = {
    "BERT-base (110 M)": ("BertConfig", dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                                             num_attention_heads=12, intermediate_size=3072)),
}


def _folder(case: str, root: Path) -> Path:
    """The case's random model saved as a folder with a WordPiece tokenizer.json."""
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    kind, settings = CASES[case]
    config = getattr(transformers, kind)(**settings)
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config)
    folder = root / "model"
    model.save_pretrained(folder, safe_serialization=True)
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"])}
    vocab.update({f"##{c}": len(vocab) + i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")})
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]",
                                                             special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def _peak_mb() -> float:
    """This process's peak resident memory (``VmHWM``: reset by exec, unlike ``ru_maxrss``, which a
    spawned child inherits from the parent it was forked from)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(folder: str, queue, repeats: int) -> None:
    """Child process: load the folder (time, peak memory), then alternate the two forwards."""
    torch.set_num_threads(2)
    from core import load_pretrained

    before = _peak_mb()
    tick = time.perf_counter()
    pretrained = load_pretrained(folder)
    load_s = time.perf_counter() - tick
    load_mb = _peak_mb() - before
    import transformers  # after our load, so its imports do not count in our load's memory

    reference = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.randint(5, pretrained.config.vocab_size, (1, TOKENS))  # (1, T)
    runs = {"ours": lambda: pretrained.model(ids, return_attention=True),
            "reference": lambda: reference(input_ids=ids, output_attentions=True)}
    samples = {name: [] for name in runs}
    with torch.inference_mode():
        for fn in runs.values():
            fn(), fn()  # warm-up
        for _ in range(repeats):
            for name, fn in runs.items():  # alternate, so load changes on a shared machine hit both alike
                tick = time.perf_counter()
                fn()
                samples[name].append((time.perf_counter() - tick) * 1000)
    queue.put({"load_s": load_s, "load_mb": load_mb, **{k: statistics.median(v) for k, v in samples.items()},
               "maps": pretrained.config.n_layers("encoder") * pretrained.config.n_heads})


def _case_rows(case: str, repeats: int) -> list[Row]:
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="attnscope-bench-family-") as root:
        folder = _folder(case, Path(root))  # built here, so the child's peak memory is its own
        queue = context.Queue()
        child = context.Process(target=_measure, args=(str(folder), queue, repeats))
        child.start()
        result = queue.get(timeout=900)
        child.join()
    return [
        Row("families", f"{case}: {TOKENS}-token forward, all {result['maps']} maps, vs transformers eager "
                        f"(output_attentions), 2 threads", "ratio ≤ 1.0", result["ours"], "ms", result["reference"],
            ok=result["ours"] <= result["reference"]),
        Row("families", f"{case}: load_pretrained(folder)", "—", result["load_s"] * 1000, "ms"),
        Row("families", f"{case}: peak memory added by the load (fresh process)", "—", result["load_mb"], "MB"),
    ]


def run(repeats: int = 15) -> list[Row]:
    """Rows for every case (the baseline column: the reference's forward, same process, alternated)."""
    try:
        import transformers  # noqa: F401 - the reference is optional (requirements-dev.txt)
    except ImportError:
        return []
    return [row for case in CASES for row in _case_rows(case, repeats)]


if __name__ == "__main__":
    table = run()
    sys.stdout.write((markdown(table) if table else "transformers is not installed (requirements-dev.txt).") + "\n")
