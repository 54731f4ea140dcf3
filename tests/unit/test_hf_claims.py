"""Issue 28 for every Hugging Face folder reader: what config.json claims (layers, heads, widths, the parameter
count) is checked against the safetensors headers before any config object, module or buffer is built.

Each family's folder is a tiny random model saved by ``transformers`` (no tokenizer: a folder whose claims
hold is refused for its missing tokenizer, which is read after the check). Its config.json then claims
100,000 layers, 2³¹ heads or a width the weights do not have: each is refused in one line naming the folder,
in under a second, with under 100 MB of Python memory, and no ``nn.Module`` is ever constructed.
"""

from __future__ import annotations

import json
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest
import torch

from core import CheckpointError, load_pretrained
from core.io.pretrained.hf_claims import Claims, Stack, check_claims
from core.io.pretrained.hf_files import TensorHeader
from tests.helpers.hf_families import FAMILIES, save_family

transformers = pytest.importorskip("transformers")

MAX_SECONDS, MAX_BYTES = 1.0, 100 * 2**20


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """Every family's tiny folder (config.json and model.safetensors, no tokenizer), saved once."""
    root = tmp_path_factory.mktemp("claims")
    return {name: save_family(name, root / name) for name in FAMILIES}


def _claiming(folders: dict[str, Path], family: str, tmp_path: Path, **changes) -> Path:
    """A copy of ``family``'s folder whose config.json carries ``changes``."""
    folder = shutil.copytree(folders[family], tmp_path / family)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


def _refused_before_building(folder: Path, match: str, monkeypatch) -> str:
    """Load ``folder``: a one-line refusal matching ``match``, fast, small, and no module ever constructed."""
    def no_module(*args, **kwargs):
        raise AssertionError("a module was constructed before the claims were checked")

    monkeypatch.setattr(torch.nn.Module, "__init__", no_module)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=match) as caught:
            load_pretrained(folder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        monkeypatch.undo()
    elapsed = time.perf_counter() - start
    assert elapsed < MAX_SECONDS and peak < MAX_BYTES, (elapsed, peak)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{folder.name}: "), message
    return message


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_an_honest_folder_passes_the_claims(family, folders, tmp_path, monkeypatch):
    """The untouched folder gets past every claim: it is refused only for the tokenizer it lacks."""
    folder = _claiming(folders, family, tmp_path)
    with pytest.raises(CheckpointError, match="tokenizer|vocab.json|source.spm"):
        load_pretrained(folder)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_layer_count_the_weights_do_not_hold(family, folders, tmp_path, monkeypatch):
    layers, _, _ = FAMILIES[family][1]
    folder = _claiming(folders, family, tmp_path, **{layers: 100_000})
    message = _refused_before_building(folder, rf"claims 100,000 layers \({layers}\)", monkeypatch)
    held = 1 if family == "albert" else 2
    assert message.endswith(f"but model.safetensors holds {held}")


def test_albert_running_its_shared_layer_100000_times_is_refused(folders, tmp_path, monkeypatch):
    folder = _claiming(folders, "albert", tmp_path, num_hidden_layers=100_000)
    _refused_before_building(folder, r"claims 100,000 layers \(num_hidden_layers\); at most 1,024", monkeypatch)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_two_to_the_31_heads(family, folders, tmp_path, monkeypatch):
    _, heads, width = FAMILIES[family][1]
    folder = _claiming(folders, family, tmp_path, **{heads: 2**31})
    config = json.loads((folders[family] / "config.json").read_text())
    if "head_dim" in config or family == "t5":  # an explicit head width: told by a tensor holding the heads
        match = rf"claims {heads}( × \w+)? [\d,]+ but model.safetensors holds \S+ with shape \("
    else:
        match = rf"claims 2,147,483,648 heads \({heads}\), which do not split {width} \d+ evenly"
    _refused_before_building(folder, match, monkeypatch)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_width_the_weights_do_not_have(family, folders, tmp_path, monkeypatch):
    _, _, width = FAMILIES[family][1]
    claimed = 2 * json.loads((folders[family] / "config.json").read_text())[width]
    projection = {"word_embed_proj_dim": claimed} if family == "opt" else {}  # OPT refuses them apart
    folder = _claiming(folders, family, tmp_path, **{width: claimed}, **projection)
    _refused_before_building(folder, rf"claims {width} {claimed} but model.safetensors holds \S+ with shape \(",
                             monkeypatch)


@pytest.mark.parametrize("family, key", [
    ("bert", "max_position_embeddings"), ("roberta", "max_position_embeddings"), ("albert", "max_position_embeddings"),
    ("distilbert", "max_position_embeddings"), ("electra", "type_vocab_size"), ("gpt2", "n_positions"),
    ("opt", "max_position_embeddings"), ("bart", "max_position_embeddings"), ("mbart", "max_position_embeddings")])
def test_a_learned_table_longer_than_the_weights_hold(family, key, folders, tmp_path, monkeypatch):
    folder = _claiming(folders, family, tmp_path, **{key: 2**40})
    _refused_before_building(folder, rf"claims {key}( \+ 2)? 1,099,511,62\d,\d+ but model.safetensors holds \S+ with "
                                     r"shape \(", monkeypatch)


@pytest.mark.parametrize("value, match", [(0, "must be a whole number of at least 1, got 0"),
                                          ("32", "must be a whole number of at least 1, got '32'"),
                                          (True, "must be a whole number of at least 1, got True")])
def test_a_size_that_is_not_a_positive_whole_number(value, match, folders, tmp_path, monkeypatch):
    folder = _claiming(folders, "llama", tmp_path, hidden_size=value)
    _refused_before_building(folder, rf"config.json's 'hidden_size' {match}", monkeypatch)


def test_a_missing_tensor_and_the_parameter_budget_are_told_in_one_line(tmp_path):
    held = {"w.embed": TensorHeader(tmp_path / "model.safetensors", "F32", (10, 4)),
            "w.0.q": TensorHeader(tmp_path / "model.safetensors", "F32", (4, 4))}
    ours = {"w.embed": "embed.weight", "w.0.q": "layers.0.q.weight"}
    width = ("hidden_size", 4)
    claims = Claims((Stack("layers.", ("num_hidden_layers", 1), {"q.weight": (width, width), "up.weight": (
        ("intermediate_size", 8), width)}),), {"embed.weight": (("vocab_size", 10), width)})
    assert claims.parameters == 10 * 4 + 4 * 4 + 8 * 4
    with pytest.raises(CheckpointError, match=r"^claims: the weights hold no tensor for layers\.0\.up\.weight "
                                              r"\(config.json's intermediate_size and hidden_size describe one of "
                                              r"shape \(8, 4\)\)$"):
        check_claims(tmp_path / "claims", held, ours, claims)
    fits = Claims(claims.stacks[:0], claims.tensors)
    check_claims(tmp_path / "claims", held, ours, fits, budget=40)
    with pytest.raises(CheckpointError, match=r"claims at least 40 parameters .* over the limit of 39 "):
        check_claims(tmp_path / "claims", held, ours, fits, budget=39)


def test_a_sharded_folder_names_its_shards(tmp_path, monkeypatch):
    torch.manual_seed(0)
    model = FAMILIES["bert"][0]()
    model.save_pretrained(tmp_path / "sharded", safe_serialization=True, max_shard_size="20KB")
    shards = len(list((tmp_path / "sharded").glob("model-*.safetensors")))
    config = json.loads((tmp_path / "sharded" / "config.json").read_text())
    (tmp_path / "sharded" / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 100_000}))
    assert shards > 1
    _refused_before_building(tmp_path / "sharded", rf"claims 100,000 layers \(num_hidden_layers\) but its {shards} "
                                                   r"safetensors shards hold 2$", monkeypatch)


