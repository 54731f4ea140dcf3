"""Refuse HTTP requests whose Host header is not in ``server.allowedHosts`` (DNS rebinding).

Streamlit checks the Host of its WebSocket against ``server.allowedHosts`` but answers every HTTP
route (``/``, ``/_stcore/health``, ``/_stcore/metrics``, ``/_stcore/host-config``…) whatever the
Host says. :class:`AllowedHosts`, an ASGI middleware the app's ``st.App`` installs, applies the same
allow-list (Streamlit's own test: ports ignored, ``*.`` wildcards, an empty list accepts any Host)
to every HTTP request and answers a foreign Host with 400 before any route sees it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from streamlit.web.server.starlette.starlette_websocket import is_host_allowed

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
REFUSAL = b"Invalid Host header\n"


def host_of(scope: Scope) -> str | None:
    """The request's Host header (None when it has none or several)."""
    hosts = [value for name, value in scope.get("headers", ()) if name.lower() == b"host"]
    return hosts[0].decode("latin-1") if len(hosts) == 1 else None


class AllowedHosts:
    """ASGI middleware: an HTTP request with a Host outside ``server.allowedHosts`` gets 400."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_host_allowed(host_of(scope)):
            await self.app(scope, receive, send)
            return
        log.warning("refused %s %s: Host %r is not in server.allowedHosts", scope.get("method"),
                    scope.get("path"), host_of(scope))
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(REFUSAL)).encode())]})
        await send({"type": "http.response.body", "body": REFUSAL})
