"""Issue 28: every HTTP route refuses a foreign Host header (DNS rebinding), as the WebSocket does.

The served app (``streamlit run`` on a free loopback port, as the browser tests start it) answers
``/``, ``/_stcore/health``, ``/_stcore/metrics`` and ``/_stcore/host-config`` for ``localhost:PORT``
and refuses them for ``evil.example``; the middleware alone is checked against Streamlit's own
allow-list rules (ports ignored, wildcards, several or no Host headers).
"""

from __future__ import annotations

import asyncio
import http.client
from pathlib import Path
from urllib.parse import urlparse

import pytest
from streamlit import config

from app.services.hosts import AllowedHosts
from tests.helpers.browser import served_app

ROUTES = ["/", "/_stcore/health", "/_stcore/metrics", "/_stcore/host-config"]


def status(url: str, path: str, host: str) -> int:
    """The HTTP status the server answers ``GET path`` with ``Host: host``."""
    parsed = urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_served_app_refuses_foreign_hosts_on_every_http_route(tmp_path: Path) -> None:
    with served_app(tmp_path) as url:
        port = urlparse(url).port
        for path in ROUTES:
            assert status(url, path, f"localhost:{port}") == 200, path
            assert status(url, path, f"127.0.0.1:{port}") == 200, path
            assert status(url, path, "evil.example") == 400, path
            assert status(url, path, f"evil.example:{port}") == 400, path


def answer(headers: list[tuple[bytes, bytes]], kind: str = "http") -> int | str:
    """What :class:`AllowedHosts` does with a request: the status it sends, or "passed" to the app."""
    sent: list[dict] = []

    async def inner(scope, receive, send) -> None:
        sent.append({"type": "passed"})

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request"}

    asyncio.run(AllowedHosts(inner)({"type": kind, "headers": headers, "path": "/"}, receive, send))
    return "passed" if sent[0]["type"] == "passed" else sent[0]["status"]


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch):
    def set_hosts(hosts: list[str]) -> None:
        original = config.get_option
        monkeypatch.setattr(config, "get_option",
                            lambda key: hosts if key == "server.allowedHosts" else original(key))
    return set_hosts


@pytest.mark.parametrize("headers, expected", [
    ([(b"host", b"localhost:8501")], "passed"),
    ([(b"Host", b"LOCALHOST")], "passed"),
    ([(b"host", b"app.example.com")], "passed"),
    ([(b"host", b"evil.example")], 400),
    ([(b"host", b"localhost.evil.example")], 400),
    ([(b"host", b"user@localhost")], 400),
    ([], 400),
    ([(b"host", b"localhost"), (b"host", b"evil.example")], 400),
])
def test_the_middleware_applies_streamlits_allow_list(allowed, headers, expected) -> None:
    allowed(["localhost", "*.example.com"])
    assert answer(headers) == expected


def test_websockets_are_left_to_streamlit_and_an_empty_list_accepts_any_host(allowed) -> None:
    allowed(["localhost"])
    assert answer([(b"host", b"evil.example")], kind="websocket") == "passed"  # Streamlit checks these itself
    allowed([])
    assert answer([(b"host", b"evil.example")]) == "passed"
