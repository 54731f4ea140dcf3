"""The bit-identity record: what every shipped checkpoint, MiniLM and SmolLM2 answer, as SHA-256s.

``python -m tests.helpers.identity_record OUT.json`` writes it (run it with ``PINNED`` in the environment);
``tests/e2e/test_identity.py`` recomputes it with today's code and compares. The record in
``tests/data/identity.json`` was made on commit 046f37b, before the model contract moved any code, so every
later change is checked bit for bit against it. Only the public API of ``core`` is used (and
``model_embeddings``, public when the record was made), so the same script ran on the old and the new house.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch

from tests.helpers.paths import SHIPPED

TEXTS = {  # task → input (each checkpoint's own kind of text)
    "copy": "hello", "reverse": "abcdef", "sort": "dcba", "dates": "3/14/2015", "addition": "12+34",
    "translation": "the black cat", "sentiment": "i love this film", "lm": "the cat",
}
PINNED = {"OMP_NUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE",
          "ONEDNN_MAX_CPU_ISA": "SSE41"}
"""Environment that makes float32 results independent of the CPU's vector units (set before torch is imported)."""
OPTION_SETS = {"default": {}, "beam": {"decoding": "beam", "beam_size": 3},
               "controls": {"temperature": 2.0, "causal": False, "return_scores": True}}
"""Each set runs on the exact path (``maps="exact"``: the pass materialises the maps), the one the record holds."""


def _sha(array) -> str:
    data = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
    return hashlib.sha256(data.tobytes()).hexdigest()


def summary(explanation) -> dict:
    """The hashes of one explanation's maps, scores, prediction and token strings."""
    out = {f"attention/{k}": _sha(v) for k, v in explanation.attention.items()}
    out.update({f"scores/{k}": _sha(v) for k, v in (explanation.scores or {}).items()})
    pred = explanation.prediction
    out["prediction"] = json.dumps([pred.kind, pred.text, list(pred.labels)], ensure_ascii=False)
    if pred.probabilities is not None:
        out["probabilities"] = _sha(pred.probabilities)
    if getattr(pred, "vector", None) is not None:
        out["vector"] = _sha(pred.vector)
    out["tokens"] = json.dumps([list(explanation.source_tokens), list(explanation.target_tokens),
                                list(explanation.generated_tokens)], ensure_ascii=False)
    return out


def changed_answers(recorded: dict, today: dict) -> dict[str, list[str]]:
    """Each recorded answer whose fields differ from ``today`` 's (answer → the differing field names); an
    answer missing from ``today`` is not compared here."""
    changed = {key: sorted(k for k in recorded[key] if recorded[key][k] != today[key].get(k))
               for key in recorded if key in today}
    return {key: fields for key, fields in changed.items() if fields}


def record() -> dict:
    """Every shipped checkpoint under each option set, and the installed pretrained models."""
    import core
    from core.inspect.embeddings import model_embeddings  # a test-only name since core's API was trimmed
    torch.set_num_threads(1)
    result: dict = {}
    for path in sorted(SHIPPED.glob("*.safetensors")):
        ckpt = core.load_checkpoint(path)
        text = TEXTS[ckpt.info.task]
        for name, options in OPTION_SETS.items():
            if name == "beam" and ckpt.config.architecture != "encoder-decoder":
                continue
            result[f"{path.stem}/{name}"] = summary(core.explain(ckpt, text, maps="exact", **options))
        tables = model_embeddings(ckpt)
        result[f"{path.stem}/embeddings"] = {name: _sha(getattr(tables, name)) for name in
                                             ("source", "target", "positional") if getattr(tables, name) is not None}
    for entry in core.pretrained_models():
        model = core.load_pretrained(entry.path)
        text = "The animal didn't cross the street because it was too tired."
        result[f"{entry.name}/default"] = summary(core.explain(model, text, maps="exact"))
        if entry.architecture == "decoder":
            result[f"{entry.name}/continuation"] = summary(core.explain(model, "The cat", continuation=4, maps="exact"))
        else:
            result[f"{entry.name}/similarity"] = {"value": repr(core.sentence_similarity(model, "a cat", "a dog"))}
    return result


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(json.dumps(record(), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
