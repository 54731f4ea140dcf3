"""Class polls: a question the teacher asks every student of a class at once, answered once and anonymously.

A question has 2–6 choices, or a sentence's tokens to click (a "click a token" question); it may name the right
answer (one index, or several for a token question with more than one right token) and one sentence on why, both
kept from the students until the teacher reveals them. Each student (a session's anonymous member token) answers
once per question: a second try is refused with a message. The students see only the counts, never another's
answer; the teacher exports the answers as CSV without any member token in it.

:func:`ask` takes the Lesson's active-tour questions as they are (plain data with a question text, choices or token
targets, the right answer and a why: see :func:`question_from`), so a tour question becomes a class poll in one call:

    class_polls.ask(store, code, teacher_key, tour_question)

No Streamlit here.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.services.classroom import ClassError, ClassStore, teacher_hash

MIN_CHOICES, MAX_CHOICES = 2, 6
MAX_TOKENS = 64
MAX_QUESTION, MAX_OPTION, MAX_WHY = 300, 80, 400
CHOICE, TOKEN = "choice", "token"


@dataclass(frozen=True)
class Question:
    """A poll's question: ``choices`` (2–6) or ``tokens`` (a sentence's, to click one); ``answer``: the indices of
    the right options (empty: no right answer); ``why``: one sentence shown with the answer."""

    text: str
    choices: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    answer: tuple[int, ...] = ()
    why: str = ""

    def __post_init__(self) -> None:
        if not self.text.strip() or len(self.text) > MAX_QUESTION:
            raise ClassError(f"A question needs a text of 1 to {MAX_QUESTION} characters.")
        if bool(self.choices) == bool(self.tokens):
            raise ClassError("A question has either choices or a sentence's tokens to click, not both.")
        if self.choices and not MIN_CHOICES <= len(self.choices) <= MAX_CHOICES:
            raise ClassError(f"A question has {MIN_CHOICES} to {MAX_CHOICES} choices; this one has "
                             f"{len(self.choices)}.")
        if self.tokens and len(self.tokens) > MAX_TOKENS:
            raise ClassError(f"A click-a-token question shows at most {MAX_TOKENS} tokens.")
        if any(not o.strip() or len(o) > MAX_OPTION for o in self.options):
            raise ClassError(f"Every choice or token needs 1 to {MAX_OPTION} characters.")
        if len(set(self.choices)) != len(self.choices):
            raise ClassError("Two choices are the same.")
        if any(not 0 <= i < len(self.options) for i in self.answer):
            raise ClassError("The right answer is not one of the options.")
        if len(self.why) > MAX_WHY:
            raise ClassError(f"The explanation is over {MAX_WHY} characters.")

    @property
    def kind(self) -> str:
        return TOKEN if self.tokens else CHOICE

    @property
    def options(self) -> tuple[str, ...]:
        return self.choices or self.tokens


@dataclass(frozen=True)
class Poll:
    """A poll as a student may see it: ``answer`` and ``why`` are empty until ``revealed`` (the teacher's view
    has them from the start: :func:`current`)."""

    id: int
    kind: str
    text: str
    options: tuple[str, ...]
    answer: tuple[int, ...]
    why: str
    open: bool
    revealed: bool


def _field(item: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(item, Mapping) and name in item:
            return item[name]
        if not isinstance(item, Mapping) and hasattr(item, name):
            return getattr(item, name)
    return default


def _indices(answer: Any, options: Sequence[str]) -> tuple[int, ...]:
    """A right answer given as an index, an option's text, or several of either."""
    if answer is None:
        return ()
    many = answer if isinstance(answer, (list, tuple, set, frozenset)) else [answer]
    found = []
    for one in many:
        if isinstance(one, bool):
            raise ClassError("The right answer is not one of the options.")
        if isinstance(one, int):
            found.append(one)
        elif isinstance(one, str) and one in options:
            found.append(list(options).index(one))
        else:
            raise ClassError(f"The right answer {str(one)[:40]!r} is not one of the options.")
    return tuple(sorted(set(found)))


