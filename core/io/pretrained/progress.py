"""Loading progress: the pretrained readers report how much of a model they have read to whoever listens.

:func:`loading_progress` installs a listener ``callback(done, total)`` (bytes of weights read so far and in
all) for the loads run inside it, in this thread or task only (a context variable: the app's sessions each
listen to their own loads); :func:`report` is what a reader calls as it goes. The CLI draws it with
``tqdm``; the app can give it to ``st.progress``. Without a listener reporting costs nothing.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

log = logging.getLogger(__name__)
Listener = Callable[[int, int], None]
_listener: ContextVar[Listener | None] = ContextVar("attnscope_loading_progress", default=None)


@contextmanager
def loading_progress(callback: Listener | None) -> Iterator[None]:
    """Send the progress of every model load inside the block to ``callback(done_bytes, total_bytes)``."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)


def report(done: int, total: int) -> None:
    """Tell the listener (if any) that ``done`` of ``total`` bytes are read; a failing listener is logged,
    never allowed to break the load."""
    callback = _listener.get()
    if callback is None:
        return
    try:
        callback(done, total)
    except Exception as error:  # a display's fault must not lose the model
        log.warning("the loading progress listener failed: %r", error)
