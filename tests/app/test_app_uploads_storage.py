"""Uploads cannot fill the disk (issue 28): one cap (Streamlit's ``server.maxUploadSize``) for a file and
for what a zip unpacks to, a per-session quota that replaces the session's oldest uploads, a server
quota that refuses, and a session's uploads removed when the session ends or is gone."""

from __future__ import annotations

import gc
import io
import os
import time
import zipfile

import pytest

from app.services import catalog, storage, uploads
from core import CheckpointError
from tests.helpers.apptest_helpers import open_page
from tests.helpers.paths import SHIPPED
from tests.helpers.uploads import upload, upload_folders

MB = 2**20


@pytest.fixture
def cap(monkeypatch) -> int:
    """A 2 MiB upload cap (the shipped checkpoints are 1.0 to 1.5 MB; addition is 5.8 MB)."""
    monkeypatch.setattr(uploads, "max_upload_bytes", lambda: 2 * MB)
    return 2 * MB


def shipped(name: str) -> bytes:
    return (SHIPPED / f"{name}.safetensors").read_bytes()


def test_the_cap_holds_for_a_file_and_for_what_a_zip_unpacks_to(runs, cap):
    owner = storage.new_owner()
    with pytest.raises(CheckpointError, match="the file is larger than 2 MB"):
        catalog.save_upload(owner, "addition.safetensors", shipped("addition"))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model/config.json", b"{}")
        archive.writestr("model/model.safetensors", b"\0" * (3 * MB))  # a few KB zipped
    assert len(buffer.getvalue()) < cap
    with pytest.raises(CheckpointError, match="unpacks to more than 2 MB"):
        catalog.save_upload(owner, "bomb.zip", buffer.getvalue())
    assert upload_folders(runs) == [] and not list((runs / catalog.UPLOADS / owner).iterdir())


def test_a_session_over_its_quota_has_its_oldest_uploads_replaced(runs, cap):
    owner = storage.new_owner()
    names = ("reverse", "copy", "sort", "lm")  # 1.08, 1.03, 1.42 and 1.43 MB: the four pass the 4 MiB quota
    keys = [catalog.save_upload(owner, f"{name}.safetensors", shipped(name)) for name in names]
    assert storage.bytes_under(runs / catalog.UPLOADS / owner) <= storage.SESSION_UPLOADS * cap
    kept = [e.key for e in catalog.list_entries(owner)[0] if e.source == "upload"]
    assert sorted(kept) == sorted(keys[1:])  # reverse (the oldest) made room for lm
    assert [e.name for e in catalog.list_entries(owner)[0] if e.source == "upload"] == [
        "lm.safetensors", "sort.safetensors", "copy.safetensors"]  # newest first


def test_the_server_quota_refuses_once_every_session_together_fills_it(runs, cap, monkeypatch):
    monkeypatch.setattr(storage, "SERVER_UPLOADS", 1)
    catalog.save_upload(storage.new_owner(), "reverse.safetensors", shipped("reverse"))
    with pytest.raises(CheckpointError, match=r"the server's space for uploads \(0.0 GB\) is full"):
        catalog.save_upload(storage.new_owner(), "copy.safetensors", shipped("copy"))
    assert len(upload_folders(runs)) == 1


def test_a_session_s_uploads_are_removed_when_its_state_is_dropped(runs):
    owner = storage.new_owner()
    janitor = catalog.upload_janitor(owner)
    catalog.save_upload(owner, "reverse.safetensors", shipped("reverse"))
    assert len(upload_folders(runs)) == 1
    del janitor
    gc.collect()
    assert upload_folders(runs) == [] and not (runs / catalog.UPLOADS / owner).exists()


def test_an_app_session_s_uploads_go_when_the_session_goes(runs):
    at = upload(open_page("explore"), "mine.safetensors", shipped("reverse"))
    owner = at.session_state["_upload_owner"]
    assert len(upload_folders(runs)) == 1
    del at
    deadline = time.monotonic() + 10  # the script's thread may still hold the state a moment after its run ends
    while (runs / catalog.UPLOADS / owner).exists() and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.1)
    assert not (runs / catalog.UPLOADS / owner).exists()


def test_orphaned_uploads_are_removed_once_old_and_live_ones_kept(runs):
    base = runs / catalog.UPLOADS
    live, gone = storage.new_owner(), storage.new_owner()
    janitor = catalog.upload_janitor(live)
    for owner in (live, gone):
        catalog.save_upload(owner, "reverse.safetensors", shipped("reverse"))
    storage.remove_orphans(base)  # both young: kept (a session whose state is not yet made)
    assert (base / gone).exists()
    old = time.time() - storage.ORPHAN_S - 1
    for owner in (live, gone):
        os.utime(base / owner, (old, old))
    catalog.save_upload(storage.new_owner(), "copy.safetensors", shipped("copy"))  # every upload sweeps
    assert (base / live).exists() and not (base / gone).exists()
    janitor.release()
    assert not (base / live).exists()
