"""The GPU table: ``explain`` on the GPU against the CPU in the same run, the long-input goal on the GPU,
the largest pretrained family the app opens, and training tokens/s and MFU (``bench.gpu_training``).

Run: ``python -m bench gpu`` (part of ``python -m bench``; without CUDA it prints one line saying so and
measures nothing). Each explain row is the median of alternating GPU and CPU calls on the same input
(the CPU on one thread, as the app's explain rows are measured); every GPU timing ends with the maps back
in host memory, which is what the app draws from.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path

import torch

from bench import gpu_training
from bench.inference import _text_of, SHIPPED
from bench.table import median_ms, paired_ms, Row

log = logging.getLogger(__name__)
REPEATS = 15
# About the largest model the app opens (its budget: 2^30 parameters, 4 GiB as float32): Llama 3.2 1B's layers
# (16 layers, d2048, 32 query and 8 key/value heads, FFN 8192; 0.97 B parameters) with the small test
# tokenizer's vocabulary (a random model's predictions must be tokens the tokenizer can name), random weights
# written in bf16 as a Hugging Face folder by transformers (a test-only library).
LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=4096, rope_theta=500000.0,
                tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)


def explain_rows(repeats: int = REPEATS) -> list[Row]:
    """``explain`` of each shipped checkpoint (32 tokens, every map, greedy decoding), GPU against CPU."""
    from core import explain, load_checkpoint

    rows = []
    for path in SHIPPED:
        on_cpu, on_gpu = load_checkpoint(path, "cpu"), load_checkpoint(path, "cuda")
        tokenizer = on_cpu.source_tokenizer or on_cpu.target_tokenizer
        text = _text_of(tokenizer, 32 - (1 if on_cpu.config.architecture == "decoder" else 0))
        gpu_ms, cpu_ms = paired_ms(lambda: explain(on_gpu, text), lambda: explain(on_cpu, text), repeats)
        rows.append(Row("gpu", f"explain {path.stem}, 32 tokens, every map (baseline: CPU, 1 thread)",
                        "report", gpu_ms, "ms", cpu_ms))
    return rows


def long_input_rows(length: int = 2048) -> list[Row]:
    """The 2,048-token goal where it was meant to be met: a 6-layer, 8-head, d512 decoder with every map."""
    from core import ModelConfig, Transformer

    config = ModelConfig(architecture="decoder", tgt_vocab_size=1000, n_decoder_layers=6, d_model=512, n_heads=8,
                         d_ff=2048, dropout=0.0, max_len=length)
    torch.manual_seed(0)
    model = Transformer(config).eval().cuda()
    tgt = torch.randint(4, 1000, (1, length), device="cuda")  # (1, T)

    def with_maps():
        maps = model(tgt=tgt, return_attention=True).attention["decoder"]  # (L, 1, H, T, T)
        return maps.cpu()  # the app draws from host memory

    def without_maps():
        model(tgt=tgt)
        torch.cuda.synchronize()

    with torch.inference_mode():
        with_maps()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        with_maps()
        added_mb = (torch.cuda.max_memory_allocated() - before) / 2**20
        maps_ms, plain_ms = paired_ms(with_maps, without_maps, 5)
    what = f"decoder 6 layers, 8 heads, d512, {length} tokens, every map copied to the host"
    return [Row("gpu", f"{what} (baseline: no maps, fused kernel)", "≤ 2 s", maps_ms, "ms", plain_ms,
                ok=maps_ms <= 2000),
            Row("gpu", f"same, {length} tokens: GPU memory added", "≤ 1 GB", added_mb, "MB", ok=added_mb <= 1024)]


def _write_llama(folder: Path) -> None:
    """A random :data:`LLAMA_1B` folder (bf16 safetensors) with a small byte-level tokenizer.json."""
    import transformers

    from bench.families_decoders import small_byte_bpe

    tokenizer = small_byte_bpe()
    tokenizer.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=tokenizer.get_vocab_size(), **LLAMA_1B)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)


def _words_for(tokenizer, n_tokens: int) -> tuple[str, int]:
    """(a text of the tokenizer's training sentence repeated, its token count), about ``n_tokens`` tokens."""
    words = "The animal didn't cross the street because it was too tired.".split()
    text, length, i = "", 0, 0
    while length < n_tokens:
        text, i = f"{text} {words[i % len(words)]}".strip(), i + 1
        length = len(tokenizer.encode(text).ids)
    return text, length


def pretrained_rows(tokens: tuple[int, ...] = (32, 512)) -> list[Row]:
    """Load time and a forward with every map of :data:`LLAMA_1B`, GPU against CPU (CPU: every core)."""
    from core import explain, load_pretrained

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _write_llama(folder)
        start = time.perf_counter()
        on_gpu = load_pretrained(folder, device="cuda", use_cache=False)
        gpu_load_s = time.perf_counter() - start
        start = time.perf_counter()
        on_cpu = load_pretrained(folder, device="cpu", use_cache=False)
        cpu_load_s = time.perf_counter() - start
        rows.append(Row("gpu", "Llama-3.2-1B-shaped folder, 0.97 B parameters (bf16 file): load to the GPU "
                        "(baseline: to the CPU)", "report", gpu_load_s * 1000, "ms", cpu_load_s * 1000))
        threads = torch.get_num_threads()
        for n in tokens:
            text, length = _words_for(on_cpu.tokenizer, n)
            gpu_ms = median_ms(lambda: explain(on_gpu, text), 5)
            cpu_ms = median_ms(lambda: explain(on_cpu, text), 2, warmup=1)
            rows.append(Row("gpu", f"same, explain {length} tokens, every map of 16 layers × 32 heads (baseline: "
                            f"CPU, {threads} threads)", "report", gpu_ms, "ms", cpu_ms))
    return rows


def _guarded(name: str, build) -> list[Row]:
    """The rows of ``build()``, or none with the error logged: one failing part leaves the others' figures."""
    try:
        return build()
    except Exception:  # noqa: BLE001 - a benchmark part's failure is reported, the rest still runs
        log.exception("gpu bench part %s failed", name)
        return []


def run() -> list[Row]:
    """Every GPU row, or none (with a line on stderr) without CUDA."""
    if not torch.cuda.is_available():
        log.warning("gpu section skipped: no CUDA GPU on this machine")
        return []
    torch.set_num_threads(1)
    rows = _guarded("explain", explain_rows) + _guarded("long input", long_input_rows)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    rows += _guarded("pretrained", pretrained_rows)
    return rows + _guarded("training", gpu_training.mfu_rows)
