"""Models of billions of parameters on a laptop: the weights are views of the files' memory maps, kept in
their stored precision (bf16 / fp16 Llama-family folders), the budget is what this machine has
available (a model that does not fit is refused with both figures, from the headers alone), and a load
reports its progress: to a listener (``core.loading_progress``, for ``st.progress``) and as a ``tqdm``
bar in the CLI."""

from __future__ import annotations

import copy

import pytest
import torch

from core import CheckpointError, load_pretrained, loading_progress
from core.cli import explain_main
from core.io.pretrained import hf_files
from core.io.pretrained.gguf_header import scan_gguf
from core.io.pretrained.memory import RESERVE_BYTES, available_bytes, budget_bytes
from tests.helpers.gguf_from_hf import write_gguf
from tests.helpers.hf_decoder_reference import TEXT, reference_model, save_folder
from tests.unit.test_gguf_families import SIZES, bpe_vocab

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bf16_folder(tmp_path_factory):
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, tie_word_embeddings=False))
    folder = tmp_path_factory.mktemp("big") / "llama"
    return save_folder(copy.deepcopy(reference).to(torch.bfloat16), folder, add_bos=True, max_shard_size="60KB")


def _weight_bytes(model) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def test_the_budget_is_the_memory_available_less_the_reserve(monkeypatch) -> None:
    assert available_bytes() > 0
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(5 * 2**30))
    assert budget_bytes() == 5 * 2**30 - RESERVE_BYTES


def test_bf16_weights_stay_bf16_and_progress_reaches_their_size(bf16_folder) -> None:
    """(The weights are not copied: transformers' reference comparison for bf16 folders is in
    test_families_decoders; the peak memory against the file size is measured by ``python -m bench big``.)"""
    seen: list[tuple[int, int]] = []
    with loading_progress(lambda done, total: seen.append((done, total))):
        loaded = load_pretrained(bf16_folder)
    weights = _weight_bytes(loaded.model)
    assert {p.dtype for p in loaded.model.parameters()} == {torch.bfloat16}
    assert len(seen) > 10 and all(total == weights for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and seen[-1][0] == weights
    assert load_pretrained(bf16_folder).model.config == loaded.model.config  # no listener: nothing reported


def test_a_model_over_the_machines_budget_is_refused_with_both_figures(bf16_folder, monkeypatch) -> None:
    need = _weight_bytes(load_pretrained(bf16_folder).model)
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(RESERVE_BYTES + need - 1))
    real_open = hf_files.safe_open

    class NoTensors:  # the headers may be read, no tensor
        def __init__(self, *args, **kwargs):
            self.handle = real_open(*args, **kwargs)

        def __enter__(self):
            self.inner = self.handle.__enter__()
            return self

        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)

        def keys(self):
            return self.inner.keys()

        def get_slice(self, name):
            return self.inner.get_slice(name)

        def get_tensor(self, name):
            reads.append(name)

    reads = []
    monkeypatch.setattr(hf_files, "safe_open", NoTensors)
    with pytest.raises(CheckpointError, match=r"^llama: 0\.0 GiB of weights in their stored bfloat16 is over the "
                                              r"0\.0 GiB this machine can give a model now \(2\.0 GiB available less "
                                              r"2\.0 GiB kept free\)$"):
        load_pretrained(bf16_folder)
    assert reads == []


def test_a_gguf_over_the_machines_budget_is_refused_from_its_header(tmp_path, monkeypatch) -> None:
    reference = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2))
    path = write_gguf(reference, tmp_path / "q.gguf", bpe_vocab()[0], quant={"ffn_down.weight": "Q4_K"})
    scan_gguf(path)
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(RESERVE_BYTES + 1000))
    with pytest.raises(CheckpointError, match=r"^q.gguf is not a valid GGUF file: its tensors hold more than 250 "
                                              r"parameters, .* this machine can give a model 0\.0 GiB now \(2\.0 GiB "
                                              r"available less 2\.0 GiB kept free\)\)$"):
        scan_gguf(path)


def test_a_failing_listener_never_loses_the_model(bf16_folder) -> None:
    def broken(done, total):
        raise RuntimeError("the display went away")

    with loading_progress(broken):
        assert load_pretrained(bf16_folder).family == "llama"


def test_the_cli_draws_a_loading_bar(bf16_folder, capsys) -> None:
    assert explain_main([str(bf16_folder), TEXT]) == 0
    captured = capsys.readouterr()
    assert "loading weights" in captured.err and "100%" in captured.err
    assert captured.out.startswith("prediction: ")
