"""Attnscope — see what a Transformer's attention does.

Run from the repository root: ``python -m streamlit run app/streamlit_app.py``.
This entry point sets up the page, draws the shared sidebar and routes to the pages
(``app/routes.py`` lists them; their scripts live in ``app/views/``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app import routes
from app.sidebar import sidebar

# A local image: a Material icon or emoji favicon would be fetched from a CDN (the app makes no outside request).
FAVICON = str(Path(__file__).resolve().parents[1] / "assets" / "favicon.png")
st.set_page_config(page_title="Attnscope", page_icon=FAVICON, layout="wide")

navigation = st.navigation(routes.navigation())
sidebar()
navigation.run()
