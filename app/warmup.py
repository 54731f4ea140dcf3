"""Warm the server before the first browser connects (issue 23).

``python -m streamlit run app/streamlit_app.py`` finds the ``st.App`` in ``app/streamlit_app.py`` and
serves it with uvicorn; the App's lifespan runs :func:`warm` before the server answers its health
check. It imports torch, core, Plotly and the pages' modules, loads the default checkpoint, explains
its first example and builds that head view, all into the process-wide caches of ``app.resources``,
so the first page finds every one of them ready instead of waiting on imports and a first run.

The warm-up runs outside any session, so each of Streamlit's caches it calls would warn on the console that the
thread has no script run context (harmless: the caches are the ones a session uses); that warning is left out of the
warm-up's thread, so a start prints no warning.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

log = logging.getLogger(__name__)
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"
NO_CONTEXT = "Thread '%s': missing ScriptRunContext"  # what a cache called outside a session logs


class _OutsideASession(logging.Filter):
    """Drops the "missing ScriptRunContext" warning of the thread it was made in."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.thread == self.thread and str(record.msg).startswith(NO_CONTEXT))


@contextmanager
def _quiet_outside_a_session() -> Iterator[None]:
    """Within: this thread's calls to Streamlit's caches log no "missing ScriptRunContext" warning."""
    logger, dropped = logging.getLogger(CONTEXT_LOGGER), _OutsideASession()
    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


def warm() -> None:
    """Import, load and run what the Explore page's first draw needs (a failure is logged, never raised:
    the page then does the same work itself and shows its own message), Streamlit's warnings about running
    outside a session left out."""
    with _quiet_outside_a_session():
        _warm()


def _warm() -> None:
    """The warm-up itself (:func:`warm`)."""
    started = time.perf_counter()
    try:
        from app.services import catalog
        from app import resources
        from app.views.parts.explore import inputs, panels, views  # noqa: F401  (imports charts, plotly, pandas)
        from core import get_task

        entries, _ = catalog.list_entries(None, runs_deletable=False)
        entry = next((e for e in entries if e.key == catalog.DEFAULT_KEY), None)
        if entry is None:
            return
        loaded = resources.checkpoint(entry)
        text = get_task(entry.task).examples[0]
        options = inputs.default_options(loaded.config.architecture)
        exp = resources.explain_entry(entry, text, **options)
        views.canvas_payload(entry, exp, options, next(iter(exp.kinds)), 0, 0, 1.0)
    except Exception:  # the server must start whatever the warm-up meets
        log.exception("warm-up failed; the first page will load what it needs itself")
        return
    log.info("warm-up done in %.2f s", time.perf_counter() - started)


def freeze_heap() -> None:
    """Move every object alive now (the imported libraries, the default model and its first results) out of
    the garbage collector's reach: Streamlit collects every generation after each script run
    (``runner.postScriptGC``), and scanning torch's, Altair's and Plotly's import-time objects took 0.3 s of
    every interaction; afterwards it scans only what the sessions create."""
    gc.collect()
    gc.freeze()
    log.info("%d objects frozen out of the collector's scans", gc.get_freeze_count())


@asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """The App's startup: :func:`warm` in a worker thread, before the first request is served."""
    await asyncio.to_thread(warm)
    freeze_heap()
    yield
