"""The GPU paths, run where CUDA is present (skipped elsewhere): a model on the GPU explains, generates and
trains as it does on the CPU, a GPU-trained checkpoint opens on the CPU, and a pretrained family runs there.

Float32 on the GPU differs from the CPU only in summation order, so maps agree to 1e-4 and every
prediction is the same; training runs in bf16 autocast, so its checkpoints are compared by what they do.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core import beam_search, explain, greedy, load_checkpoint, load_pretrained, Transformer
from core.config import ModelConfig
from core.training.trainer import train
from tests.helpers.paths import SHIPPED as FOLDER
from tests.helpers.tiny import tiny_training_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
SHIPPED = sorted(FOLDER.glob("*.safetensors"))

SENTENCES = {"translation": "the black cat eats fish", "reverse": "attention", "sort": "transformer",
             "copy": "heads", "dates": "March 3, 1999", "addition": "123+45", "sentiment": "not bad at all",
             "lm": "the cat sat on"}


def _maps_close(ours: dict, theirs: dict, tolerance: float = 1e-4) -> None:
    assert ours.keys() == theirs.keys()
    for kind in ours:
        assert ours[kind].shape == theirs[kind].shape
        assert abs(ours[kind] - theirs[kind]).max() < tolerance, kind


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_checkpoint_explains_on_the_gpu_as_on_the_cpu(path: Path) -> None:
    on_cpu, on_gpu = load_checkpoint(path, "cpu"), load_checkpoint(path, "cuda")
    assert next(on_gpu.model.parameters()).device.type == "cuda"
    text = SENTENCES[path.stem]
    cpu, gpu = explain(on_cpu, text), explain(on_gpu, text)
    assert gpu.prediction.text == cpu.prediction.text and gpu.generated_tokens == cpu.generated_tokens
    _maps_close(gpu.attention, cpu.attention)
    for maps in gpu.attention.values():  # (L, H, Tq, Tk): every row a distribution
        assert abs(maps.sum(-1) - 1).max() < 1e-5


def test_greedy_and_beam_search_on_the_gpu_choose_the_cpu_tokens() -> None:
    path = next(p for p in SHIPPED if p.stem == "translation")
    on_cpu, on_gpu = load_checkpoint(path, "cpu"), load_checkpoint(path, "cuda")
    src = torch.tensor([on_cpu.source_tokenizer.encode("my mother reads a book every night").ids])  # (1, S)
    bos, eos = on_cpu.target_tokenizer.bos_id, on_cpu.target_tokenizer.eos_id
    start = torch.tensor([[bos]])  # (1, 1)
    cpu = greedy(on_cpu.model, src, start, eos_id=eos, max_new_tokens=20).ids
    gpu = greedy(on_gpu.model, src.cuda(), start.cuda(), eos_id=eos, max_new_tokens=20).ids
    assert gpu.device.type == "cuda" and torch.equal(gpu.cpu(), cpu)
    cpu_beam = beam_search(on_cpu.model, src, start, eos_id=eos, beam_size=4, max_new_tokens=20).ids
    gpu_beam = beam_search(on_gpu.model, src.cuda(), start.cuda(), eos_id=eos, beam_size=4, max_new_tokens=20).ids
    assert torch.equal(gpu_beam.cpu(), cpu_beam)


def test_a_long_decoder_input_on_the_gpu_keeps_rows_summing_to_one_and_the_future_at_zero() -> None:
    config = ModelConfig(architecture="decoder", tgt_vocab_size=100, n_decoder_layers=2, d_model=64, n_heads=4,
                         d_ff=128, dropout=0.0, max_len=2048)
    torch.manual_seed(0)
    model = Transformer(config).eval().cuda()
    ids = torch.randint(4, 100, (1, 2048), device="cuda")  # (1, T)
    with torch.no_grad():
        maps = model(None, ids, return_attention=True).attention["decoder"]  # (L, 1, H, T, T)
    assert maps.shape == (2, 1, 4, 2048, 2048)
    assert (maps.sum(-1) - 1).abs().max() < 1e-5
    future = torch.triu(torch.ones(2048, 2048, dtype=torch.bool, device="cuda"), diagonal=1)
    assert torch.count_nonzero(maps[..., future]) == 0


def test_training_on_the_gpu_saves_a_checkpoint_the_cpu_opens(tmp_path: Path) -> None:
    result = train(tiny_training_config(tmp_path, steps=40, device="cuda"))
    assert result.step == 40 and all(torch.isfinite(torch.tensor(r["loss"])) for r in result.history)
    ckpt = load_checkpoint(result.checkpoint, "cpu")
    assert next(ckpt.model.parameters()).device.type == "cpu"
    assert ckpt.info.extra["train"]["device"] == "cuda"
    shown = explain(ckpt, "abc")
    assert all(abs(m.sum(-1) - 1).max() < 1e-5 for m in shown.attention.values())


def test_a_compiled_training_step_on_the_gpu_learns_like_the_eager_one(tmp_path: Path) -> None:
    eager = train(tiny_training_config(tmp_path, name="eager", steps=20, device="cuda", eval_every=20))
    compiled = train(tiny_training_config(tmp_path, name="compiled", steps=20, device="cuda", eval_every=20,
                                          compile=True))
    # same data, same seed: bf16 autocast and the compiled kernels round differently, not more
    assert abs(compiled.history[-1]["loss"] - eager.history[-1]["loss"]) < 0.05 * eager.history[-1]["loss"]
    assert load_checkpoint(compiled.checkpoint, "cpu").config == load_checkpoint(eager.checkpoint, "cpu").config


def test_a_pretrained_decoder_family_runs_on_the_gpu_as_on_the_cpu(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from tests.helpers.hf_decoder_reference import reference_model, save_folder, TEXT

    config = transformers.LlamaConfig(vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                                      bos_token_id=1, eos_token_id=2, pad_token_id=0)
    folder = save_folder(reference_model(config), tmp_path / "llama", add_bos=True)
    cpu = explain(load_pretrained(folder, device="cpu"), TEXT)
    on_gpu = load_pretrained(folder, device="cuda")
    assert next(on_gpu.model.parameters()).device.type == "cuda"
    gpu = explain(on_gpu, TEXT)
    assert gpu.prediction.labels == cpu.prediction.labels
    _maps_close(gpu.attention, cpu.attention)
