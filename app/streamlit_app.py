"""Attnscope — see what a Transformer's attention does.

Run from the repository root: ``python -m streamlit run app/streamlit_app.py``.
This entry point sets up the page, draws the shared sidebar and routes to the pages
(``app/routes.py`` lists them; their scripts live in ``app/views/``).
"""

from __future__ import annotations

import streamlit as st

from app import routes
from app.sidebar import sidebar

st.set_page_config(page_title="Attnscope", page_icon="👁️", layout="wide")

navigation = st.navigation({
    section: [st.Page(r.script, title=r.title, icon=r.icon, url_path=r.url_path, default=r.script == routes.EXPLORE)
              for r in pages]
    for section, pages in routes.SECTIONS.items()
})
sidebar()
navigation.run()
