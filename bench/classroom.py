"""``python -m bench classroom``: a class on one server, and two classes on two processes behind nginx.

Every session is a non-rendering websocket client on loopback (``bench.classroom_clients``): a teacher, who takes
the class back with its teacher key and then presses the Lesson's Next as a browser would, and N students who
opened the class link and only listen. Rows (goals from the class issue):

* a teacher's Next reaches every student's page (the new stage's header, the stage's first element, received):
  30 students p95 ≤ 1.0 s, 100 students p95 ≤ 2.0 s;
* an idle class of 100 (nobody moves for :data:`IDLE_S`): the server's CPU ≤ 5 % of one core;
* 100 answers to a class poll counted and shown on the teacher's projector (its chart names the count) within
  1 s of the last answer sent;
* the same three with two processes behind Debian's nginx (``deploy/``), two classes of 50 at once (100 students on
  the server: the 100-student goal), clients spread over loopback addresses for ``ip_hash`` (skipped with a line
  where nginx is missing);
* where the time of a Next goes: the server's CPU per student per Next (each following student's session runs the
  Lesson page anew: its sidebar, the class banner and the stage, about 70 Streamlit elements), against one
  session's own Next (the page's fragment alone) measured in the same run.

The bench's clients run in this process, on the same two cores as the server.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from app.services import class_polls, classroom
from bench.browser_page import Server
from bench.classroom_clients import Client, open_all
from bench.table import Row

NEXTS = 6  # Next presses per measurement
IDLE_S = 20.0
SETTLE_S = 3.0


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes ``pids`` so far."""
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def source(index: int) -> str:
    """A loopback address for client ``index``, a different /24 each (nginx's ``ip_hash`` keys on three octets)."""
    return f"127.0.{1 + index % 250}.{1 + index // 250}"


async def teacher_of(url: str, started: classroom.Started, index: int = 0, spread: bool = False) -> Client:
    """A teacher's session on the Lesson, holding the class (taken back with its key, as after a reload)."""
    teacher = await Client(url, page="lesson", source=source(10_000 + index) if spread else None).open()
    await teacher.wait_for(lambda: teacher.finished >= 1 and "class_resume" in teacher.widgets)
    runs = teacher.finished
    await teacher.type_and_press("class_resume_key", started.teacher_key, "class_resume")
    await teacher.wait_for(lambda: teacher.finished > runs and "class_end" in teacher.widgets)
    await asyncio.sleep(SETTLE_S)  # the class banner above the Lesson moved its fragment: the run has said so
    return teacher


async def students_of(url: str, code: str, count: int, first: int = 0, spread: bool = False) -> list[Client]:
    """``count`` students who opened the class link, each once it shows the teacher's stage."""
    students = [Client(url, query=f"class={code}", source=source(first + i) if spread else None)
                for i in range(count)]
    await open_all(students)
    await asyncio.gather(*(s.wait_for(lambda s=s: s.header_at("", 0.0) is not None) for s in students))
    return students


async def nexts(teacher: Client, students: list[Client], presses: int = NEXTS, pids: list[int] | None = None,
                cpu: list[float] | None = None) -> list[float]:
    """Seconds from each Next pressed to each student's new stage header (and, given ``pids``, the servers' CPU
    seconds of each Next appended to ``cpu``)."""
    delays = []
    first = int(teacher.headers[-1][1].split(".")[0])
    for n in range(presses):
        stage = f"{first + n + 1}."
        before = cpu_seconds(pids) if pids else 0.0
        sent = await teacher.press("lesson_next")
        await asyncio.gather(*(s.wait_for(lambda s=s: s.header_at(stage, sent) is not None) for s in students))
        delays += [s.header_at(stage, sent) - sent for s in students]
        await asyncio.sleep(1.0)
        if pids and cpu is not None:
            cpu.append(cpu_seconds(pids) - before)
    return delays


