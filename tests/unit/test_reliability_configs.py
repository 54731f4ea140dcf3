"""Every config value range-checked before anything is built, for every Hugging Face folder family (H9).

Each family's tiny folder (``tests.helpers.hf_families``: config.json, weights and a tokenizer) loads and runs
untouched. Hypothesis then sets one to three of its config.json values (any scalar the family's config holds,
its rarely used fields included: T5's relative-attention buckets and distance, rotary scaling, positions,
special ids, scales) to edge values (0, negatives, 2³¹, 10³⁰, NaN, ±∞, the wrong type, null): the folder is
either refused with one ``CheckpointError`` line naming it, or it loads into a model that explains a sentence
with finite maps. A dozen cases per family run in CI; ``-m slow`` tries 300 each.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import CheckpointError, explain, load_pretrained
from tests.helpers.hf_families import FAMILIES, save_family

EDGES = [0, -5, -1, 1, 2, 3, 7, 2**31, 2**63, 1e30, -1e30, 0.5, float("nan"), float("inf"), float("-inf"),
         True, False, None, "x", [], {}]
IDENTITY = {"model_type", "architectures", "transformers_version", "dtype", "torch_dtype", "_name_or_path"}
#: Rotary scaling, a rarely used nested field of the Llama-style families.
ROPE = st.fixed_dictionaries({"rope_type": st.sampled_from(["linear", "llama3", "dynamic", "yarn", 7]),
                              "factor": st.sampled_from(EDGES), "low_freq_factor": st.sampled_from(EDGES),
                              "high_freq_factor": st.sampled_from(EDGES),
                              "original_max_position_embeddings": st.sampled_from(EDGES)})
CI = settings(max_examples=12, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(CI, max_examples=300)
TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("configs")
    return {name: save_family(name, root / name, tokenizer=True) for name in FAMILIES}


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


def _keys(config: dict) -> list[str]:
    """The config's scalar settings (sizes, constants, ids, switches, names), its identity left out."""
    return sorted(k for k, v in config.items() if k not in IDENTITY and not isinstance(v, (dict, list)))


def _runs_or_is_refused(folder: Path) -> None:
    """Load ``folder``: one ``CheckpointError`` line naming it, or a model whose explanation is finite."""
    try:
        loaded = load_pretrained(folder)
    except CheckpointError as error:
        message = str(error)
        assert "\n" not in message and message.startswith(folder.name), message
        return
    options = {} if loaded.architecture == "encoder" else {"max_new_tokens": 3}
    result = explain(loaded, TEXT, **options)
    assert all(np.isfinite(maps).all() for maps in result.attention.values())


def _case(folders: dict[str, Path], family: str, changes: dict) -> None:
    folder = Path(tempfile.mkdtemp(prefix="config-")) / family
    try:
        shutil.copytree(folders[family], folder)
        (folder / "config.json").write_text(json.dumps({**_config(folder), **changes}))
        _runs_or_is_refused(folder)
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)


def _fuzz(folders: dict[str, Path], family: str, profile: settings) -> None:
    keys = _keys(_config(folders[family]))
    values = st.dictionaries(st.sampled_from(keys), st.sampled_from(EDGES), min_size=1, max_size=3)
    rope = st.fixed_dictionaries({"rope_scaling": ROPE}) if family in ("llama", "mistral", "qwen2", "qwen3",
                                                                      "gemma", "phi", "gpt_neox") else st.just({})

    @profile
    @given(changes=values, scaling=st.one_of(st.just({}), rope))
    def case(changes: dict, scaling: dict) -> None:
        _case(folders, family, {**changes, **scaling})
    case()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_folder_loads_and_runs_untouched(family, folders):
    loaded = load_pretrained(folders[family])
    assert loaded.family == family
    _runs_or_is_refused(folders[family])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_drawn_config_values_are_refused_in_one_line_or_run(family, folders):
    _fuzz(folders, family, CI)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_three_hundred_drawn_configs_per_family(family, folders):
    _fuzz(folders, family, SLOW)


@pytest.mark.parametrize("key, value", [
    ("relative_attention_max_distance", 0), ("relative_attention_max_distance", -5),
    ("relative_attention_max_distance", 2), ("relative_attention_max_distance", 2**40),
    ("relative_attention_num_buckets", 0), ("relative_attention_num_buckets", 3),
    ("relative_attention_num_buckets", -8)])
def test_t5_relative_attention_out_of_range_is_refused_before_building(key, value, folders, tmp_path):
    """The probe's H9: a distance of 0 or −5 was accepted, then every run failed with "math domain error"."""
    folder = shutil.copytree(folders["t5"], tmp_path / "t5")
    (folder / "config.json").write_text(json.dumps({**_config(folder), key: value}))
    with pytest.raises(CheckpointError, match=rf"^t5: .*relative_attention") as caught:
        load_pretrained(folder)
    assert "\n" not in str(caught.value) and "math domain" not in str(caught.value)
