"""Tokenize with an untrusted tokenizer where a deadline really stops it: a worker process.

Native tokenizer code holds the interpreter (a backtracking regex runs for minutes) and no
Python time limit can interrupt it. :class:`TokenizerWorker` runs the tokenizer in a child
process (a fresh interpreter that imports only ``tokenizers``: nothing of the server is inherited,
and it starts in well under a second); a call that passes its deadline kills the child, raises one
``ValueError`` line, and the next call starts a fresh child. Requests and answers are JSON lines
on the child's stdin and stdout.
"""

from __future__ import annotations

import logging
import threading

from core.text.child import LOAD_CHILD, Child

log = logging.getLogger(__name__)

Encoded = tuple[list[int], list[tuple[int, int]]]  # ids, character offsets

# The child (core.text.child.serve): build the tokenizer from the first line, then encode one text a line.
_CHILD = LOAD_CHILD + r"""
def setup(spec):
    from tokenizers import Tokenizer
    return Tokenizer.from_str(spec), None
def answer(tokenizer, text):
    encoding = tokenizer.encode(text)
    return [list(encoding.ids), [list(span) for span in encoding.offsets]]
child.serve(setup, answer)
"""


class TokenizerWorker:
    """Encode with the tokenizer JSON ``spec`` in a child process, each call bounded by ``deadline_s``
    (the child's start-up, before it has seen any text, by ``startup_s``).

    Thread-safe (one call at a time); :meth:`close` ends the child.
    """

    def __init__(self, spec: str, deadline_s: float = 5.0, startup_s: float = 30.0) -> None:
        self.spec, self.deadline_s, self.startup_s = spec, deadline_s, startup_s
        self._lock = threading.Lock()
        self._child = Child(_CHILD, name="attnscope-tokenizer")

    def encode(self, text: str) -> Encoded:
        """``(ids, offsets)`` of ``text``.

        Raises:
            ValueError: the deadline passed (the child was killed) or the tokenizer failed (one line).
        """
        with self._lock:
            status, value = "ready", None
            if not self._child.alive():
                status, value = self._child.start(self.spec, self.startup_s)
            if status == "ready":
                status, value = self._child.ask(text, self.deadline_s, "encode")
            if status == "ok":
                return list(value[0]), [(int(s), int(e)) for s, e in value[1]]
            self._child.kill()
        if status == "timeout" and value == "start":
            raise ValueError(f"tokenizing failed: the tokenizer process did not start within {self.startup_s:g} s")
        if status == "timeout":
            log.warning("tokenizing %d characters passed its %.1f s deadline; the worker was killed",
                        len(text), self.deadline_s)
            raise ValueError(f"tokenizing took longer than {self.deadline_s:g} s and was stopped; "
                             "this tokenizer cannot handle this text in time")
        if status == "ended":
            value = "the tokenizer process ended"
        raise ValueError(f"tokenizing failed: {value}")

    def close(self) -> None:
        """End the child process."""
        with self._lock:
            self._child.kill()
