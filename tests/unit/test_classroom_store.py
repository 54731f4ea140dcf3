"""The class store (``app.services.classroom``) and its polls (``app.services.class_polls``): codes and teacher keys,
the teacher's screen and its versions, the 300-student bound, the 4-hour end, one anonymous answer per student,
the CSV, tour questions as plain data, and a class that survives its process being killed mid-class."""

from __future__ import annotations

import base64
import csv
import io
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.services import class_polls, classroom
from app.services.classroom import ClassError, ClassStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> ClassStore:
    made = ClassStore(tmp_path / "classes.sqlite3")
    yield made
    made.close()


def test_codes_and_keys_have_128_bits_and_the_store_keeps_only_the_keys_hash(store, tmp_path):
    started = [store.start() for _ in range(20)]
    for s in started:
        for token in (s.code, s.teacher_key):
            assert len(base64.urlsafe_b64decode(token + "==")) == 16  # 128 bits
    assert len({s.code for s in started} | {s.teacher_key for s in started}) == 40
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    stored = (tmp_path / "classes.sqlite3").read_bytes() + (tmp_path / "classes.sqlite3-wal").read_bytes()
    assert started[0].code.encode() in stored and started[0].teacher_key.encode() not in stored


def test_only_the_teacher_key_moves_the_screen_and_the_version_moves_only_on_a_change(store):
    s = store.start()
    assert store.publish(s.code, s.teacher_key, "lesson", {"lesson_stage": "3"}) == 1
    assert store.publish(s.code, s.teacher_key, "lesson", {"lesson_stage": "3"}) == 1  # unchanged
    assert store.publish(s.code, s.teacher_key, "lesson", {"lesson_stage": "4"}) == 2
    with pytest.raises(ClassError, match="Only the class's teacher"):
        store.publish(s.code, s.code, "lesson", {"lesson_stage": "9"})  # the students' code is no key
    other = store.start()
    with pytest.raises(ClassError, match="Only the class's teacher"):
        store.publish(s.code, other.teacher_key, "lesson", {"lesson_stage": "9"})
    screen = store.screen(s.code)
    assert (screen.version, screen.page, screen.params) == (2, "lesson", {"lesson_stage": "4"})
    assert store.versions([s.code, "x" * 22])[s.code].version == 2  # an unknown class is left out
    with pytest.raises(ClassError, match="over 16,384 bytes"):
        store.publish(s.code, s.teacher_key, "explore", {"text": "x" * 20_000})
    assert store.resume(s.teacher_key) == s.code
    with pytest.raises(ClassError, match="No class has this teacher key"):
        store.resume(s.code)


@pytest.mark.parametrize("code", ["", "nope", "a" * 22, "../../etc/passwd", "x' OR '1'='1", None, 7])
def test_a_wrong_code_gets_one_clear_line(store, code):
    with pytest.raises(ClassError, match="This class link is not valid"):
        store.check(code)


def test_a_class_ends_when_its_teacher_ends_it_or_after_four_idle_hours(store):
    ended, idle = store.start(now=1000.0), store.start(now=1000.0)
    store.join(ended.code, "m1", now=1001.0)
    with pytest.raises(ClassError, match="Only the class's teacher"):
        store.end(ended.code, "not the key", now=1002.0)
    store.end(ended.code, ended.teacher_key, now=1002.0)
    assert store.versions([ended.code])[ended.code].ended
    for code in (ended.code,):
        with pytest.raises(ClassError, match="This class has ended"):
            store.join(code, "m2", now=1003.0)
    store.publish(idle.code, idle.teacher_key, "lesson", {}, now=1000.0 + classroom.IDLE_S - 1)  # an action
    store.check(idle.code, now=1000.0 + 2 * classroom.IDLE_S - 2)  # 4 h after the last action less 1 s: on
    with pytest.raises(ClassError, match="This class has ended"):
        store.check(idle.code, now=1000.0 + 2 * classroom.IDLE_S)
    with pytest.raises(ClassError):
        store.publish(idle.code, idle.teacher_key, "lesson", {"a": "1"}, now=1000.0 + 2 * classroom.IDLE_S)


