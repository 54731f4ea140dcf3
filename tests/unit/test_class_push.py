"""The class pusher (``app.ui.class_push``): which sessions a class change reruns, and how (a page run or their class
fragment alone), from one store query per tick; the students it still sees and those who left."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.services import class_polls
from app.services.classroom import ClassStore, Versions
from app.ui import class_push
from app.ui.class_push import Pusher, Watch, wake_kind


def test_what_each_change_wakes():
    drawn = Versions(3, 1, 10, False)
    student, detached = Watch("c", "m", True, "f", drawn), Watch("c", "m", False, "f", drawn)
    teacher = Watch("c", None, True, "t", drawn)
    assert wake_kind(student, drawn, 0.0) is None and wake_kind(teacher, drawn, 0.0) is None
    screen = Versions(4, 1, 10, False)
    assert (wake_kind(student, screen, 0.0), wake_kind(detached, screen, 0.0), wake_kind(teacher, screen, 0.0)) == (
        "page", None, None)
    question = Versions(3, 2, 10, False)
    assert [wake_kind(w, question, 1.0) for w in (student, detached, teacher)] == ["fragment"] * 3
    tally = Versions(3, 1, 11, False)
    assert [wake_kind(w, tally, 1.0) for w in (student, detached, teacher)] == [None, None, "fragment"]
    recently = Watch("c", None, True, "t", drawn, woken=0.9)
    assert wake_kind(recently, tally, 1.0) is None  # a burst of answers redraws the projector every TEACHER_S
    ended = Versions(3, 1, 10, True)
    assert [wake_kind(w, ended, 1.0) for w in (student, detached, teacher)] == ["page"] * 3
    assert wake_kind(Watch("c", "m", True, "f", None), screen, 0.0) is None  # nothing drawn yet: its run is on


@pytest.fixture
def store(tmp_path: Path):
    made = ClassStore(tmp_path / "classes.sqlite3")
    yield made
    made.close()


def test_a_tick_reruns_exactly_the_sessions_concerned_once(store, monkeypatch):
    asked: list[tuple[str, str | None]] = []
    monkeypatch.setattr(class_push, "_schedule", lambda session, fragment: asked.append((session, fragment)))
    a, b = store.start(), store.start()
    pusher = Pusher(store)
    for code in (a.code, b.code):
        store.join(code, "x")
    now = {c: store.versions([c])[c] for c in (a.code, b.code)}
    pusher.watch("teacher-a", a.code, None, True, "projector", now[a.code])
    pusher.watch("student-a", a.code, "x", True, "banner", now[a.code])
    pusher.watch("loner-a", a.code, "y", False, "banner", now[a.code])
    pusher.watch("student-b", b.code, "x", True, "banner", now[b.code])
    assert pusher.tick(now=100.0) == [] and asked == []
    store.publish(a.code, a.teacher_key, "lesson", {"lesson_stage": "2"})
    assert pusher.tick(now=101.0) == [("student-a", "page")]
    assert asked == [("student-a", None)]  # a page run: its sidebar applies the teacher's screen
    assert pusher.tick(now=101.1) == []  # woken once, not on every tick
    asked.clear()
    class_polls.ask(store, b.code, b.teacher_key, {"text": "Q", "choices": ["1", "2"]})
    assert sorted(pusher.tick(now=102.0)) == [("student-b", "fragment")]
    assert asked == [("student-b", "banner")]


def test_a_moved_screen_reruns_the_pages_fragment_alone_and_an_ended_class_the_page(store, monkeypatch):
    asked: list[tuple[str, str | None]] = []
    monkeypatch.setattr(class_push, "_schedule", lambda session, fragment: asked.append((session, fragment)))
    a = store.start()
    store.join(a.code, "x")
    pusher = Pusher(store)
    pusher.page_fragment("unknown", "lesson_body")  # a session not watched yet: nothing to remember
    assert pusher.watching() == {}
    pusher.watch("student", a.code, "x", True, "banner", store.versions([a.code])[a.code])
    pusher.page_fragment("student", "lesson_body")  # its Lesson body wrote the share link
    pusher.watch("student", a.code, "x", True, None, store.versions([a.code])[a.code])  # its next run keeps it
    assert pusher.watching()["student"].page_fragment == "lesson_body"
    store.publish(a.code, a.teacher_key, "lesson", {"stage": "2"})
    assert pusher.tick(now=101.0) == [("student", "page")]
    assert asked == [("student", "lesson_body")]  # the fragment applies the screen, or asks for a full run
    store.end(a.code, a.teacher_key)
    assert pusher.tick(now=102.0) == [("student", "page")]
    assert asked[-1] == ("student", None)  # the class ended: the whole page says so


def test_the_students_still_connected_are_seen_and_the_gone_leave(store, monkeypatch):
    s = store.start(now=0.0)
    store.join(s.code, "here", now=0.0)
    store.join(s.code, "gone", now=0.0)
    alive = {"session-here"}
    monkeypatch.setattr(class_push.Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(class_push.Runtime, "instance",
                        staticmethod(lambda: type("R", (), {"is_active_session": lambda self, s: s in alive})()))
    pusher = Pusher(store)
    pusher._thread = object()  # no thread in this test: ticks are called by hand
    drawn = store.versions([s.code])[s.code]
    pusher.watch("session-here", s.code, "here", True, "f", drawn)
    pusher.watch("session-gone", s.code, "gone", True, "f", drawn)
    pusher.mark_seen(50.0)
    assert store.present(s.code, now=70.0) == (1, 1)  # "gone" unseen for STALE_S no longer counts
    pusher.mark_seen(50.0 + class_push.GONE_S)
    assert "session-gone" not in pusher.watching()
    assert store.query("SELECT left IS NOT NULL FROM members WHERE member = 'gone'")[0][0] == 1
