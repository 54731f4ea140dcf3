"""A class of sessions that do not render: Streamlit's websocket protocol spoken from Python, a teacher and students.

Each :class:`Client` opens ``/_stcore/stream`` as a browser does (from a chosen loopback address, so that nginx's
``ip_hash`` spreads clients over processes as it would spread laptops), asks for a first run, and then only
listens: the server pushes a following student's reruns itself (``app.ui.class_push``). The client keeps every
widget's id by its key (a widget id ends with ``-<key>``) and the fragment it sits in, so it can press a button or
pick a poll answer as the browser would (:meth:`Client.press`, :meth:`Client.pick`), and it stamps the arrival of
what the bench waits for: the first Lesson stage header (an ``h2``) with a given text, a Markdown text naming a
count. Nothing is drawn: N of them measure the server, not N browsers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

TIMEOUT_S = 120.0


class Client:
    """One session of the app at ``url`` (``query``: its first URL query; ``page``: its first page's URL path)."""

    def __init__(self, url: str, query: str = "", page: str = "", source: str | None = None) -> None:
        self.url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.query, self.page, self.source = query, page, source
        self.widgets: dict[str, tuple[str, str]] = {}  # key → (widget id, its fragment id)
        self.headers: list[tuple[float, str]] = []  # (arrival, text) of every h2
        self.texts: list[tuple[float, str]] = []  # (arrival, body) of every Markdown text
        self.finished = 0
        self.upstream = ""  # the process nginx chose (its X-Upstream header), when there is one
        self.page_hash = ""  # the page the server last ran for this session (sent back with every rerun)
        self._socket = None
        self._reader: asyncio.Task | None = None
        self._changed = asyncio.Event()

    async def open(self) -> Client:
        """Connect and ask for the first run (returns once it is asked for)."""
        extra = {"local_addr": (self.source, 0)} if self.source else {}
        self._socket = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                                open_timeout=TIMEOUT_S, ping_interval=None, **extra)
        self.upstream = self._socket.response.headers.get("X-Upstream", "")
        self._reader = asyncio.create_task(self._read())
        await self._send(query=self.query, page=self.page)
        return self

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            await self._socket.close()

    async def _send(self, *, query: str | None = None, page: str = "", widget: tuple | None = None,
                    fragment: str = "") -> None:
        message = BackMsg()
        message.rerun_script.query_string = self.query if query is None else query
        message.rerun_script.page_name = page
        if not page:
            message.rerun_script.page_script_hash = self.page_hash
        if widget is not None:
            state = message.rerun_script.widget_states.widgets.add()
            state.id = widget[0]
            if widget[1] == "trigger":
                state.trigger_value = True
            else:
                state.string_array_value.data.extend(widget[2])
        message.rerun_script.fragment_id = fragment
        await self._socket.send(message.SerializeToString())

    async def _read(self) -> None:
        while True:
            raw = await self._socket.recv()
            now = time.perf_counter()
            reply = ForwardMsg()
            reply.ParseFromString(raw)
            kind = reply.WhichOneof("type")
            if kind == "script_finished":
                self.finished += 1
            elif kind == "navigation":
                self.page_hash = reply.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query = reply.page_info_changed.query_string.lstrip("?")
            elif kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                self._element(reply.delta.new_element, reply.delta.fragment_id, now)
            self._changed.set()

    def _element(self, element, fragment: str, now: float) -> None:
        kind = element.WhichOneof("type")
        if kind == "heading" and element.heading.tag == "h2":
            self.headers.append((now, element.heading.body))
        elif kind == "markdown":
            self.texts.append((now, element.markdown.body))
        inner = getattr(element, kind, None) if kind else None
        widget_id = getattr(inner, "id", "") if inner is not None else ""
        if widget_id.startswith("$$ID-"):
            self.widgets[widget_id.rsplit("-", 1)[-1] if "-" in widget_id else widget_id] = (widget_id, fragment)

    async def wait_for(self, done: Callable[[], bool], timeout_s: float = TIMEOUT_S) -> None:
        """Wait until ``done()`` holds (checked after every message)."""
        deadline = time.monotonic() + timeout_s
        while not done():
            self._changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the app did not send what the client waited for ({self.finished} runs, "
                                   f"headers {[h for _, h in self.headers][-3:]}, query {self.query[:120]})")
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    def key_of(self, key: str) -> tuple[str, str]:
        """(widget id, fragment id) of the widget keyed ``key`` (its id ends with ``-<key>``)."""
        found = [v for k, v in self.widgets.items() if k == key]
        if not found:
            found = [v for v in self.widgets.values() if v[0].endswith("-" + key)]
        if not found:
            raise KeyError(key)
        return found[0]

    async def press(self, key: str) -> float:
        """Press the button keyed ``key`` (in its fragment, as the browser does); returns when it was sent."""
        widget_id, fragment = self.key_of(key)
        sent = time.perf_counter()
        await self._send(widget=(widget_id, "trigger"), fragment=fragment)
        return sent

    async def pick(self, key: str, label: str) -> float:
        """Pick ``label`` in the pills keyed ``key``; returns when it was sent."""
        widget_id, fragment = self.key_of(key)
        sent = time.perf_counter()
        await self._send(widget=(widget_id, "pick", [label]), fragment=fragment)
        return sent

    async def type_and_press(self, text_key: str, text: str, button_key: str) -> None:
        """Type ``text`` into the text input keyed ``text_key`` and press the button keyed ``button_key`` in one
        run, as a browser sends a text committed by the click."""
        text_id, _ = self.key_of(text_key)
        button_id, fragment = self.key_of(button_key)
        message = BackMsg()
        message.rerun_script.query_string = self.query
        message.rerun_script.page_script_hash = self.page_hash
        typed = message.rerun_script.widget_states.widgets.add()
        typed.id, typed.string_value = text_id, text
        pressed = message.rerun_script.widget_states.widgets.add()
        pressed.id, pressed.trigger_value = button_id, True
        message.rerun_script.fragment_id = fragment
        await self._socket.send(message.SerializeToString())

    def header_at(self, text_start: str, after: float) -> float | None:
        """When the first h2 starting ``text_start`` arrived after ``after``, or None."""
        return next((t for t, body in self.headers if t >= after and body.startswith(text_start)), None)

    def text_at(self, needle: str, after: float) -> float | None:
        """When the first Markdown text holding ``needle`` arrived after ``after``, or None."""
        return next((t for t, body in self.texts if t >= after and needle in body), None)


async def open_all(clients: list[Client], at_once: int = 20) -> None:
    """Open ``clients``, ``at_once`` at a time (a class arriving, not a connection storm)."""
    for start in range(0, len(clients), at_once):
        await asyncio.gather(*(c.open() for c in clients[start:start + at_once]))
