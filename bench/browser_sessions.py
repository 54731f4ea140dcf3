"""Sessions that do not render: Streamlit's own websocket protocol spoken from Python.

A :class:`Session` opens ``/_stcore/stream`` as the browser does, asks for a script run with a
``rerun_script`` BackMsg (the page's query string, and a text edit as the text area's widget
state) and times the server's answer, from the request sent to its ``script_finished`` message.
Nothing is drawn, so ``SESSIONS`` of them measure the server's two cores, not eight browsers.
"""

from __future__ import annotations

import asyncio
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Self

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

TIMEOUT_S = 90.0


class Session:
    """One websocket session of a served app (its text area found by its widget key ``text``)."""

    def __init__(self, url: str, query: str) -> None:
        self.url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.query, self.text_id, self.socket = query, None, None

    async def __aenter__(self) -> Self:
        self.socket = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None)
        await self.run()
        return self

    async def __aexit__(self, *_) -> None:
        await self.socket.close()

    async def run(self, text: str | None = None) -> float:
        """Ask for a script run (with ``text`` typed into the text area) and return its milliseconds."""
        message = BackMsg()
        message.rerun_script.query_string = self.query
        if text is not None and self.text_id:
            widget = message.rerun_script.widget_states.widgets.add()
            widget.id, widget.string_value = self.text_id, text
        started = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(await asyncio.wait_for(self.socket.recv(), TIMEOUT_S))
            kind = reply.WhichOneof("type")
            if kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                element = reply.delta.new_element
                if element.WhichOneof("type") == "text_area" and element.text_area.id.endswith("-text"):
                    self.text_id = element.text_area.id
            if kind == "script_finished":
                return (time.perf_counter() - started) * 1000


async def _edits(url: str, query: str, sessions: int, texts: list[list[str]],
                 think_s: tuple[float, float] | None) -> list[float]:
    """``sessions`` sessions, each submitting its list of texts one after another, all at once; with ``think_s``
    each waits a time drawn from that range (seeded per session) before each edit, as a person reading the last
    answer does."""
    async def one(index: int, texts_of_one: list[str]) -> list[float]:
        pauses = random.Random(index)
        async with Session(url, query) as session:
            times = []
            for text in texts_of_one:
                if think_s:
                    await asyncio.sleep(pauses.uniform(*think_s))
                times.append(await session.run(text))
            return times

    results = await asyncio.gather(*(one(s, texts[s]) for s in range(sessions)))
    return [ms for result in results for ms in result]


def server_edits(url: str, query: str, sessions: int, texts: list[list[str]],
                 think_s: tuple[float, float] | None = None) -> list[float]:
    """The server's milliseconds per text edit of ``sessions`` non-rendering sessions editing at once, each
    edit sent as soon as the last was answered or, with ``think_s``, after a pause drawn from that range (in a
    thread of its own: Playwright's sync API holds this thread's event loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _edits(url, query, sessions, texts, think_s)).result()