def test_the_301st_student_is_refused_with_a_message(store):
    s = store.start(now=0.0)
    store.seen([], now=0.0)
    for i in range(classroom.MAX_STUDENTS):
        store.join(s.code, f"member-{i}", now=1.0)
    assert store.present(s.code, now=2.0) == (300, 300)
    with pytest.raises(ClassError, match="This class is full: it already has 300 students"):
        store.join(s.code, "member-300", now=2.0)
    store.join(s.code, "member-7", now=2.0)  # one already in (a reload of its session) is not refused
    store.leave([(s.code, "member-0")], now=3.0)
    store.join(s.code, "member-300", now=4.0)  # a place freed
    store.seen([(s.code, f"member-{i}") for i in range(1, 150)], now=classroom.STALE_S + 5.0)
    assert store.present(s.code, now=classroom.STALE_S + 5.0) == (149, 149)  # the unseen no longer count


def test_following_and_leaving_change_the_count_and_the_tally(store):
    s = store.start()
    store.join(s.code, "a")
    store.join(s.code, "b")
    tally = store.versions([s.code])[s.code].tally
    store.follow(s.code, "a", False)
    store.follow(s.code, "a", False)  # no change: no tally
    assert store.present(s.code) == (1, 2)
    assert store.versions([s.code])[s.code].tally == tally + 1
    store.leave([(s.code, "b")])
    assert store.present(s.code) == (0, 1)


def test_a_poll_is_answered_once_anonymously_and_its_answer_stays_hidden_until_revealed(store):
    s = store.start()
    for member in ("member-a", "member-b", "member-c"):
        store.join(s.code, member)
    poll = class_polls.ask(store, s.code, s.teacher_key, {"question": "Which head is positional?",
                                                          "choices": ["head 1", "head 2", "head 3"],
                                                          "answer": "head 2", "why": "It looks one token back."})
    shown = class_polls.current(store, s.code)
    assert (shown.text, shown.options, shown.answer, shown.why, shown.open) == (
        "Which head is positional?", ("head 1", "head 2", "head 3"), (), "", True)
    assert class_polls.current(store, s.code, s.teacher_key).answer == (1,)  # the teacher's view
    class_polls.answer(store, s.code, poll, "member-a", 1)
    class_polls.answer(store, s.code, poll, "member-b", 1)
    with pytest.raises(ClassError, match="already answered this question"):
        class_polls.answer(store, s.code, poll, "member-a", 0)
    for bad, message in ((5, "not one of the choices"), (-1, "not one of the choices"), (True, "not one of")):
        with pytest.raises(ClassError, match=message):
            class_polls.answer(store, s.code, poll, "member-c", bad)
    with pytest.raises(ClassError, match="Join the class"):
        class_polls.answer(store, s.code, poll, "stranger", 0)
    assert class_polls.counts(store, poll) == [0, 2, 0] and class_polls.mine(store, poll, "member-a") == 1
    with pytest.raises(ClassError, match="Only the class's teacher"):
        class_polls.reveal(store, s.code, "not the key")
    class_polls.reveal(store, s.code, s.teacher_key)
    revealed = class_polls.current(store, s.code)
    assert (revealed.answer, revealed.why, revealed.open, revealed.revealed) == ((1,), "It looks one token back.",
                                                                                 False, True)
    with pytest.raises(ClassError, match="closed"):
        class_polls.answer(store, s.code, poll, "member-c", 0)
    rows = list(csv.reader(io.StringIO(class_polls.answers_csv(store, s.code, s.teacher_key))))
    assert rows[0] == ["question_number", "question", "kind", "answer", "right", "seconds_after_asked"]
    assert [r[:5] for r in rows[1:]] == [["1", "Which head is positional?", "choice", "head 2", "yes"]] * 2
    assert "member-" not in class_polls.answers_csv(store, s.code, s.teacher_key)  # anonymous
    with pytest.raises(ClassError):
        class_polls.answers_csv(store, s.code, s.code)
    class_polls.close(store, s.code, s.teacher_key)
    assert class_polls.current(store, s.code) is None


