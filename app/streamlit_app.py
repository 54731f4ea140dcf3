"""Attnscope — see what a Transformer's attention does.

Run from the repository root: ``python -m streamlit run app/streamlit_app.py``.
This entry point sets up the page, draws the shared sidebar and routes to the pages
(``app/routes.py`` lists them; their scripts live in ``app/views/``).

``streamlit run`` finds the ``st.App`` below and serves this same file through it: the App's lifespan
warms the server (``app.warmup``: imports, the default model, its first explanation and head view)
before the first browser connects, and its middleware (``app.services.hosts``) refuses HTTP requests whose Host
is not in ``server.allowedHosts``. Each session's run executes the file as ``__main__`` and routes.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import routes
from app.sidebar import sidebar
from app.ui import class_follow, language

# A local image: a Material icon or emoji favicon would be fetched from a CDN (the app makes no outside request).
FAVICON = str(Path(__file__).resolve().parents[1] / "assets" / "favicon.png")


def main() -> None:
    """One session's run: the page settings, the shared sidebar, the chosen page, then (a teacher's session) the
    screen published to its class."""
    st.set_page_config(page_title="Attnscope", page_icon=FAVICON, layout="wide")
    navigation = st.navigation(routes.navigation(language.restore()))  # page titles in the session's language
    sidebar(navigation.url_path)
    navigation.run()
    class_follow.run_finished(navigation.url_path)  # a teacher's screen, for the class that follows it


if __name__ == "__main__":
    main()
else:  # imported by ``streamlit run`` as the server: warm up, then serve this file
    from starlette.middleware import Middleware

    from app.services.hosts import AllowedHosts
    from app.warmup import lifespan

    app = st.App(__file__, lifespan=lifespan, middleware=[Middleware(AllowedHosts)])
