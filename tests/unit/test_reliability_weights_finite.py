"""NaN and ±Inf weights of a pretrained model (C5) are refused at the model's first use, not at its load: a
folder's weights are views of its memory-mapped files, and reading all of them at load to check them is what
made a 1 B model's load 4× ``transformers``' (``python -m bench big``). The refusal is the loader's one line
naming the tensors, raised before any module computes anything, on every path a model runs through:
``core.explain``, the CLI, an explain worker process, and the app's upload (whose worker checks as it loads,
so the upload itself is refused and nothing is stored)."""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch

from core import CheckpointError, ExplainWorker, explain, load_pretrained
from core.cli import explain_main
from core.io.pretrained import finite
from tests.helpers.hf_decoder_reference import TEXT, reference_model, save_folder
from tests.unit.test_gguf_families import SIZES

transformers = pytest.importorskip("transformers")

BAD = "layers.1.mlp.down_proj.weight"  # our name for model.layers.1.mlp.down_proj.weight
REFUSAL = f"llama has non-finite weights (NaN or Inf) in {BAD}"


@pytest.fixture(scope="module")
def reference():
    return reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, tie_word_embeddings=False))


@pytest.fixture(scope="module")
def healthy(reference, tmp_path_factory):
    return save_folder(copy.deepcopy(reference).to(torch.bfloat16), tmp_path_factory.mktemp("ok") / "llama",
                       add_bos=True)


@pytest.fixture(scope="module", params=[math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def hostile(request, reference, tmp_path_factory):
    """A bf16 Llama folder with one weight of one tensor NaN or ±Inf (the last layer's FFN output: a value
    the first layers' maps do not depend on)."""
    model = copy.deepcopy(reference).to(torch.bfloat16)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[3, 5] = request.param
    return save_folder(model, tmp_path_factory.mktemp("bad") / "llama", add_bos=True)


def _count_checks(monkeypatch) -> list[int]:
    calls = []
    real = finite.non_finite

    def counted(weights):
        calls.append(len(weights))
        return real(weights)

    monkeypatch.setattr(finite, "non_finite", counted)
    return calls


def test_a_load_reads_no_weight_value_and_the_first_run_checks_them_once(healthy, monkeypatch) -> None:
    checks = _count_checks(monkeypatch)
    loaded = load_pretrained(healthy)
    assert checks == []  # the load read the headers and mapped the files: no value read to check it
    first = explain(loaded, TEXT)
    assert checks == [len(loaded.model.state_dict())]  # every weight, once
    assert all(not m._forward_pre_hooks for m in loaded.model.modules())  # passed: no hook left to cost anything
    again = explain(loaded, TEXT)
    assert len(checks) == 1
    assert all(torch.equal(torch.from_numpy(first.attention[k]), torch.from_numpy(again.attention[k]))
               for k in first.attention)


def test_a_hostile_weight_is_refused_by_explain_before_anything_is_computed(hostile) -> None:
    loaded = load_pretrained(hostile)
    ran = []
    for module in loaded.model.modules():
        module.register_forward_hook(lambda *_: ran.append(1))  # after a module's forward: none may finish
    for _ in range(2):  # refused again at every later run, never computed
        with pytest.raises(CheckpointError) as caught:
            explain(loaded, TEXT)
        assert str(caught.value) == REFUSAL
    assert ran == []
    with pytest.raises(CheckpointError, match=f"^{re.escape(REFUSAL)}$"):
        finite.ensure_finite(loaded.model)


def test_a_hostile_weight_is_refused_by_a_path_given_to_explain_and_by_the_cli(hostile, capsys) -> None:
    with pytest.raises(CheckpointError, match=f"^{re.escape(REFUSAL)}$"):
        explain(hostile, TEXT)
    assert explain_main([str(hostile), TEXT]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no prediction, no map
    assert captured.err.splitlines()[-1] == f"error: {REFUSAL}"  # a line of its own, after the loading bar


def test_a_part_of_the_model_called_alone_is_checked_too(hostile) -> None:
    loaded = load_pretrained(hostile)
    with pytest.raises(CheckpointError, match=f"^{re.escape(REFUSAL)}$"):
        loaded.model.embed(torch.tensor([[1, 2, 3]]))  # (1, T): any module's first call checks the whole model


def test_a_hostile_weight_is_refused_by_a_worker_at_its_first_run_or_as_it_loads(hostile) -> None:
    lazy = ExplainWorker(hostile, deadline_s=60, startup_s=60)
    try:
        assert lazy.start().parameters > 0  # loaded: its facts, nothing run yet
        with pytest.raises(ValueError) as caught:
            lazy.explain(TEXT)
        assert str(caught.value) == REFUSAL
    finally:
        lazy.close()
    eager = ExplainWorker(hostile, deadline_s=60, startup_s=60, check_weights=True)
    try:
        with pytest.raises(ValueError) as caught:
            eager.start()
        assert str(caught.value) == REFUSAL
    finally:
        eager.close()


def test_a_hostile_gguf_is_refused_at_first_use_and_never_cached(tmp_path, monkeypatch) -> None:
    """A GGUF's weights are dequantized in memory: with the weight cache they are checked before being cached
    (refused at load, nothing written); without it, at the model's first use, as a folder's."""
    from core.io.pretrained import weight_cache
    from tests.helpers import pretrained_files

    real_write = pretrained_files.write_tensors

    def with_nan(writer, tensors):
        tensors["blk.0.ffn_down.weight"][0][2, 1] = math.nan
        real_write(writer, tensors)

    monkeypatch.setattr(pretrained_files, "write_tensors", with_nan)
    path = tmp_path / "hostile.gguf"
    pretrained_files.write_tiny_gguf(path)
    monkeypatch.setenv("ATTNSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    refusal = "hostile.gguf has non-finite weights (NaN or Inf) in layers.0.mlp.down_proj.weight"
    with pytest.raises(CheckpointError, match=f"^{re.escape(refusal)}$"):
        load_pretrained(path, use_cache=True)
    weight_cache.flush()
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.safetensors"))
    loaded = load_pretrained(path, use_cache=False)
    with pytest.raises(CheckpointError, match=f"^{re.escape(refusal)}$"):
        explain(loaded, TEXT)
