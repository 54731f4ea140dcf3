"""The process-wide training job registry, shared by every session and browser tab."""

from __future__ import annotations

import streamlit as st

from app.jobs import JobRegistry


@st.cache_resource(show_spinner=False)
def registry() -> JobRegistry:
    """One registry per server process: a refresh or a second tab sees the same jobs."""
    return JobRegistry()
