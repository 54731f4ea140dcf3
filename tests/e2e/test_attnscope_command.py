"""``pip install -e .`` puts one ``attnscope`` command on the PATH, and only the small ``attnscope`` package on the
import path (``core`` and ``app`` stay inside the checkout, so no other distribution's ``core`` is shadowed)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_runs_cores_tools_and_says_how_to_serve():
    out = subprocess.run([sys.executable, "-m", "attnscope", "explain", "assets/checkpoints/reverse.safetensors",
                          "abc"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "prediction: 'cba'" in out.stdout
    usage = subprocess.run([sys.executable, "-m", "attnscope", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert usage.returncode == 0 and "attnscope serve" in usage.stdout
    wrong = subprocess.run([sys.executable, "-m", "attnscope", "fly"], cwd=ROOT, capture_output=True, text=True)
    assert wrong.returncode == 2


def test_an_editable_install_exposes_the_command_and_not_core(tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python, command = env / "bin" / "python", env / "bin" / "attnscope"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(ROOT)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    usage = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert usage.returncode == 0 and "attnscope serve" in usage.stdout
    shadow = subprocess.run([str(python), "-c", "import core"], capture_output=True, text=True, cwd=tmp_path)
    assert shadow.returncode != 0 and "No module named 'core'" in shadow.stderr
