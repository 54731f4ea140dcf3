"""Bit identity: every shipped checkpoint, MiniLM and SmolLM2 answer exactly as before the model contract.

``tests/data/identity.json`` was recorded on commit 046f37b (before anything moved) by
``tests/helpers/identity_record.py``; this recomputes it with today's code, under the same single thread. The sort
checkpoint was retrained afterwards (issue 27), so its entries were recorded again with 046f37b's code on the
new file; the translation checkpoint was retrained too (issue 27, everyday English with a spelling tokenizer
046f37b cannot read), so only its four entries were recorded again, with this code, on the new file.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers.identity_record import record
from tests.helpers.paths import DATA, SHIPPED

RECORDED = json.loads((DATA / "identity.json").read_text())


@pytest.fixture(scope="module")
def today() -> dict:
    return record()


def test_every_recorded_answer_is_bit_identical(today):
    missing = sorted(set(RECORDED) - set(today))
    pretrained_missing = [key for key in missing if "/" in key and not key.split("/")[0].islower()]
    if pretrained_missing and os.environ.get("ATTNSCOPE_REQUIRE_PRETRAINED") == "1":
        pytest.fail(f"pretrained models missing: {pretrained_missing}")
    assert set(missing) <= set(pretrained_missing), f"no longer recorded: {missing}"
    changed = {key: sorted(k for k in RECORDED[key] if RECORDED[key][k] != today[key].get(k))
               for key in RECORDED if key in today}
    assert not {k: v for k, v in changed.items() if v}, "answers changed"


def test_the_record_covers_every_shipped_checkpoint_and_option_set():
    stems = {p.stem for p in SHIPPED.glob("*.safetensors")}
    assert {key.split("/")[0] for key in RECORDED} >= stems
    assert {key.split("/")[1] for key in RECORDED} >= {"default", "beam", "controls", "embeddings"}
