"""Attnscope — see what a Transformer's attention does.

Run from the repository root: ``python -m streamlit run app/streamlit_app.py``.
This entry point sets up the page, draws the shared sidebar and routes to the pages.
"""

from __future__ import annotations

import streamlit as st

from app import ui

st.set_page_config(page_title="Attnscope", page_icon=":material/visibility:", layout="wide")

PAGES = {
    "Explore": [
        st.Page("views/explore.py", title="Explore attention", icon=":material/visibility:", default=True),
        st.Page("views/checkpoints.py", title="Checkpoints", icon=":material/inventory_2:"),
        st.Page("views/train.py", title="Train", icon=":material/model_training:"),
    ],
    "Learn": [
        st.Page("views/lesson.py", title="Lesson: one sentence, every stage", icon=":material/school:"),
        st.Page("views/positional.py", title="Positional encoding", icon=":material/waves:"),
        st.Page("views/playground.py", title="Attention playground", icon=":material/science:"),
        st.Page("views/masks.py", title="Masks", icon=":material/grid_on:"),
        st.Page("views/architecture.py", title="Architecture", icon=":material/account_tree:"),
    ],
}

navigation = st.navigation(PAGES)
ui.sidebar()
navigation.run()
