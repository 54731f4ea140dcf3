"""Upload helpers shared by the app's upload tests: drive the sidebar uploader, list stored uploads, zip a folder."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.services import catalog, storage


def uploader_key(at: AppTest) -> str:
    """The sidebar uploader's current key (a new one after each saved or refused upload)."""
    rounds = at.session_state["_upload_round"] if "_upload_round" in at.session_state else 0
    return "upload" if rounds == 0 else f"upload_{rounds}"


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    """Upload ``data`` as ``name`` through the sidebar and rerun; the page must not raise."""
    at.file_uploader(key=uploader_key(at)).upload(name, data).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def upload_folders(runs: Path) -> list[Path]:
    """Every stored upload folder under ``runs``."""
    base = runs / catalog.UPLOADS
    return sorted(p for p in base.glob("*/*") if storage.is_upload_digest(p.name)) if base.exists() else []


def zipped(folder: Path, prefix: str = "") -> bytes:
    """The files of ``folder`` as zip bytes, each name behind ``prefix``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, prefix + path.name)
    return buffer.getvalue()
