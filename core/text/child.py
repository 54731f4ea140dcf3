"""A child Python process that answers JSON lines: the process plumbing of every worker that runs
untrusted work where a deadline really stops it (the uploaded tokenizer of :mod:`core.text.deadline`,
the uploaded model of :mod:`core.inspect.worker`).

Parent side, :class:`Child`: starts ``python -I -c CODE`` (a fresh interpreter: nothing of the server is
inherited), sends one JSON line per request and waits at most so many seconds for one JSON line back;
:meth:`Child.kill` ends it. Child side, :func:`serve`: lowers its CPU priority, keeps stdout for answers
only, builds its state from the first line, then answers each line until stdin ends (so a child whose
parent has gone ends too). Every failure in the child, a ``BaseException`` from native code included, is
one ``("error", line)`` answer.

This file imports only the standard library: a child that needs nothing else loads it by its path
(:data:`CHILD_FILE`) without importing the rest of core.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHILD_FILE = str(Path(__file__).resolve())
#: Child code's opening: load this file by its path as ``child`` (``sys.argv[1]``), importing nothing else.
LOAD_CHILD = ("import importlib.util, sys\n"
              "_spec = importlib.util.spec_from_file_location('attnscope_child', sys.argv[1])\n"
              "child = importlib.util.module_from_spec(_spec)\n"
              "_spec.loader.exec_module(child)\n")

Answer = tuple[str, Any]  # ("ready" | "ok" | "error", value), or ("timeout", what) / ("ended", what) here


class Child:
    """A child process running ``code`` (``python -I -c code CHILD_FILE *args``), spoken to in JSON lines.

    Not thread-safe: its owner (a worker) holds a lock around each exchange.
    """

    def __init__(self, code: str, args: Sequence[str] = (), env: dict[str, str] | None = None,
                 name: str = "attnscope-child") -> None:
        self.code, self.args, self.env, self.name = code, list(args), env, name
        self.process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str] = queue.Queue()

    def alive(self) -> bool:
        """Whether the child is running."""
        return self.process is not None and self.process.poll() is None

    def start(self, setup: Any, within: float) -> Answer:
        """Start a fresh child and send it ``setup``; its answer ("ready", facts) once it has built its
        state, ("error", line) when it could not, or ("timeout", "start") after ``within`` seconds."""
        self.kill()
        env = None if self.env is None else {**os.environ, **self.env}
        self.process = subprocess.Popen([sys.executable, "-I", "-c", self.code, CHILD_FILE, *self.args],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, encoding="utf-8", env=env)
        self._answers = answers = queue.Queue()
        threading.Thread(target=_read, args=(self.process.stdout, answers), daemon=True,
                         name=f"{self.name}-reader").start()
        log.info("%s started (pid %d)", self.name, self.process.pid)
        return self.ask(setup, within, "start")

    def ask(self, message: Any, within: float, what: str) -> Answer:
        """Send ``message``; the child's answer, ("timeout", what) after ``within`` seconds, or
        ("ended", what) when the child is gone or answered something that is not a JSON pair."""
        try:
            assert self.process is not None and self.process.stdin is not None
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
            answer = self._answers.get(timeout=within)
        except queue.Empty:
            return "timeout", what
        except (AssertionError, OSError, ValueError):  # no child, or a broken pipe
            return "ended", what
        try:
            status, value = json.loads(answer) if answer else ("ended", what)
        except ValueError:  # not JSON, or not a pair
            return "ended", what
        return str(status), value

    def kill(self) -> None:
        """End the child (if any) and wait for it."""
        if self.process is None:
            return
        self.process.kill()
        self.process.wait(5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.process = None


def _read(stream: Any, answers: queue.Queue[str]) -> None:
    """Hand each line the child writes to ``answers``; an empty line once it has ended."""
    for line in stream:
        answers.put(line)
    answers.put("")


def first_line(error: BaseException) -> str:
    """An exception as one short line (its type's name when it has no message; "out of memory" when it is,
    or was raised while handling, a ``MemoryError``)."""
    if isinstance(error, MemoryError) or isinstance(error.__context__, MemoryError):
        return "out of memory"
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]


def serve(setup: Callable[[Any], tuple[Any, Any]], answer: Callable[[Any, Any], Any]) -> None:
    """The child's side: ``state, facts = setup(first message)`` then ("ready", facts); then
    ("ok", answer(state, message)) for each further line until stdin ends. A failing ``setup`` answers
    ("error", line) and ends the child; a failing ``answer`` answers ("error", line) and goes on."""
    if hasattr(os, "nice"):
        os.nice(10)  # while it works, the server's own threads come first
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")  # answers only: anything else printed goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def say(status: str, value: Any) -> None:
        out.write(json.dumps([status, value]) + "\n")
        out.flush()

    try:
        state, facts = setup(json.loads(sys.stdin.readline()))
    except BaseException as error:  # a pyo3 PanicException or a MemoryError too
        say("error", first_line(error))
        return
    say("ready", facts)
    for line in sys.stdin:
        try:
            value = answer(state, json.loads(line))
        except BaseException as error:
            say("error", first_line(error))
            continue
        say("ok", value)
