"""Big models on a laptop, against ``transformers`` in the same run: random weights in folders this bench writes.

Run: ``python -m bench big`` (part of ``python -m bench``). Rows:

* **Llama-3.2-1B-shaped bf16 folder** (Llama 3.2 1B's 16 layers, d2048, 32 query / 8 key-value heads, FFN
  8192, with the small bench tokenizer's vocabulary: 0.97 B parameters, 1.9 GB): load time against
  ``transformers``' ``from_pretrained`` (goal ≤ 1.2×), the load's peak resident memory against the file size
  (goal ≤ 1.3×), and ``core.explain`` of 512 tokens with every map against ``transformers``' SDPA forward of
  the same ids (goal ≤ 1.3×). Each load is timed in a fresh process (ours, theirs, ours, theirs; the median),
  the forwards alternate in one process.
* **Qwen2.5-7B-shaped bf16 folder** (about 15 GB): written, loaded and explained on 128 tokens only where the
  disk and the memory available hold it with room to spare; otherwise one row says why it was skipped.
* **Q4_K_M GGUF of the 1 B shape** (Q4_K weights, Q6_K for the value and down projections and the
  embedding, as llama.cpp's Q4_K_M mix; random blocks, since the ``gguf`` package cannot quantize K-quants):
  our load and explain of 128 tokens against ``transformers`` reading the same file.

The CPU threads are ``OMP_NUM_THREADS`` (default: all), the same for both sides.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from queue import Empty
from pathlib import Path

import torch

from bench.table import Row, markdown

QWEN_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, max_position_embeddings=4096, rope_theta=1000000.0, tie_word_embeddings=False,
               bos_token_id=1, eos_token_id=2)
EXPLAIN_TOKENS, SMALL_TOKENS = 512, 128
_SPAWN = multiprocessing.get_context("spawn")


def _memory_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak) of this process in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _threads() -> int:
    return int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)


def _write_llama_folder(folder: str, shape: dict, queue) -> None:
    """Child: a random Llama folder of ``shape`` (bf16 safetensors) with the small bench tokenizer."""
    import transformers

    from bench.families_decoders import small_byte_bpe

    tokenizer = small_byte_bpe()
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)  # built in bf16: no float32 copy of billions of weights
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), **shape)
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save(str(Path(folder) / "tokenizer.json"))
    queue.put({})


def _normal(*size: int) -> torch.Tensor:
    return torch.randn(*size, dtype=torch.bfloat16).mul_(0.02)


def _layer_tensors(config, i: int) -> dict[str, torch.Tensor]:
    """Layer ``i`` of a random Llama of ``config`` under transformers' names: weights N(0, 0.02²), norms 1."""
    d, ff, head = config.hidden_size, config.intermediate_size, config.hidden_size // config.num_attention_heads
    q, kv = config.num_attention_heads * head, config.num_key_value_heads * head
    sizes = {"self_attn.q_proj": (q, d), "self_attn.k_proj": (kv, d), "self_attn.v_proj": (kv, d),
             "self_attn.o_proj": (d, q), "mlp.gate_proj": (ff, d), "mlp.up_proj": (ff, d), "mlp.down_proj": (d, ff)}
    tensors = {f"model.layers.{i}.{name}.weight": _normal(*size) for name, size in sizes.items()}
    tensors.update({f"model.layers.{i}.{norm}.weight": torch.ones(d, dtype=torch.bfloat16)
                    for norm in ("input_layernorm", "post_attention_layernorm")})
    return tensors


def _write_sharded_llama(folder: str, shape: dict, queue) -> None:
    """Child: a random Llama folder of ``shape`` written one layer per bf16 safetensors shard (with the index
    ``from_pretrained`` reads), so that writing it holds one layer in memory, not the whole model (a 7 B model
    built by ``transformers`` would take 15 GB of this shared machine's memory)."""
    from safetensors.torch import save_file
    import transformers

    from bench.families_decoders import small_byte_bpe

    out, tokenizer = Path(folder), small_byte_bpe()
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), torch_dtype="bfloat16", **shape)
    config.save_pretrained(out)
    tokenizer.save(str(out / "tokenizer.json"))
    torch.manual_seed(0)
    d, layers = config.hidden_size, config.num_hidden_layers
    outer = lambda: {"model.embed_tokens.weight": _normal(config.vocab_size, d),  # noqa: E731
                     "lm_head.weight": _normal(config.vocab_size, d),
                     "model.norm.weight": torch.ones(d, dtype=torch.bfloat16)}
    weight_map, total = {}, 0
    for index, make in enumerate([outer, *(lambda i=i: _layer_tensors(config, i) for i in range(layers))]):
        tensors = make()
        file = f"model-{index + 1:05d}-of-{layers + 1:05d}.safetensors"
        save_file(tensors, str(out / file), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(tensors, file))
        total += sum(t.numel() * t.element_size() for t in tensors.values())
    index_file = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index_file))
    queue.put({})


