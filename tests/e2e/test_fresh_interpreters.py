"""What only a fresh interpreter shows: data and tokenizers identical under another hash seed, the public
API's ``explain`` importable as a function, and reading the shipped checkpoints never importing the compiler."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from core.tasks import TASKS
from core.text.tokenizer import Tokenizer
from tests.unit.test_tasks import SMALL
from tests.unit.test_tokenizer import CORPUS

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "assets" / "checkpoints").glob("*.safetensors"))


def test_deterministic_across_processes():
    """Same data under another hash seed (catches iteration over sets of strings)."""
    code = (
        "import hashlib; from core.tasks import TASKS; "
        f"print(hashlib.sha256(repr([t.generate(5, {SMALL}) for t in TASKS.values()]).encode()).hexdigest())"
    )
    other_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": other_seed},
        capture_output=True,
        text=True,
        check=True,
    )
    expected = hashlib.sha256(repr([t.generate(5, SMALL) for t in TASKS.values()]).encode()).hexdigest()
    assert result.stdout.strip() == expected


def test_bpe_training_deterministic_across_processes() -> None:
    code = (
        "import json, sys; from core.text.tokenizer import Tokenizer;"
        f"sys.stdout.write(Tokenizer.train('bpe', json.loads({json.dumps(CORPUS)!r}), vocab_size=120).to_json())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         encoding="utf-8").stdout
    assert out == Tokenizer.train("bpe", CORPUS, vocab_size=120).to_json()


def test_public_api_explain_is_the_function_when_imported_with_its_options() -> None:
    code = ("from core.inspect.options import ExplainOptions; from core import explain; "
            "assert callable(explain), type(explain)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]


def test_reading_every_shipped_header_and_loading_one_does_not_import_the_compiler():
    # the app's first page reads every shipped checkpoint's header: building their layouts on ``meta``
    # imported torch._dynamo (seconds on a cold server); small models are built on the CPU instead
    code = ("import sys; from core.io.checkpoint import load, read_info; "
            f"[read_info(p) for p in {[str(p) for p in SHIPPED]!r}]; load({str(SHIPPED[0])!r}); "
            "print('torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
