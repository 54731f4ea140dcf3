"""The README does not lie: its Python examples run, and its quick-start commands are the ones CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_python_examples_run(tmp_path):
    examples = _blocks("python")
    assert examples, "the README shows the public API with runnable examples"
    for code in examples:
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
        assert done.returncode == 0, f"README example failed:\n{code}\n{done.stderr[-3000:]}"


def test_quick_start_has_exactly_two_commands_that_ci_runs():
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [block.strip() for block in re.findall(r"```bash\n(.*?)```", quick_start, flags=re.S)]
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    run_marker, test_marker = quick_start.index("ci:run-command"), quick_start.index("ci:test-command")
    assert run_marker < quick_start.index(commands[0]) < test_marker < quick_start.index(commands[1])
    assert "streamlit run app/streamlit_app.py" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "ci:run-command" in ci and "ci:test-command" in ci