def _load_child(path: str, who: str, gguf_file: str, queue) -> None:
    """Child: one load, timed, with the peak resident memory it added; then the first run of
    :data:`SMALL_TOKENS` tokens (ours: ``core.explain`` with every map, its weights' finite check included;
    theirs: the SDPA forward), timed, with the peak the load and that run added."""
    torch.set_num_threads(_threads())
    if who == "ours":
        from core import explain, load_pretrained
    else:  # the modules from_pretrained would import lazily, imported before the clock starts (as core's are)
        import transformers
        import transformers.modeling_gguf_pytorch_utils  # noqa: F401
        transformers.LlamaForCausalLM  # noqa: B018
    before = _memory_mb("VmRSS")
    start = time.perf_counter()
    if who == "ours":
        model = load_pretrained(Path(path) / gguf_file if gguf_file else path, use_cache=False)
    else:
        options = {"gguf_file": gguf_file} if gguf_file else {}
        model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa", **options)
    loaded, loaded_peak = time.perf_counter(), _memory_mb("VmHWM") - before
    if who == "ours":
        explain(model, _text_of(model.tokenizer, SMALL_TOKENS))
    else:
        with torch.inference_mode():
            model(torch.randint(0, model.config.vocab_size, (1, SMALL_TOKENS)))  # (1, T): its cost is T's
    queue.put({"s": loaded - start, "peak_mb": loaded_peak, "first_s": time.perf_counter() - loaded,
               "first_peak_mb": _memory_mb("VmHWM") - before})


def _forward_child(path: str, gguf_file: str, tokens: int, repeats: int, queue) -> None:
    """Child: ``core.explain`` (every map) and transformers' SDPA forward on the same ids, alternated."""
    torch.set_num_threads(_threads())
    import transformers

    from core import explain, load_pretrained

    ours = load_pretrained(Path(path) / gguf_file if gguf_file else path, use_cache=False)
    options = {"gguf_file": gguf_file} if gguf_file else {}
    theirs = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa", **options).eval()
    text = _text_of(ours.tokenizer, tokens)
    ids = torch.tensor([ours.tokenizer.encode(text).ids])  # (1, T)
    ours_s, theirs_s = [], []
    with torch.inference_mode():
        for i in range(repeats + 1):  # the first pair warms up
            start = time.perf_counter()
            result = explain(ours, text)
            mid = time.perf_counter()
            theirs(ids)
            end = time.perf_counter()
            if i:
                ours_s.append(mid - start)
                theirs_s.append(end - mid)
    maps = result.attention["decoder"]  # (L, H, T, T)
    queue.put({"ours_s": statistics.median(ours_s), "theirs_s": statistics.median(theirs_s),
               "tokens": int(ids.shape[1]), "maps": tuple(maps.shape)})


def _text_of(tokenizer, tokens: int) -> str:
    """The bench sentence repeated to about ``tokens`` tokens."""
    words = "The animal didn't cross the street because it was too tired.".split()
    text, i = "", 0
    while len(tokenizer.encode(text).ids) < tokens:
        text, i = f"{text} {words[i % len(words)]}".strip(), i + 1
    return text


def _child(target, *args) -> dict:
    """Run ``target(*args, queue)`` in a fresh process and return what it put."""
    queue = _SPAWN.Queue()
    process = _SPAWN.Process(target=target, args=(*args, queue))
    process.start()
    while True:  # a child that fails (its traceback on stderr) ends without an answer: never wait for it forever
        try:
            result = queue.get(timeout=5)
            break
        except Empty:
            if not process.is_alive():
                raise RuntimeError(f"{target.__name__} ended without an answer (exit code {process.exitcode})")
    process.join()
    return result


def _file_bytes(folder: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.endswith(suffix))


