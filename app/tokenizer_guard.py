"""An uploaded model's tokenizer, tried first where a deadline really stops it.

A pretrained model from an upload or the models folder brings its own ``tokenizer.json``: native code
that can hold the interpreter (a backtracking regex) or panic. Its explanations run wholly in a worker
process (:func:`app.resources.explain_entry`), which tokenizes there; where such a model still reads text
in the server (the Lesson's trace), :func:`check` first encodes the text in a worker process
(``core.TokenizerWorker``) killed at ``TOKENIZE_S``, so such a tokenizer becomes one ``ValueError`` line
and never runs in the server. Installed and shipped models are trusted and skip it.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from app.services import catalog
from core import TokenizerWorker

TOKENIZE_S = 5.0  # seconds an uploaded model's tokenizer may take on one text
WORKERS = 2  # worker processes kept (one per recently used untrusted tokenizer)


@st.cache_resource(max_entries=WORKERS, show_spinner=False)
def _worker(path: str, version: str, _loaded: Any) -> TokenizerWorker:
    spec = json.dumps(json.loads(_loaded.tokenizer.to_json())["hf"])  # the Hugging Face tokenizer's own JSON
    return TokenizerWorker(spec, deadline_s=TOKENIZE_S)


def check(e: catalog.Entry, loaded: Any, *texts: str) -> None:
    """Encode each text with the tokenizer of ``e`` in its worker process first, when ``e`` is an untrusted
    pretrained model (an upload or the models folder). Called inside the model run, so a cached result
    never pays for it.

    Raises:
        ValueError: the tokenizer passed its deadline or failed.
    """
    if not e.untrusted or not e.pretrained:
        return
    worker = _worker(str(e.path), catalog.version(e), loaded)
    for text in texts:
        worker.encode(text)