@dataclass(frozen=True)
class TourQuestion:  # the shape the Lesson's active tour keeps its questions in: plain data
    prompt: str
    tokens: tuple[str, ...]
    right: tuple[int, ...]
    explanation: str


def test_a_tour_question_becomes_a_class_poll_in_one_call(store):
    s = store.start()
    store.join(s.code, "a")
    tour = TourQuestion("Which source word will 'gatos' attend to?", ("I", "have", "cats"), (2,),
                        "Cross-attention lines a target word up with its source word.")
    poll = class_polls.ask(store, s.code, s.teacher_key, tour)
    shown = class_polls.current(store, s.code)
    assert (shown.kind, shown.options) == ("token", ("I", "have", "cats"))
    class_polls.answer(store, s.code, poll, "a", 2)
    class_polls.reveal(store, s.code, s.teacher_key)
    assert class_polls.current(store, s.code).answer == (2,)
    assert class_polls.question_from({"text": "Sum to 1?", "choices": ["yes", "no"], "answer": 0}).answer == (0,)
    assert class_polls.question_from({"text": "Pick", "tokens": ["the", "cat", "the"], "answer": [0, 2]}).answer \
        == (0, 2)


@pytest.mark.parametrize("question, message", [
    ({"text": "", "choices": ["a", "b"]}, "needs a text"),
    ({"text": "Q", "choices": ["a"]}, "2 to 6 choices"),
    ({"text": "Q", "choices": list("abcdefg")}, "2 to 6 choices"),
    ({"text": "Q", "choices": ["a", "a"]}, "Two choices are the same"),
    ({"text": "Q", "choices": ["a", "b"], "answer": "c"}, "not one of the options"),
    ({"text": "Q", "choices": ["a", "b"], "answer": 2}, "not one of the options"),
    ({"text": "Q"}, "either choices or"),
    ({"text": "Q", "choices": ["a", "b"], "tokens": ["x"]}, "either choices or"),
    ({"text": "Q", "tokens": ["t"] * 65}, "at most 64 tokens"),
])
def test_a_question_that_cannot_be_asked_gets_one_line(store, question, message):
    s = store.start()
    with pytest.raises(ClassError, match=message):
        class_polls.ask(store, s.code, s.teacher_key, question)


MID_CLASS = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from app.services import class_polls, classroom
    store = classroom.ClassStore(Path(sys.argv[1]))
    s = store.start()
    store.publish(s.code, s.teacher_key, "lesson", {"lesson_stage": "5", "lesson_text": "I have cats"})
    for m in ("a", "b", "c"):
        store.join(s.code, m)
    poll = class_polls.ask(store, s.code, s.teacher_key, {"text": "Q?", "choices": ["x", "y"], "answer": 1})
    class_polls.answer(store, s.code, poll, "a", 1)
    class_polls.answer(store, s.code, poll, "b", 0)
    print(s.code, s.teacher_key, poll, flush=True)
    time.sleep(60)  # killed here, mid-class
""")


def test_the_class_survives_its_process_killed_mid_class(tmp_path):
    path = tmp_path / "classes.sqlite3"
    child = subprocess.Popen([sys.executable, "-c", MID_CLASS, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    code, key, poll = child.stdout.readline().split()
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store = ClassStore(path)  # the next process
    try:
        screen = store.screen(code)
        assert (screen.page, screen.params) == ("lesson", {"lesson_stage": "5", "lesson_text": "I have cats"})
        assert store.present(code) == (3, 3)
        assert class_polls.counts(store, int(poll)) == [1, 1]
        with pytest.raises(ClassError, match="already answered"):
            class_polls.answer(store, code, int(poll), "a", 0)
        class_polls.answer(store, code, int(poll), "c", 1)
        assert store.resume(key) == code  # the teacher takes the class back with its key
        assert store.publish(code, key, "lesson", {"lesson_stage": "6"}) == screen.version + 1
    finally:
        store.close()