def _load_rows(name: str, path: Path, gguf_file: str, size: int) -> list[Row]:
    """Load time (median of two fresh processes each, alternated) and the peak memory it adds: a folder's
    against its file (goal ≤ 1.3×), a GGUF's (dequantized to float32) against transformers' on the same file."""
    loads = {"ours": [], "theirs": []}
    for _ in range(2):
        for who in loads:
            loads[who].append(_child(_load_child, str(path), who, gguf_file))
    ours_s = statistics.median(r["s"] for r in loads["ours"])
    theirs_s = statistics.median(r["s"] for r in loads["theirs"])
    peak = max(r["peak_mb"] for r in loads["ours"]) * 2**20
    theirs_peak = max(r["peak_mb"] for r in loads["theirs"]) * 2**20
    load = Row("big", f"{name}: load (baseline: transformers from_pretrained)", "≤ 1.2×", ours_s * 1000, "ms",
               theirs_s * 1000, ok=ours_s <= 1.2 * theirs_s)
    first = {who: statistics.median(r["s"] + r["first_s"] for r in runs) for who, runs in loads.items()}
    first_peak = {who: max(r["first_peak_mb"] for r in runs) for who, runs in loads.items()}
    load = [load, Row("big", f"{name}: load and first run of {SMALL_TOKENS} tokens, fresh process (ours: explain, "
                      "every map, the weights' finite check included; baseline: transformers' load and SDPA "
                      f"forward); peak memory then {first_peak['ours'] / 1024:.2f} GiB against transformers' "
                      f"{first_peak['theirs'] / 1024:.2f} GiB", "report", first["ours"] * 1000, "ms",
                      first["theirs"] * 1000)]
    if gguf_file:
        return [*load, Row("big", f"{name}: peak memory the load adds, float32 after dequantizing (baseline: "
                          f"transformers on the same file; the file: {size / 1e9:.2f} GB)", "report", peak / 2**20,
                          "MB", theirs_peak / 2**20)]
    return [*load, Row("big", f"{name}: peak memory the load adds (baseline: the file, {size / 1e9:.2f} GB; "
                      f"transformers adds {theirs_peak / 1e9:.2f} GB before its first forward)", "≤ 1.3×",
                      peak / 2**20, "MB", size / 2**20, ok=peak <= 1.3 * size)]


def llama_1b_rows(root: Path) -> list[Row]:
    """The 1 B bf16 folder's rows (it is left in ``root/llama-1b`` for the GGUF row)."""
    from bench.gpu import LLAMA_1B

    folder = root / "llama-1b"
    if not (folder / "config.json").is_file():
        _child(_write_llama_folder, str(folder), LLAMA_1B)
    size = _file_bytes(folder, ".safetensors")
    name = "Llama-3.2-1B-shaped bf16 folder (0.97 B parameters)"
    rows = _load_rows(name, folder, "", size)
    forward = _child(_forward_child, str(folder), "", EXPLAIN_TOKENS, 2)
    rows.append(Row("big", f"{name}: explain {forward['tokens']} tokens, every map {forward['maps'][:2]} "
                    f"({_threads()} threads; baseline: transformers SDPA forward, no maps)", "≤ 1.3×",
                    forward["ours_s"] * 1000, "ms", forward["theirs_s"] * 1000,
                    ok=forward["ours_s"] <= 1.3 * forward["theirs_s"]))
    return rows


def qwen_7b_rows(root: Path) -> list[Row]:
    """The 7 B row where this machine holds it (file and model at once, with room to spare), else why not."""
    from core.io.pretrained.memory import available_bytes

    parameters = 6.5e9  # Qwen2.5-7B's layers; the bench tokenizer's vocabulary instead of its 152,064 tokens
    # the weights are memory maps of the file (the page cache, shared by ours and transformers' model): the file
    # once with a tenth to spare, and room for the activations
    need_disk, need_memory = 2 * parameters * 1.1, 2 * parameters * 1.1 + 2 * 2**30
    free_disk, free_memory = shutil.disk_usage(root).free, available_bytes()
    if free_disk < need_disk or free_memory < need_memory:
        return [Row("big", f"Qwen2.5-7B-shaped bf16 folder (15 GB): skipped, this machine has "
                    f"{free_disk / 1e9:.0f} GB of disk and {free_memory / 1e9:.1f} GB of memory available; it "
                    f"needs {need_disk / 1e9:.0f} GB and {need_memory / 1e9:.1f} GB", "report", float("nan"), "—")]
    folder = root / "qwen-7b"
    _child(_write_sharded_llama, str(folder), QWEN_7B)
    size = _file_bytes(folder, ".safetensors")
    name = "Qwen2.5-7B-shaped bf16 folder"
    load = _child(_load_child, str(folder), "ours", "")
    forward = _child(_forward_child, str(folder), "", SMALL_TOKENS, 1)
    shutil.rmtree(folder)
    return [Row("big", f"{name}: load, peak memory added {load['peak_mb'] / 1024:.1f} GiB for a "
                f"{size / 2**30:.1f} GiB file", "report", load["s"] * 1000, "ms"),
            Row("big", f"{name}: load and first explain of {SMALL_TOKENS} tokens in a fresh process (the weights' "
                f"finite check included), peak memory then {load['first_peak_mb'] / 1024:.1f} GiB", "report",
                (load["s"] + load["first_s"]) * 1000, "ms"),
            Row("big", f"{name}: explain {forward['tokens']} tokens (baseline: transformers SDPA)", "report",
                forward["ours_s"] * 1000, "ms", forward["theirs_s"] * 1000)]


