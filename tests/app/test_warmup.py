"""The server's start-up (issue 23): the warm-up runs before the first request, then the heap it built is
frozen out of the collector's scans, which is what lets ``.streamlit/config.toml`` turn off Streamlit's full
collection after every script run."""

from __future__ import annotations

import asyncio
import gc
import tomllib

from app import warmup
from tests.helpers.paths import ROOT


def test_the_lifespan_warms_then_freezes_before_serving(monkeypatch) -> None:
    order: list[str] = []
    monkeypatch.setattr(warmup, "warm", lambda: order.append("warm"))
    monkeypatch.setattr(warmup, "freeze_heap", lambda: order.append("freeze"))

    async def start() -> None:
        async with warmup.lifespan(None):
            order.append("serving")

    asyncio.run(start())
    assert order == ["warm", "freeze", "serving"]


def test_freezing_takes_the_living_objects_out_of_the_collectors_scans() -> None:
    gc.unfreeze()
    living = [1, 2]
    assert any(o is living for o in gc.get_objects())
    try:
        warmup.freeze_heap()
        assert gc.get_freeze_count() > 1000  # every import-time object of the test process
        assert not any(o is living for o in gc.get_objects())  # frozen: no collection scans it
    finally:
        gc.unfreeze()
    assert any(o is living for o in gc.get_objects())


def test_the_post_run_collection_is_off_only_because_the_heap_is_frozen() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    source = (ROOT / "app" / "streamlit_app.py").read_text()
    assert "lifespan=lifespan" in source  # the App's start-up is what freezes (app/warmup.py)


def test_no_session_watches_the_source_files() -> None:
    """Streamlit's source watcher rescans every imported module (torch's ~2,000) on each new session's first run,
    on the event loop every session's messages wait behind; the app is served, not edited, so it is off."""
    from streamlit import config as streamlit_config

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    streamlit_config.get_config_options(force_reparse=True)  # the file as Streamlit itself reads it (cwd: the root)
    assert streamlit_config.get_option("server.fileWatcherType") == "none"
