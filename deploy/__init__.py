"""Serving Attnscope beyond one process: nginx in front of N app processes (``deploy/class_server.py``)."""