async def alone(teacher: Client, pids: list[int], presses: int = 20) -> float:
    """The server's CPU seconds per Next (or Back) of the teacher with no class following (the baseline): the
    total over ``presses`` of them, as the CPU clock ticks in hundredths of a second."""
    before = cpu_seconds(pids)
    for key, stage in (("lesson_next", "2."), ("lesson_prev", "1.")) * (presses // 2):
        sent = await teacher.press(key)
        await teacher.wait_for(lambda: teacher.header_at(stage, sent) is not None)
        await asyncio.sleep(0.3)
    return (cpu_seconds(pids) - before) / presses  # the pauses' idle share is under 1 % of a core


async def answers(store: classroom.ClassStore, started: classroom.Started, teacher: Client,
                  students: list[Client]) -> float:
    """Seconds from the last of the students' answers sent to the teacher's chart counting them all."""
    poll = class_polls.ask(store, started.code, started.teacher_key,
                           {"text": "Which token does 'cats' attend to most?", "choices": ["I", "have", "cats"],
                            "answer": 2, "why": "Its own position."})
    key = f"class_answer_{poll}"
    await asyncio.gather(*(s.wait_for(lambda s=s: key in s.widgets) for s in students))
    sent = await asyncio.gather(*(s.pick(key, ["I", "have", "cats"][i % 3]) for i, s in enumerate(students)))
    last = max(sent)
    needle = f"**{len(students)}** answers"
    await teacher.wait_for(lambda: teacher.text_at(needle, 0.0) is not None)
    return max(0.0, teacher.text_at(needle, 0.0) - last)


async def one_class(url: str, store: classroom.ClassStore, pids: list[int], sizes: tuple[int, ...]) -> dict:
    """The Next delays for each class size, the idle CPU share and the answers' delay for the largest."""
    started = store.start()
    teacher = await teacher_of(url, started)
    got, students = {"alone": await alone(teacher, pids)}, []
    try:
        for size in sizes:
            students += await students_of(url, started.code, size - len(students), len(students))
            await asyncio.sleep(SETTLE_S)
            cpu: list[float] = []
            got[size] = await nexts(teacher, students, pids=pids, cpu=cpu)
            got[f"cpu{size}"] = (statistics.median(cpu) - got["alone"]) / size  # the teacher's own run left out
        await asyncio.sleep(SETTLE_S)
        before, start = cpu_seconds(pids), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        got["idle"] = (cpu_seconds(pids) - before) / (time.perf_counter() - start)
        got["answers"] = await answers(store, started, teacher, students)
    finally:
        await asyncio.gather(*(c.close() for c in [teacher, *students]), return_exceptions=True)
    return got


async def two_classes(url: str, store: classroom.ClassStore, pids: list[int], size: int = 50) -> dict:
    """Two classes of ``size`` at once behind nginx: Next delays of both, idle CPU of both processes, answers."""
    classes = [store.start(), store.start()]
    teachers = [await teacher_of(url, c, i, spread=True) for i, c in enumerate(classes)]
    groups = [await students_of(url, c.code, size, i * size, spread=True) for i, c in enumerate(classes)]
    try:
        await asyncio.sleep(SETTLE_S)
        delays = await asyncio.gather(*(nexts(t, g) for t, g in zip(teachers, groups)))
        await asyncio.sleep(SETTLE_S)
        before, start = cpu_seconds(pids), time.perf_counter()
        await asyncio.sleep(IDLE_S)
        idle = (cpu_seconds(pids) - before) / (time.perf_counter() - start)
        shown = await asyncio.gather(*(answers(store, c, t, g) for c, t, g in zip(classes, teachers, groups)))
        spread = {s.upstream for g in groups for s in g} | {t.upstream for t in teachers}
    finally:
        await asyncio.gather(*(c.close() for c in [*teachers, *sum(groups, [])]), return_exceptions=True)
    return {"next": sum(delays, []), "idle": idle, "answers": max(shown), "processes": len(spread - {""})}


def _in_thread(coroutine) -> dict:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def single(profile: bool = False) -> list[Row]:
    """The one-process rows."""
    with tempfile.TemporaryDirectory() as folder:
        runs = Path(folder)
        server = Server("app/streamlit_app.py", runs, runs / "server.log")
        try:
            server.wait_ready()
            got = _in_thread(one_class(server.url, classroom.store_at(runs), [server.process.pid], (30, 100)))
        finally:
            server.stop()
    return [
        Row("classroom", "a teacher's Next → 30 students' new stage, p95 (1 process)", "≤ 1.0 s", p95(got[30]), "s",
            None, p95(got[30]) <= 1.0),
        Row("classroom", "a teacher's Next → 100 students' new stage, p95 (1 process)", "≤ 2.0 s", p95(got[100]),
            "s", None, p95(got[100]) <= 2.0),
        Row("classroom", "an idle class of 100: the server's CPU (1 process)", "≤ 5 % of a core",
            got["idle"] * 100, "%", None, got["idle"] <= 0.05),
        Row("classroom", "100 answers → the projector's chart counts them all, after the last", "≤ 1.0 s",
            got["answers"], "s", None, got["answers"] <= 1.0),
        Row("classroom", "the server's CPU per following student per Next, 100 students (baseline: the teacher's "
            "own Next, no class)", "", got["cpu100"] * 1e3, "ms", got["alone"] * 1e3),
    ]


def behind_nginx() -> list[Row]:
    """The two-process rows (or one row saying why they were skipped)."""
    from deploy import class_server

    missing = class_server.nginx_missing()
    if missing:
        return [Row("classroom", f"2 processes behind nginx: skipped ({missing})", "", float("nan"), "")]
    with tempfile.TemporaryDirectory() as folder, class_server.serving(Path(folder), processes=2,
                                                                       upstream_header=True) as served:
        got = _in_thread(two_classes(served.url, classroom.store_at(Path(folder)), served.pids))
    where = f"2 processes behind nginx, 2 classes of 50 (clients on {got['processes']} processes)"
    return [
        Row("classroom", f"a teacher's Next → every student's new stage, p95 ({where})", "≤ 2.0 s",
            p95(got["next"]), "s", None, p95(got["next"]) <= 2.0),
        Row("classroom", f"idle: both processes' CPU per 100 students ({where})", "≤ 5 % of a core",
            got["idle"] * 100, "%", None, got["idle"] <= 0.05),
        Row("classroom", f"50 answers → the projector counts them all, slower class ({where})", "≤ 1.0 s",
            got["answers"], "s", None, got["answers"] <= 1.0),
    ]


def run() -> list[Row]:
    """The classroom section's rows (``python -m bench classroom``)."""
    return single() + behind_nginx()


if __name__ == "__main__":
    from bench.table import markdown
    sys.stdout.write(markdown(run()) + "\n")