def question_from(item: Any) -> Question:
    """A :class:`Question` from plain data: a :class:`Question`, a mapping or any object with these fields (the
    first name found is used):

    * the question: ``text``, ``question`` or ``prompt``;
    * ``choices`` (or ``options``), a list of 2–6 strings; or ``tokens``, a sentence's tokens to click one of
      (a tour's token targets: ``answer`` names the right ones);
    * the right answer: ``answer``, ``right`` or ``correct``: an index, an option's text, or a list of either
      (several right tokens); absent or None: no right answer;
    * ``why`` (or ``explanation``): one sentence shown with the revealed answer.

    Raises:
        ClassError: the question cannot be asked (it says why in one line).
    """
    if isinstance(item, Question):
        return item
    text = _field(item, "text", "question", "prompt", default="")
    choices = tuple(str(c) for c in (_field(item, "choices", "options", default=()) or ()))
    tokens = tuple(str(t) for t in (_field(item, "tokens", default=()) or ()))
    answer = _indices(_field(item, "answer", "right", "correct"), choices or tokens)
    why = str(_field(item, "why", "explanation", default="") or "")
    return Question(str(text), choices, tokens, answer, why)


def ask(store: ClassStore, code: str, teacher_key: str, question: Any, now: float | None = None) -> int:
    """Put ``question`` (anything :func:`question_from` reads) to the class ``code`` (its teacher only), closing
    the question before it; returns the new poll's id. Every student's screen shows it at its next run."""
    q, now = question_from(question), time.time() if now is None else now
    with store.transaction() as db:
        store.touch(db, code, teacher_key, now)
        db.execute("UPDATE polls SET closed = ? WHERE code = ? AND closed IS NULL", (now, code))
        poll = db.execute("INSERT INTO polls (code, kind, question, options, answer, why, opened) VALUES "
                          "(?, ?, ?, ?, ?, ?, ?)", (code, q.kind, q.text, json.dumps(q.options), json.dumps(q.answer),
                                                    q.why, now)).lastrowid
        db.execute("UPDATE classes SET poll = ?, poll_version = poll_version + 1 WHERE code = ?", (poll, code))
    return int(poll)


def current(store: ClassStore, code: str, teacher_key: str | None = None) -> Poll | None:
    """The class's latest poll (open, or closed and still shown); None when none. Its right answer and why are
    empty until revealed, unless ``teacher_key`` is the class's teacher key."""
    rows = store.query("SELECT p.id, p.kind, p.question, p.options, p.answer, p.why, p.closed, p.revealed, "
                       "c.teacher = ? FROM classes c JOIN polls p ON p.id = c.poll WHERE c.code = ?",
                       (teacher_hash(teacher_key) if teacher_key else "", code))
    if not rows:
        return None
    poll, kind, text, options, answer, why, closed, revealed, teacher = rows[0]
    shown = revealed is not None or bool(teacher)
    return Poll(poll, kind, text, tuple(json.loads(options)), tuple(json.loads(answer)) if shown else (),
                why if shown else "", closed is None, revealed is not None)


def answer(store: ClassStore, code: str, poll: int, member: str, choice: int, now: float | None = None) -> None:
    """Count ``member``'s answer ``choice`` to ``poll``; refused (:class:`ClassError`, one line) when it has
    answered already, the poll is closed or not this class's, the choice is not an option, or ``member`` is not
    in the class."""
    now = time.time() if now is None else now
    with store.transaction() as db:
        rows = db.execute("SELECT options, closed FROM polls WHERE id = ? AND code = ?", (poll, code)).fetchall()
        if not rows or rows[0][1] is not None:
            raise ClassError("This question is closed: your teacher has moved on.")
        if not isinstance(choice, int) or isinstance(choice, bool) or not 0 <= choice < len(json.loads(rows[0][0])):
            raise ClassError("That is not one of the choices.")
        if not db.execute("SELECT 1 FROM members WHERE code = ? AND member = ? AND left IS NULL",
                          (code, member)).fetchall():
            raise ClassError("Join the class with its link to answer.")
        if not db.execute("INSERT OR IGNORE INTO answers (poll, member, choice, at) VALUES (?, ?, ?, ?)",
                          (poll, member, choice, now)).rowcount:
            raise ClassError("You have already answered this question: one answer each.")
        db.execute("UPDATE classes SET tally = tally + 1 WHERE code = ?", (code,))


