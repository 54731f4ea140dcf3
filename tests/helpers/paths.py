"""Where the tests find the repository: its root, the shipped checkpoints and audio clips, the test data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "checkpoints"
REVERSE = SHIPPED / "reverse.safetensors"
AUDIO = ROOT / "assets" / "audio"
DATA = ROOT / "tests" / "data"
