"""Tokenize with an untrusted tokenizer where a deadline really stops it: a worker process.

Native tokenizer code holds the interpreter (a backtracking regex runs for minutes) and no
Python time limit can interrupt it. :class:`TokenizerWorker` runs the tokenizer in a child
process (``spawn``: nothing of the server is inherited); a call that passes its deadline kills
the child, raises one ``ValueError`` line, and the next call starts a fresh child.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from multiprocessing.connection import Connection

log = logging.getLogger(__name__)

Encoded = tuple[list[int], list[tuple[int, int]]]  # ids, character offsets


def _serve(conn: Connection, spec: str) -> None:
    """The child: build the tokenizer once, then answer ``text → (ids, offsets)`` until EOF (at a lower
    CPU priority: while it backtracks, the server's own threads come first)."""
    from tokenizers import Tokenizer

    if hasattr(os, "nice"):
        os.nice(10)

    tokenizer = Tokenizer.from_str(spec)
    while True:
        try:
            text = conn.recv()
        except EOFError:
            return
        try:
            encoding = tokenizer.encode(text)
            conn.send(("ok", (list(encoding.ids), [(int(s), int(e)) for s, e in encoding.offsets])))
        except BaseException as error:  # noqa: B036 - a pyo3 PanicException is a BaseException
            conn.send(("error", (str(error).strip().splitlines() or [type(error).__name__])[0][:200]))


class TokenizerWorker:
    """Encode with the tokenizer JSON ``spec`` in a child process, each call bounded by ``deadline_s``.

    Thread-safe (one call at a time); :meth:`close` ends the child.
    """

    def __init__(self, spec: str, deadline_s: float = 5.0) -> None:
        self.spec, self.deadline_s = spec, deadline_s
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def _start(self) -> Connection:
        if self._process is None or not self._process.is_alive():
            context = multiprocessing.get_context("spawn")
            parent, child = context.Pipe()
            self._process = context.Process(target=_serve, args=(child, self.spec), daemon=True,
                                            name="attnscope-tokenizer")
            self._process.start()
            child.close()
            self._conn = parent
        assert self._conn is not None
        return self._conn

    def encode(self, text: str, startup_s: float = 30.0) -> Encoded:
        """``(ids, offsets)`` of ``text``; the child's start-up gets ``startup_s`` more on a first call.

        Raises:
            ValueError: the deadline passed (the child was killed) or the tokenizer failed (one line).
        """
        with self._lock:
            fresh = self._process is None or not self._process.is_alive()
            conn = self._start()
            try:
                conn.send(text)
                ready = conn.poll(self.deadline_s + (startup_s if fresh else 0.0))
                status, value = conn.recv() if ready else ("timeout", None)
            except (EOFError, OSError, BrokenPipeError):
                status, value = "error", "the tokenizer process ended"
            if status == "ok":
                return value
            self._kill()
        if status == "timeout":
            log.warning("tokenizing %d characters passed its %.1f s deadline; the worker was killed",
                        len(text), self.deadline_s)
            raise ValueError(f"tokenizing took longer than {self.deadline_s:g} s and was stopped; "
                             "this tokenizer cannot handle this text in time")
        raise ValueError(f"tokenizing failed: {value}")

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def close(self) -> None:
        """End the child process."""
        with self._lock:
            self._kill()