def _write_q4_k_m(folder: str, target: str, queue) -> None:
    """Child: the 1 B folder's shape as a GGUF of random Q4_K / Q6_K blocks (llama.cpp's Q4_K_M mix)."""
    import gguf
    import numpy as np
    import transformers
    from tokenizers import Tokenizer

    from tests.helpers.gguf_from_hf import crafted_blocks
    from tests.helpers.pretrained_files import gguf_writer

    folder = Path(folder)

    config = transformers.AutoConfig.from_pretrained(folder)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    head_dim = config.hidden_size // config.num_attention_heads
    writer = gguf_writer(target, "llama", "random-1b", context=config.max_position_embeddings,
                         width=config.hidden_size, layers=config.num_hidden_layers, ffn=config.intermediate_size,
                         heads=config.num_attention_heads, kv_heads=config.num_key_value_heads,
                         rope_base=float(config.rope_parameters["rope_theta"]), head_dim=head_dim, eps=1e-5)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list([t for t, _ in vocab])
    writer.add_token_types([1] * len(vocab))
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    d, ff, kv = config.hidden_size, config.intermediate_size, config.num_key_value_heads * head_dim
    shapes = {"token_embd.weight": (len(vocab), d)}
    for i in range(config.num_hidden_layers):
        shapes.update({f"blk.{i}.attn_q.weight": (d, d), f"blk.{i}.attn_k.weight": (kv, d),
                       f"blk.{i}.attn_v.weight": (kv, d), f"blk.{i}.attn_output.weight": (d, d),
                       f"blk.{i}.ffn_gate.weight": (ff, d), f"blk.{i}.ffn_up.weight": (ff, d),
                       f"blk.{i}.ffn_down.weight": (d, ff)})
    seed = 0
    for name, shape in shapes.items():
        kind = "Q6_K" if name.endswith(("attn_v.weight", "ffn_down.weight", "token_embd.weight")) else "Q4_K"
        writer.add_tensor(name, crafted_blocks(kind, *shape, seed=seed), raw_dtype=gguf.GGMLQuantizationType[kind])
        seed += 1
        if name.endswith("ffn_down.weight"):
            i = name.split(".")[1]
            for norm in ("attn_norm", "ffn_norm"):
                writer.add_tensor(f"blk.{i}.{norm}.weight", np.ones(d, dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(d, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    queue.put({})


def gguf_rows(root: Path) -> list[Row]:
    """The Q4_K_M GGUF of the 1 B shape: our load and explain against transformers reading the same file."""
    folder, name = root / "llama-1b", "Llama-3.2-1B-shaped Q4_K_M GGUF"
    gguf_folder = root / "gguf"
    gguf_folder.mkdir(exist_ok=True)
    target = gguf_folder / "random-1b.Q4_K_M.gguf"
    _child(_write_q4_k_m, str(folder), str(target))
    rows = _load_rows(name, gguf_folder, target.name, target.stat().st_size)
    forward = _child(_forward_child, str(gguf_folder), target.name, SMALL_TOKENS, 1)
    rows.append(Row("big", f"{name}: explain {forward['tokens']} tokens, every map (baseline: transformers, same "
                    "file, SDPA)", "report", forward["ours_s"] * 1000, "ms", forward["theirs_s"] * 1000))
    return rows


def _guarded(build, root: Path) -> list[Row]:
    try:
        return build(root)
    except Exception as error:  # noqa: BLE001 - one part's failure is a row, the others still run
        return [Row("big", f"{build.__name__} failed: {type(error).__name__}: {error}", "—", float("nan"), "—")]


PARTS = ("1b", "7b", "gguf")


def run(parts: tuple[str, ...] = PARTS) -> list[Row]:
    """The rows of ``parts`` (``1b``, ``7b``, ``gguf``; the GGUF one reuses the 1 B folder's shape)."""
    builders = {"1b": llama_1b_rows, "7b": qwen_7b_rows, "gguf": gguf_rows}
    with tempfile.TemporaryDirectory(prefix="attnscope-big-") as tmp:  # $TMPDIR: a disk that holds 15 GB
        root = Path(tmp)
        rows = []
        for part in parts:
            if part == "gguf" and not (root / "llama-1b" / "config.json").is_file():
                from bench.gpu import LLAMA_1B

                _child(_write_llama_folder, str(root / "llama-1b"), LLAMA_1B)
            rows.extend(_guarded(builders[part], root))
        return rows


if __name__ == "__main__":
    import sys

    print(markdown(run(tuple(sys.argv[1:]) or ("1b", "7b", "gguf"))))
