"""An uploaded model holding a NaN or infinite weight is refused at the upload with the loader's one line naming
the tensor, and nothing is stored or shown: the loader checks a pretrained model's weights at its first use
(core.io.pretrained.finite), and the upload's worker process runs that check as it loads (C5, issue 49)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from app.services import catalog, storage
from core import CheckpointError
from tests.helpers.apptest_helpers import open_page, outputs
from tests.helpers.uploads import upload, upload_folders, zipped
from tests.unit.test_gguf_families import SIZES

transformers = pytest.importorskip("transformers")
from tests.helpers.hf_decoder_reference import reference_model, save_folder  # noqa: E402 - needs transformers

REFUSAL = "nan-llama has non-finite weights (NaN or Inf) in layers.1.mlp.down_proj.weight"


@pytest.fixture(scope="module", params=[math.nan, math.inf], ids=["nan", "inf"])
def hostile(request, tmp_path_factory) -> bytes:
    """A zipped bf16 Llama folder with one weight of its last FFN output NaN or +Inf."""
    model = reference_model(transformers.LlamaConfig(**SIZES, num_key_value_heads=2, tie_word_embeddings=False))
    model = copy.deepcopy(model).to(torch.bfloat16)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight[3, 5] = request.param
    folder = save_folder(model, tmp_path_factory.mktemp("hostile") / "nan-llama", add_bos=True)
    return zipped(folder, prefix="nan-llama/")


def test_the_upload_is_refused_with_the_tensor_named_and_nothing_stored(runs, hostile) -> None:
    with pytest.raises(CheckpointError) as caught:
        catalog.save_upload(storage.new_owner(), "nan.zip", hostile)
    assert str(caught.value) == REFUSAL
    assert upload_folders(runs) == []


def test_the_page_shows_the_refusal_as_one_line_and_keeps_its_model(runs, hostile) -> None:
    at = upload(open_page("explore"), "nan.zip", hostile)
    [message] = [e.value.replace("\\", "") for e in at.error]  # Markdown characters are escaped on the page
    assert REFUSAL in message and "\n" not in message and "Traceback" not in message
    assert upload_folders(runs) == [] and at.session_state["ckpt"] == catalog.DEFAULT_KEY and outputs(at)
