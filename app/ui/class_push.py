"""Waking a class's sessions when the class changes, instead of every session polling.

A browser-driven poll (a fragment with ``run_every``) costs the server a script run per student per tick: measured
here, 1.6 ms of CPU per empty fragment run, so 100 students polling twice a second take a third of a core while
nobody moves. Instead each app process keeps one :class:`Pusher`: a thread that reads the versions of the classes
its sessions belong to (one indexed SQLite query every :data:`TICK_S`) and, when one moved, asks Streamlit to rerun
exactly the sessions that must redraw, on the server's event loop, as Streamlit's own run-on-save does:

* a following student, when the teacher's screen changed: its page's fragment alone where the page has one that
  writes its share link (``widgets.page_fragment``: the Lesson's body; the fragment's run applies the teacher's
  screen, or asks for a full run when the teacher moved to another page or changed a parameter outside it), else,
  and when the class ended, a full run (its sidebar applies the teacher's page and share link first:
  :mod:`app.ui.class_follow`). A fragment run of the Lesson costs a third of a full one (``bench classroom``);
* any student, when a question was asked, closed or revealed: its class banner's fragment alone;
* the teacher, when a student joined, left, detached or answered, or the question changed: the projector's
  fragment alone (at most every :data:`TEACHER_S`, so a burst of answers redraws the chart a few times a second).

An idle class costs one query per process per tick. Every :data:`SEEN_S` the pusher tells the store which of its
students are still connected (one unseen for ``STALE_S`` drops out of the follower count), and after
:data:`GONE_S` disconnected that it has left.

Streamlit below its public API (``tests/unit/test_streamlit_internals.py`` checks each is there):
``Runtime.instance()._get_async_objs().eventloop`` (the server's event loop), ``Runtime.get_app_session`` and the
session's ``request_rerun``, ``has_fragment``, ``page_script_hash`` and ``_client_state`` (the query string of its
last run). Without a runtime (AppTest) nothing is pushed: each run still applies what changed.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace

from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime import Runtime

from app.services.classroom import ClassStore, Versions

log = logging.getLogger(__name__)

TICK_S = 0.1
TEACHER_S = 0.25
SEEN_S = 15.0
GONE_S = 600.0  # a session disconnected this long is forgotten (a reconnect within it resumes following)


@dataclass
class Watch:
    """One session's place in a class and what it last drew (``drawn``: the versions of its last run)."""

    code: str
    member: str | None  # None: the teacher
    following: bool
    fragment: str | None  # the fragment to rerun for a question or tally change
    drawn: Versions | None
    woken: float = 0.0
    away_since: float | None = None
    page_fragment: str | None = None  # the page's fragment that writes its share link (a screen change reruns it)


def wake_kind(watch: Watch, now_versions: Versions, now: float) -> str | None:
    """What ``watch``'s session must redraw given the class's versions now: ``"page"`` (a full run),
    ``"fragment"`` (its class fragment) or None."""
    drawn = watch.drawn
    if drawn is None:
        return None
    if now_versions.ended and not drawn.ended:
        return "page"
    if watch.member is not None:
        if watch.following and now_versions.version != drawn.version:
            return "page"
        return "fragment" if now_versions.poll_version != drawn.poll_version else None
    if (now_versions.poll_version, now_versions.tally) != (drawn.poll_version, drawn.tally):
        return "fragment" if now - watch.woken >= TEACHER_S else None
    return None


