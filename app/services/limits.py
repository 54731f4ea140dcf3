"""Fair sharing of the server between sessions, and a result cache bounded in bytes.

* :class:`Gate`: model runs shared by cost. A request's cost is its estimated work (parameters ×
  tokens); a cheap one takes one of ``slots`` slots, an expensive one (cost at least
  ``heavy_cost``: SmolLM2, Whisper, an uploaded GPT-2) the single heavy slot, so a large model runs
  at most once at a time and cheap requests never queue behind it. One run at a time per session;
  waiting for a slot and running are each bounded in seconds, and a session whose run took longer
  than ``free_s`` rests as long again before its next one (so a hostile session holds a slot at
  most about half the time). A request over its
  budget stops waiting and tells the user (:class:`OverBudget`); the run itself finishes in the
  background, still holding its session's turn, so a hostile session delays only itself.
* :class:`ByteLRU`: a least-recently-used cache bounded by the total size of what it holds
  (:func:`size_of`); a result larger than ``max_item_bytes`` is returned but never kept.

No Streamlit here: this module is plain Python and tested on its own.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


class OverBudget(ValueError):
    """A request was refused or stopped because it is over its session's budget (shown to the user)."""


def size_of(obj: Any, depth: int = 0) -> int:
    """Roughly how many bytes ``obj`` holds: arrays by their buffers, text by its length, containers
    and dataclasses by their contents (deep structures are counted to 12 levels)."""
    if depth > 12:
        return 64
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (str, bytes, bytearray)):
        return len(obj) + 49
    if isinstance(obj, dict):
        return 64 + sum(size_of(k, depth + 1) + size_of(v, depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return 56 + sum(size_of(v, depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return 64 + sum(size_of(getattr(obj, f.name, None), depth + 1) for f in dataclasses.fields(obj))
    nbytes = getattr(obj, "nbytes", None)  # torch tensors and other buffers
    if isinstance(nbytes, int):
        return nbytes
    return 32


class ByteLRU:
    """A thread-safe LRU cache holding at most ``max_bytes`` (as measured by :func:`size_of`)."""

    def __init__(self, max_bytes: int, max_item_bytes: int) -> None:
        self.max_bytes, self.max_item_bytes = max_bytes, max_item_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._total = 0

    @property
    def total_bytes(self) -> int:
        with self._lock:
            return self._total

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key: Hashable) -> tuple[bool, Any]:
        """(found, value); a hit becomes the most recently used."""
        with self._lock:
            if key not in self._items:
                return False, None
            self._items.move_to_end(key)
            return True, self._items[key][0]

    def put(self, key: Hashable, value: Any) -> bool:
        """Keep ``value`` unless it alone is over ``max_item_bytes``; evicts the least recently used
        until the total fits. Returns whether it was kept."""
        size = size_of(value)
        if size > self.max_item_bytes or size > self.max_bytes:
            return False
        with self._lock:
            if key in self._items:
                self._total -= self._items.pop(key)[1]
            self._items[key] = (value, size)
            self._total += size
            while self._total > self.max_bytes:
                self._total -= self._items.popitem(last=False)[1][1]
        return True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0


class Gate:
    """Model runs shared fairly by cost: ``slots`` cheap runs and one expensive run at once, one per
    session, bounded waits and run times."""

    def __init__(self, slots: int, wait_s: float, run_s: float, free_s: float = 1.0,
                 heavy_cost: float = float("inf")) -> None:
        self.slots, self.wait_s, self.run_s, self.free_s, self.heavy_cost = slots, wait_s, run_s, free_s, heavy_cost
        self._free = threading.BoundedSemaphore(slots)
        self._heavy = threading.BoundedSemaphore(1)
        self._busy: set[str] = set()
        self._rest: dict[str, float] = {}  # session → when it may run again after a long run
        self._lock = threading.Lock()

    def busy_sessions(self) -> int:
        with self._lock:
            return len(self._busy)

    def is_heavy(self, cost: float) -> bool:
        """Whether a request of this cost takes the heavy slot."""
        return cost >= self.heavy_cost

    def run(self, session: str, fn: Callable[[], T], cost: float = 0.0, grace_s: float = 0.0) -> T:
        """Run ``fn`` (estimated ``cost``: parameters × tokens) in a worker thread for ``session``; a run
        that stops itself at ``run_s`` (a worker process killed at that deadline) is waited for ``grace_s``
        more, so its own one-line reason reaches the user.

        Raises:
            OverBudget: the session already has a run going, no slot of its kind was free within
                ``wait_s``, or the run took longer than ``run_s`` (it finishes in the background;
                the session's next request waits for it).
            Exception: whatever ``fn`` raised.
        """
        with self._lock:
            if session in self._busy:
                raise OverBudget("your previous request is still running; try again when it has finished")
            wait = self._rest.get(session, 0.0) - time.monotonic()
            if wait > 0 and self._busy:  # a rest only matters while other sessions want the server
                raise OverBudget(f"your last request used the server for a long time; other sessions go first "
                                 f"for {wait:.0f} s more")
            self._busy.add(session)
        slot = self._heavy if self.is_heavy(cost) else self._free
        if not slot.acquire(timeout=self.wait_s):
            self._leave(session)
            what = "large-model requests" if slot is self._heavy else "requests"
            raise OverBudget(f"the server is busy with other sessions' {what} (waited {self.wait_s:.0f} s); "
                             f"try again in a moment")
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            start = time.monotonic()
            try:
                box["value"] = fn()
            except BaseException as error:  # handed to the waiting session
                box["error"] = error
            finally:
                slot.release()
                self._leave(session, time.monotonic() - start)
                done.set()

        threading.Thread(target=work, name=f"request-{session[:8]}", daemon=True).start()
        if not done.wait(self.run_s + grace_s):
            raise OverBudget(f"stopped: this request takes longer than the {self.run_s:.0f} s budget of one "
                             f"request; try a shorter input or fewer generated tokens")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _leave(self, session: str, took: float = 0.0) -> None:
        """End the session's turn; a run longer than ``free_s`` earns a rest as long as its excess
        (enforced only while another session has a run going: an idle server never refuses)."""
        with self._lock:
            self._busy.discard(session)
            if took > self.free_s:
                self._rest[session] = time.monotonic() + took - self.free_s
            if len(self._rest) > 1024:  # forget rests that are over
                now = time.monotonic()
                self._rest = {k: v for k, v in self._rest.items() if v > now}


def lower_priority(niceness: int = 10) -> None:
    """Lower the calling thread's CPU priority (Linux: each thread has its own nice value), so a large
    model's run yields the cores to cheap requests; elsewhere, or when refused, nothing changes."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
    except (AttributeError, OSError):  # no per-thread priorities on this system
        return


def freeze(obj: T, depth: int = 0) -> T:
    """Make every NumPy array inside ``obj`` read-only (a shared cached result must not be changed)."""
    if depth > 12:
        return obj
    if isinstance(obj, np.ndarray):
        obj.flags.writeable = False
    elif isinstance(obj, dict):
        for value in obj.values():
            freeze(value, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            freeze(value, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            freeze(getattr(obj, f.name, None), depth + 1)
    return obj
