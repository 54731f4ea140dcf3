"""Browser tests: ``streamlit run`` on loopback, driven by Playwright in Chromium."""