class Pusher:
    """The process's waker (see the module doc); :func:`pusher` gives the one of a store."""

    def __init__(self, store: ClassStore) -> None:
        self.store = store
        self._watches: dict[str, Watch] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._seen_at = 0.0

    def watch(self, session_id: str, code: str, member: str | None, following: bool, fragment: str | None,
              drawn: Versions | None) -> None:
        """Remember that session ``session_id`` shows class ``code`` as it was at ``drawn`` (called by each run)."""
        with self._lock:
            old = self._watches.get(session_id)
            self._watches[session_id] = Watch(code, member, following, fragment or (old.fragment if old else None),
                                              drawn, old.woken if old else 0.0,
                                              page_fragment=old.page_fragment if old else None)
            if self._thread is None and Runtime.exists():
                self._thread = threading.Thread(target=self._run, name="class-pusher", daemon=True)
                self._thread.start()

    def page_fragment(self, session_id: str, fragment: str) -> None:
        """Remember that session ``session_id``'s page writes its share link in ``fragment`` (called by that
        fragment's runs): the teacher's next screen reruns it alone."""
        with self._lock:
            old = self._watches.get(session_id)
            if old is not None and old.page_fragment != fragment:
                self._watches[session_id] = replace(old, page_fragment=fragment)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._watches.pop(session_id, None)

    def watching(self) -> dict[str, Watch]:
        with self._lock:
            return dict(self._watches)

    def _run(self) -> None:
        while True:
            time.sleep(TICK_S)
            try:
                self.tick()
            except Exception:  # a locked or missing store file: logged, tried again next tick
                log.exception("the class pusher's tick failed")

    def tick(self, now: float | None = None) -> list[tuple[str, str]]:
        """Wake the sessions whose class moved; returns the (session, kind) pairs woken."""
        now = time.time() if now is None else now
        watches = self.watching()
        if not watches:
            return []
        versions = self.store.versions({w.code for w in watches.values()})
        woken = []
        for session_id, w in watches.items():
            found = versions.get(w.code)
            kind = None if found is None else wake_kind(w, found, now)
            if kind is not None:
                with self._lock:
                    if self._watches.get(session_id) is w:  # not re-registered by a run meanwhile
                        self._watches[session_id] = replace(w, drawn=found, woken=now)
                _schedule(session_id, _fragment_to_run(w, kind, found))
                woken.append((session_id, kind))
        if now - self._seen_at >= SEEN_S:
            self._seen_at = now
            self.mark_seen(now)
        return woken

    def mark_seen(self, now: float) -> None:
        """Tell the store which students are still connected, and which have left."""
        here, gone = [], []
        runtime = Runtime.instance() if Runtime.exists() else None
        for session_id, w in self.watching().items():
            alive = runtime is not None and runtime.is_active_session(session_id)
            if alive:
                w.away_since = None
                if w.member is not None:
                    here.append((w.code, w.member))
                continue
            w.away_since = w.away_since or now  # not seen: out of the count after STALE_S
            if now - w.away_since >= GONE_S:
                self.forget(session_id)
                if w.member is not None:
                    gone.append((w.code, w.member))
        if here:
            self.store.seen(here, now)
        if gone:
            self.store.leave(gone, now)


def _fragment_to_run(watch: Watch, kind: str, now_versions: Versions) -> str | None:
    """The fragment to rerun for a wake of ``kind`` (None: a full run): a moved screen reruns the page's
    fragment, an ended class the whole page."""
    if kind == "fragment":
        return watch.fragment
    return None if now_versions.ended else watch.page_fragment


def _schedule(session_id: str, fragment: str | None) -> None:
    """Ask, on the server's event loop, for a rerun of the session (of its ``fragment`` alone when given)."""
    if not Runtime.exists():
        return
    loop = Runtime.instance()._get_async_objs().eventloop
    loop.call_soon_threadsafe(_rerun, session_id, fragment)


def _rerun(session_id: str, fragment: str | None) -> None:
    """On the event loop: rerun the session with the query string and page of its last run (no widget state:
    every widget keeps its value), as a fragment run when ``fragment`` is one the session still holds."""
    session = Runtime.instance().get_app_session(session_id)
    if session is None:
        return
    state = ClientState()
    state.query_string = session._client_state.query_string
    state.page_script_hash = session.page_script_hash
    if fragment and session.has_fragment(fragment):
        state.fragment_id = fragment
    elif fragment:
        log.debug("session %s no longer holds fragment %s: a full run", session_id[:8], fragment)
    session.request_rerun(state)


_PUSHERS: dict[int, Pusher] = {}
_PUSHERS_LOCK = threading.Lock()


def pusher(store: ClassStore) -> Pusher:
    """The process's one pusher of ``store``."""
    with _PUSHERS_LOCK:
        if id(store) not in _PUSHERS:
            _PUSHERS[id(store)] = Pusher(store)
        return _PUSHERS[id(store)]
