"""App tests: every page through Streamlit's AppTest, and the app's Streamlit-free services (jobs, limits,
uploads, charts)."""
