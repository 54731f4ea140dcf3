"""The class store: classes a teacher runs, the students who follow them, and what the teacher's screen shows.

One SQLite file in the app's data folder (``<runs>/classes/classes.sqlite3``) in WAL mode, so every app process of
one machine (``deploy/``: N processes behind nginx) reads and writes the same classes: readers never wait for a
writer, writers wait for each other at most :data:`BUSY_S` (SQLite's busy timeout), and every write is one short
transaction. A committed class survives its process: a restart mid-class loses nothing (``synchronous=NORMAL`` in
WAL mode loses no committed transaction when a process dies; only a power cut can lose the last ones).

* A class has an unguessable code (128 bits, :func:`secrets.token_urlsafe`): the students' link carries it. Its
  teacher holds a separate 128-bit key that no link carries; the store keeps only its SHA-256 and every change a
  teacher makes (:meth:`ClassStore.publish`, ending the class, the polls in :mod:`app.services.class_polls`) checks it.
* The teacher's screen is one small JSON state (the page and its share-link parameters) with a version that goes up
  when it changes: a follower compares the version first (:meth:`ClassStore.versions`, one indexed query for many
  classes) and reads the state only when it moved.
* A class ends when its teacher ends it or after :data:`IDLE_S` (4 hours) without a teacher's action.
* At most :data:`MAX_STUDENTS` students at once; a student is present until it leaves or goes :data:`STALE_S`
  unseen (its process marks its live sessions seen: :meth:`ClassStore.seen`).

No Streamlit here.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_STUDENTS = 300
IDLE_S = 4 * 3600.0  # a class with no teacher action for this long has ended
STALE_S = 60.0  # a student unseen this long no longer counts (its process died, or its tab closed)
BUSY_S = 5.0  # how long a write waits for another process's write
MAX_STATE_BYTES = 16_384  # a teacher's screen state: a page and its share link
CODE_BYTES = 16  # 128 bits, for class codes and teacher keys alike
FOLDER = "classes"
SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY, teacher TEXT NOT NULL UNIQUE, started REAL NOT NULL, active REAL NOT NULL,
    ended REAL, version INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL DEFAULT '{}',
    poll INTEGER, poll_version INTEGER NOT NULL DEFAULT 0, tally INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS members (
    code TEXT NOT NULL, member TEXT NOT NULL, joined REAL NOT NULL, seen REAL NOT NULL,
    following INTEGER NOT NULL DEFAULT 1, left REAL, PRIMARY KEY (code, member));
CREATE TABLE IF NOT EXISTS polls (
    id INTEGER PRIMARY KEY AUTOINCREMENT, code TEXT NOT NULL, kind TEXT NOT NULL, question TEXT NOT NULL,
    options TEXT NOT NULL, answer INTEGER, why TEXT NOT NULL DEFAULT '', opened REAL NOT NULL, closed REAL,
    revealed REAL);
CREATE TABLE IF NOT EXISTS answers (
    poll INTEGER NOT NULL, member TEXT NOT NULL, choice INTEGER NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (poll, member));
CREATE INDEX IF NOT EXISTS polls_of_class ON polls (code, id);
"""


class ClassError(ValueError):
    """A class link or action that cannot be honoured; its message is one line for the person who tried."""


@dataclass(frozen=True)
class Started:
    """A new class: the code for the students' link and the key only the teacher's session holds."""

    code: str
    teacher_key: str


@dataclass(frozen=True)
class Versions:
    """What a follower compares before it reads anything else: the screen's version, the poll's version (a
    question asked, closed or revealed), the tally (a student joined, left, detached or answered) and whether the
    class has ended."""

    version: int
    poll_version: int
    tally: int
    ended: bool


@dataclass(frozen=True)
class Screen:
    """The teacher's screen: ``page`` (a URL path) and ``params`` (its share-link parameters), at ``version``."""

    version: int
    page: str
    params: dict[str, str]


def teacher_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_token() -> str:
    """A fresh 128-bit code or key, URL-safe (22 characters)."""
    return secrets.token_urlsafe(CODE_BYTES)


def looks_like_code(text: object) -> bool:
    """Whether ``text`` could be a class code (22 URL-safe characters), checked before any query."""
    return isinstance(text, str) and len(text) == 22 and all(c.isalnum() or c in "-_" for c in text)