def mine(store: ClassStore, poll: int, member: str) -> int | None:
    """``member``'s own answer to ``poll``, or None."""
    rows = store.query("SELECT choice FROM answers WHERE poll = ? AND member = ?", (poll, member))
    return rows[0][0] if rows else None


def counts(store: ClassStore, poll: int) -> list[int]:
    """How many students chose each option of ``poll``, in the options' order."""
    options = store.query("SELECT options FROM polls WHERE id = ?", (poll,))
    if not options:
        return []
    tally = [0] * len(json.loads(options[0][0]))
    for choice, count in store.query("SELECT choice, count(*) FROM answers WHERE poll = ? GROUP BY choice", (poll,)):
        if 0 <= choice < len(tally):
            tally[choice] = count
    return tally


def _teacher_change(store: ClassStore, code: str, teacher_key: str, statements: Sequence[str],
                    now: float | None) -> None:
    """Run ``statements`` (named parameters ``now``, ``poll``, ``code``) on the class's current poll in one
    transaction, its teacher only."""
    now = time.time() if now is None else now
    with store.transaction() as db:
        store.touch(db, code, teacher_key, now)
        poll = db.execute("SELECT poll FROM classes WHERE code = ?", (code,)).fetchone()[0]
        if poll is None:
            raise ClassError("The class has no question to show.")
        for sql in statements:
            db.execute(sql, {"now": now, "poll": poll, "code": code})
        db.execute("UPDATE classes SET poll_version = poll_version + 1 WHERE code = ?", (code,))


def reveal(store: ClassStore, code: str, teacher_key: str, now: float | None = None) -> None:
    """Show the class the right answer and why (its teacher only); the question closes."""
    _teacher_change(store, code, teacher_key, ["UPDATE polls SET revealed = coalesce(revealed, :now), "
                                               "closed = coalesce(closed, :now) WHERE id = :poll"], now)


def close(store: ClassStore, code: str, teacher_key: str, now: float | None = None) -> None:
    """Stop showing the question (its teacher only): answers are kept for the export."""
    _teacher_change(store, code, teacher_key, ["UPDATE polls SET closed = coalesce(closed, :now) WHERE id = :poll",
                                               "UPDATE classes SET poll = NULL WHERE code = :code"], now)


def answers_csv(store: ClassStore, code: str, teacher_key: str) -> str:
    """Every answer to every question of the class (its teacher only), as CSV: the question's number and text,
    the answer, whether it was right (empty when the question named no right answer) and the seconds after the
    question was asked. Anonymous: no member token, rows ordered by question then time."""
    store.teacher_of(code, teacher_key)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["question_number", "question", "kind", "answer", "right", "seconds_after_asked"])
    polls = store.query("SELECT id, kind, question, options, answer, opened FROM polls WHERE code = ? ORDER BY id",
                        (code,))
    for number, (poll, kind, text, options, right, opened) in enumerate(polls, start=1):
        options, right = json.loads(options), set(json.loads(right))
        for choice, at in store.query("SELECT choice, at FROM answers WHERE poll = ? ORDER BY at", (poll,)):
            writer.writerow([number, text, kind, options[choice] if 0 <= choice < len(options) else "",
                             ("yes" if choice in right else "no") if right else "", f"{at - opened:.1f}"])
    return out.getvalue()
