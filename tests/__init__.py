"""Attnscope's tests, by kind: ``unit/`` (core), ``app/`` (Streamlit AppTest and the app's services) and
``browser/`` (a served app in Chromium); ``helpers/`` holds what they share, ``conftest.py`` the fixtures."""