class ClassStore:
    """The classes in the SQLite file at ``path`` (created with its folder). Thread-safe: one connection per
    store, its calls serialised by a lock (each is a short query or transaction)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=BUSY_S, isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_S * 1000)}")
        if self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            raise ClassError(f"the class store {path} cannot use WAL mode (a network file system?)")
        self._db.execute("PRAGMA synchronous = NORMAL")
        with self.transaction() as db:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: the write lock taken first, so it never fails half-way on
        a lock), committed on success and rolled back on any error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple]:
        """The rows of one read (a snapshot: WAL readers never wait)."""
        with self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    # ------------------------------------------------------------------------- classes
    def start(self, now: float | None = None) -> Started:
        """A new class, active from ``now``."""
        now = time.time() if now is None else now
        started = Started(new_token(), new_token())
        with self.transaction() as db:
            db.execute("INSERT INTO classes (code, teacher, started, active) VALUES (?, ?, ?, ?)",
                       (started.code, teacher_hash(started.teacher_key), now, now))
        log.info("class started")
        return started

    def check(self, code: object, now: float | None = None) -> None:
        """Return if ``code`` names a live class, else raise :class:`ClassError` saying why (a class idle past
        :data:`IDLE_S` is ended here)."""
        now = time.time() if now is None else now
        rows = self.query("SELECT active, ended FROM classes WHERE code = ?", (code,)) if looks_like_code(code) \
            else []
        if not rows:
            raise ClassError("This class link is not valid: check the address, or ask your teacher for the link.")
        active, ended = rows[0]
        if ended is None and now - active > IDLE_S:
            with self.transaction() as db:
                db.execute("UPDATE classes SET ended = ?, poll_version = poll_version + 1 WHERE code = ? AND "
                           "ended IS NULL", (active + IDLE_S, code))
            ended = active + IDLE_S
        if ended is not None:
            raise ClassError("This class has ended. Your teacher can start a new one and give you its link.")

    def teacher_of(self, code: str, key: str, now: float | None = None) -> None:
        """Return if ``key`` is the teacher key of the live class ``code``, else raise :class:`ClassError`."""
        self.check(code, now)
        if not self.query("SELECT 1 FROM classes WHERE code = ? AND teacher = ?", (code, teacher_hash(key))):
            raise ClassError("Only the class's teacher can do this.")

    def resume(self, key: str, now: float | None = None) -> str:
        """The code of the live class whose teacher key is ``key`` (a teacher whose tab closed takes it back)."""
        rows = self.query("SELECT code FROM classes WHERE teacher = ?", (teacher_hash(key.strip()),))
        if not rows:
            raise ClassError("No class has this teacher key.")
        self.check(rows[0][0], now)
        return rows[0][0]

    def end(self, code: str, key: str, now: float | None = None) -> None:
        """End the class (its teacher only): its students' links say so from now on."""
        now = time.time() if now is None else now
        self.teacher_of(code, key, now)
        with self.transaction() as db:
            db.execute("UPDATE classes SET ended = ?, poll_version = poll_version + 1, version = version + 1 "
                       "WHERE code = ?", (now, code))
        log.info("class ended")

    def touch(self, db: sqlite3.Connection, code: str, key: str, now: float) -> None:
        """Inside a transaction: refuse unless ``key`` is ``code``'s teacher's on a live class; note the action."""
        changed = db.execute("UPDATE classes SET active = ? WHERE code = ? AND teacher = ? AND ended IS NULL "
                             "AND ? - active <= ?", (now, code, teacher_hash(key), now, IDLE_S)).rowcount
        if not changed:
            raise ClassError("Only the class's teacher can do this, while the class is on.")

    # ------------------------------------------------------------------------- the teacher's screen
    def publish(self, code: str, key: str, page: str, params: dict[str, str], now: float | None = None) -> int:
        """Make ``page`` with ``params`` the class's screen (its teacher only); returns the screen's version, raised
        by one only when the screen changed."""
        now = time.time() if now is None else now
        state = json.dumps({"page": page, "params": params}, sort_keys=True, ensure_ascii=False)
        if len(state.encode()) > MAX_STATE_BYTES:
            raise ClassError(f"This page's state is over {MAX_STATE_BYTES:,} bytes: the class keeps the last one.")
        with self.transaction() as db:
            self.touch(db, code, key, now)
            db.execute("UPDATE classes SET state = ?, version = version + 1 WHERE code = ? AND state != ?",
                       (state, code, state))
            return db.execute("SELECT version FROM classes WHERE code = ?", (code,)).fetchone()[0]

    def screen(self, code: str) -> Screen:
        """The class's screen now."""
        rows = self.query("SELECT version, state FROM classes WHERE code = ?", (code,))
        if not rows:
            raise ClassError("This class link is not valid: check the address, or ask your teacher for the link.")
        state = json.loads(rows[0][1])
        return Screen(rows[0][0], str(state.get("page", "")), dict(state.get("params", {})))

    def versions(self, codes: Iterable[str]) -> dict[str, Versions]:
        """Each class's :class:`Versions` (a class the store does not have is left out)."""
        codes = list(dict.fromkeys(codes))
        found: dict[str, Versions] = {}
        for start in range(0, len(codes), 500):  # SQLite's bound on parameters
            part = codes[start:start + 500]
            marks = ",".join("?" * len(part))
            for code, version, poll_version, tally, ended in self.query(
                    f"SELECT code, version, poll_version, tally, ended FROM classes WHERE code IN ({marks})", part):
                found[code] = Versions(version, poll_version, tally, ended is not None)
        return found

    # ------------------------------------------------------------------------- students
    def join(self, code: str, member: str, now: float | None = None) -> None:
        """Count ``member`` (a session's anonymous token) in the class, following; refused when the class is not
        live or already has :data:`MAX_STUDENTS` students present."""
        now = time.time() if now is None else now
        self.check(code, now)
        with self.transaction() as db:
            present = db.execute("SELECT count(*) FROM members WHERE code = ? AND left IS NULL AND seen > ? AND "
                                 "member != ?", (code, now - STALE_S, member)).fetchone()[0]
            if present >= MAX_STUDENTS:
                raise ClassError(f"This class is full: it already has {MAX_STUDENTS} students.")
            db.execute("INSERT INTO members (code, member, joined, seen) VALUES (?, ?, ?, ?) ON CONFLICT "
                       "(code, member) DO UPDATE SET seen = excluded.seen, left = NULL, following = 1",
                       (code, member, now, now))
            db.execute("UPDATE classes SET tally = tally + 1 WHERE code = ?", (code,))

    def follow(self, code: str, member: str, following: bool) -> None:
        """``member`` follows the teacher again (``following``) or explores on its own."""
        with self.transaction() as db:
            if db.execute("UPDATE members SET following = ? WHERE code = ? AND member = ? AND following != ?",
                          (int(following), code, member, int(following))).rowcount:
                db.execute("UPDATE classes SET tally = tally + 1 WHERE code = ?", (code,))

    def leave(self, pairs: Iterable[tuple[str, str]], now: float | None = None) -> None:
        """The (code, member) pairs left their classes (their sessions ended)."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            for code, member in pairs:
                if db.execute("UPDATE members SET left = ? WHERE code = ? AND member = ? AND left IS NULL",
                              (now, code, member)).rowcount:
                    db.execute("UPDATE classes SET tally = tally + 1 WHERE code = ?", (code,))

    def seen(self, pairs: Iterable[tuple[str, str]], now: float | None = None) -> None:
        """The (code, member) pairs are still there (their process sees their sessions alive)."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            db.executemany("UPDATE members SET seen = ? WHERE code = ? AND member = ?",
                           [(now, code, member) for code, member in pairs])

    def present(self, code: str, now: float | None = None) -> tuple[int, int]:
        """(students following the teacher, students present) in the class now."""
        now = time.time() if now is None else now
        rows = self.query("SELECT count(*), coalesce(sum(following), 0) FROM members WHERE code = ? AND "
                          "left IS NULL AND seen > ?", (code, now - STALE_S))
        return int(rows[0][1]), int(rows[0][0])


_STORES: dict[Path, ClassStore] = {}
_STORES_LOCK = threading.Lock()


def store_at(folder: Path) -> ClassStore:
    """The process's one store for the data folder ``folder`` (its ``classes/classes.sqlite3``)."""
    path = (folder / FOLDER / "classes.sqlite3").resolve()
    with _STORES_LOCK:
        if path not in _STORES:
            _STORES[path] = ClassStore(path)
        return _STORES[path]
