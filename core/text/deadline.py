"""Tokenize with an untrusted tokenizer where a deadline really stops it: a worker process.

Native tokenizer code holds the interpreter (a backtracking regex runs for minutes) and no
Python time limit can interrupt it. :class:`TokenizerWorker` runs the tokenizer in a child
process (a fresh interpreter that imports only ``tokenizers``: nothing of the server is inherited,
and it starts in well under a second); a call that passes its deadline kills the child, raises one
``ValueError`` line, and the next call starts a fresh child. Requests and answers are JSON lines
on the child's stdin and stdout.
"""

from __future__ import annotations

import json
import logging
import queue
import subprocess
import sys
import threading
from typing import Any

log = logging.getLogger(__name__)

Encoded = tuple[list[int], list[tuple[int, int]]]  # ids, character offsets

# The child, at a lower CPU priority (while it backtracks, the server's own threads come first): build
# the tokenizer from the first line, say it is ready, then answer one line per text until stdin ends.
# Every failure, a pyo3 PanicException (a BaseException) included, is one line back.
_CHILD = r"""
import json, os, sys
if hasattr(os, "nice"):
    os.nice(10)
def say(status, value):
    sys.stdout.write(json.dumps([status, value]) + "\n")
    sys.stdout.flush()
def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
try:
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_str(json.loads(sys.stdin.readline()))
except BaseException as error:
    say("error", first_line(error))
    sys.exit()
say("ready", None)
for line in sys.stdin:
    try:
        encoding = tokenizer.encode(json.loads(line))
        say("ok", [list(encoding.ids), [list(span) for span in encoding.offsets]])
    except BaseException as error:
        say("error", first_line(error))
"""


class TokenizerWorker:
    """Encode with the tokenizer JSON ``spec`` in a child process, each call bounded by ``deadline_s``
    (the child's start-up, before it has seen any text, by ``startup_s``).

    Thread-safe (one call at a time); :meth:`close` ends the child.
    """

    def __init__(self, spec: str, deadline_s: float = 5.0, startup_s: float = 30.0) -> None:
        self.spec, self.deadline_s, self.startup_s = spec, deadline_s, startup_s
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str] = queue.Queue()

    def _start(self) -> tuple[str, Any]:
        """Start the child if none is alive; ("ready", None) once it has built the tokenizer."""
        if self._process is not None and self._process.poll() is None:
            return "ready", None
        self._process = subprocess.Popen([sys.executable, "-I", "-c", _CHILD], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                         encoding="utf-8")
        self._answers = answers = queue.Queue()
        threading.Thread(target=_read, args=(self._process.stdout, answers), daemon=True,
                         name="attnscope-tokenizer-reader").start()
        return self._ask(json.dumps(self.spec), self.startup_s, "start")

    def _ask(self, line: str, within: float, what: str) -> tuple[str, Any]:
        """Send one line; the child's answer, or ("timeout", what) after ``within`` seconds."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()
        try:
            answer = self._answers.get(timeout=within)
        except queue.Empty:
            return "timeout", what
        return tuple(json.loads(answer)) if answer else ("error", "the tokenizer process ended")

    def encode(self, text: str) -> Encoded:
        """``(ids, offsets)`` of ``text``.

        Raises:
            ValueError: the deadline passed (the child was killed) or the tokenizer failed (one line).
        """
        with self._lock:
            try:
                status, value = self._start()
                if status == "ready":
                    status, value = self._ask(json.dumps(text), self.deadline_s, "encode")
            except (OSError, ValueError):  # a broken pipe, or an answer that is not JSON
                status, value = "error", "the tokenizer process ended"
            if status == "ok":
                return list(value[0]), [(int(s), int(e)) for s, e in value[1]]
            self._kill()
        if status == "timeout" and value == "start":
            raise ValueError(f"tokenizing failed: the tokenizer process did not start within {self.startup_s:g} s")
        if status == "timeout":
            log.warning("tokenizing %d characters passed its %.1f s deadline; the worker was killed",
                        len(text), self.deadline_s)
            raise ValueError(f"tokenizing took longer than {self.deadline_s:g} s and was stopped; "
                             "this tokenizer cannot handle this text in time")
        raise ValueError(f"tokenizing failed: {value}")

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(5)
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
        self._process = None

    def close(self) -> None:
        """End the child process."""
        with self._lock:
            self._kill()


def _read(stream: Any, answers: queue.Queue[str]) -> None:
    """Hand each line the child writes to ``answers``; an empty line once it has ended."""
    for line in stream:
        answers.put(line)
    answers.put("")