@pytest.mark.parametrize("family, key", [("bert", "layer_norm_eps"), ("albert", "layer_norm_eps"),
                                         ("llama", "rms_norm_eps"), ("llama", "rope_theta"), ("qwen2", "rope_theta"),
                                         ("gpt2", "layer_norm_epsilon"), ("gpt_neox", "layer_norm_eps"),
                                         ("phi", "rope_theta"), ("t5", "layer_norm_epsilon")])
@pytest.mark.parametrize("value", [-1.0, 0.0, float("nan"), float("inf")])
def test_a_constant_that_makes_no_sense_is_refused_not_used(family, key, value, folders, tmp_path, monkeypatch):
    """The same family of cases as GGUF's G5: a norm's ε or a rotary base that is NaN, infinite, 0 or negative."""
    folder = _claiming(folders, family, tmp_path, **{key: value})
    config = json.loads((folder / "config.json").read_text())
    if isinstance(config.get("rope_parameters"), dict) and key in config["rope_parameters"]:  # transformers 5 keeps
        config["rope_parameters"][key] = value  # the rotary base there, and it wins over the top-level key
        (folder / "config.json").write_text(json.dumps(config))
    _refused_before_building(folder, "must be a finite number above 0", monkeypatch)


@pytest.mark.parametrize("family, key", [("llama", "bos_token_id"), ("llama", "eos_token_id"), ("gpt2", "eos_token_id"),
                                         ("gpt_neox", "eos_token_id"), ("phi", "bos_token_id")])
@pytest.mark.parametrize("value", [40, 10**6, -3])
def test_a_special_id_outside_the_vocabulary_is_refused(family, key, value, folders, tmp_path, monkeypatch):
    folder = _claiming(folders, family, tmp_path, **{key: value})
    _refused_before_building(folder, "outside the vocabulary", monkeypatch)
