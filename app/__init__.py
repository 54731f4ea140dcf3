"""Attnscope's Streamlit app.

``streamlit run`` imports the pages' modules (and the warm-up uses their caches) before its runtime exists, and
each ``st.cache_data`` declared then logs "No runtime found, using MemoryCacheStorageManager" on the console: the
same in-memory storage a session's run uses, so nothing is wrong. Importing the app leaves that one message out
(once the runtime exists it cannot be logged), so a start prints no warning.
"""

from __future__ import annotations

import logging

NO_RUNTIME = "No runtime found"


class _DeclaredBeforeTheRuntime(logging.Filter):
    """Drops Streamlit's "No runtime found" warning."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(NO_RUNTIME)


logging.getLogger("streamlit.runtime.caching.cache_data_api").addFilter(_DeclaredBeforeTheRuntime())
