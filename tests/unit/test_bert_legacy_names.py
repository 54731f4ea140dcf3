"""Old BERT checkpoints name LayerNorm's gain and bias ``gamma`` and ``beta`` (converted from TensorFlow);
``transformers`` renames them on load, and so does the encoder reader: such a folder opens and equals the
reference (which loads the same file), and a weight stored under both spellings is refused."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from core import CheckpointError, load_pretrained
from tests.helpers.hf_reference import open_and_compare, randomize, ref_wordpiece, save_ref_folder
from tests.unit.test_families_encoders import _config

transformers = pytest.importorskip("transformers")


def _legacy_folder(tmp_path, cls: str, keep_current: bool = False):
    torch.manual_seed(0)
    model = randomize(getattr(transformers, cls)(_config("bert")))
    folder = save_ref_folder(model, tmp_path / "legacy", ref_wordpiece())
    tensors = load_file(folder / "model.safetensors")
    renamed = {}
    for name, tensor in tensors.items():
        old = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        renamed[old] = tensor
        if keep_current and old != name and "embeddings" in name:
            renamed[name] = tensor.clone()
    assert any(k.endswith("LayerNorm.gamma") for k in renamed) and any(k.endswith("LayerNorm.beta") for k in renamed)
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    return model, folder


@pytest.mark.parametrize("cls", ["BertModel", "BertForMaskedLM", "BertForSequenceClassification"])
def test_a_legacy_layernorm_folder_opens_and_equals_the_reference(cls: str, tmp_path) -> None:
    model, folder = _legacy_folder(tmp_path, cls)
    reloaded = getattr(transformers, cls).from_pretrained(folder, attn_implementation="eager").eval()
    for name, value in model.state_dict().items():  # transformers renamed them on load: the same weights
        assert torch.equal(reloaded.state_dict()[name], value), name
    open_and_compare(reloaded, folder, ref_wordpiece(), "last_hidden_state" if cls == "BertModel" else "logits")


def test_a_weight_under_both_spellings_is_refused(tmp_path) -> None:
    _, folder = _legacy_folder(tmp_path, "BertModel", keep_current=True)
    with pytest.raises(CheckpointError, match=r"^legacy: embeddings.LayerNorm.(beta|gamma) and "
                                              r"embeddings.LayerNorm.(bias|weight) are the same weight"):
        load_pretrained(folder)
