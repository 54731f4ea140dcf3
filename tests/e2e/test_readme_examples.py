"""The README's Python examples (and docs/'s) run, each as a script in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_examples_run(page: Path, tmp_path: Path) -> None:
    examples = _blocks(page.read_text(encoding="utf-8"), "python")
    if page.name == "README.md":
        assert examples, "the README shows the public API with runnable examples"
    for code in examples:
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert done.returncode == 0, f"{page.name} example failed:\n{code}\n{done.stderr[-3000:]}"
