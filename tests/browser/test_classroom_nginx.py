"""A class across two app processes behind Debian's nginx on loopback (``deploy/class_server.py``): the teacher and
its students reach different processes (``ip_hash`` on their source addresses, each on its own /24 of 127/8), and
still every student follows the teacher's Next and every answer reaches the teacher's projector.

The clients are the bench's non-rendering websocket sessions (``bench.classroom_clients``): a teacher who takes the
class back with its key and presses Next, and students who opened the link and only listen.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from app.services import class_polls, classroom
from bench import classroom as bench
from deploy import class_server

STUDENTS = 8


def _needs_nginx() -> None:
    missing = class_server.nginx_missing()
    if missing:
        if os.environ.get("ATTNSCOPE_REQUIRE_NGINX") == "1":
            pytest.fail(missing)
        pytest.skip(missing)


async def _class(url: str, store: classroom.ClassStore) -> dict:
    started = store.start()
    teacher = await bench.teacher_of(url, started, spread=True)
    students = await bench.students_of(url, started.code, STUDENTS, spread=True)
    try:
        stages = [await bench.nexts(teacher, students, presses=2)]
        poll = class_polls.ask(store, started.code, started.teacher_key,
                               {"text": "Which head is positional?", "choices": ["head 1", "head 2"], "answer": 1})
        key = f"class_answer_{poll}"
        await asyncio.gather(*(s.wait_for(lambda s=s: key in s.widgets) for s in students))
        await asyncio.gather(*(s.pick(key, "head 2" if i % 4 else "head 1") for i, s in enumerate(students)))
        await teacher.wait_for(lambda: teacher.text_at(f"**{STUDENTS}** answers", 0.0) is not None, 60)
        return {"teacher": teacher.upstream, "students": [s.upstream for s in students], "delays": stages[0],
                "counts": class_polls.counts(store, poll), "headers": [s.headers[-1][1] for s in students],
                "teacher_header": teacher.headers[-1][1]}
    finally:
        await asyncio.gather(*(c.close() for c in [teacher, *students]), return_exceptions=True)


def test_a_class_split_over_two_processes_behind_nginx_follows_and_counts(tmp_path):
    _needs_nginx()
    with class_server.serving(tmp_path, processes=2, upstream_header=True) as served:
        got = bench._in_thread(_class(served.url, classroom.store_at(tmp_path)))
    processes = {f"127.0.0.1:{port}" for port in served.ports}
    assert set(got["students"]) | {got["teacher"]} == processes  # both processes hold part of the class
    assert any(s != got["teacher"] for s in got["students"])
    assert len(got["delays"]) == 2 * STUDENTS  # every student saw both of the teacher's Next
    assert got["headers"] == [got["teacher_header"]] * STUDENTS and got["teacher_header"].startswith("3. ")
    assert got["counts"] == [2, 6]


def test_the_generated_nginx_config_keeps_the_shipped_one_but_its_servers_and_port():
    shipped = class_server.SITE.read_text()
    made = class_server.site_config([9001, 9002, 9003], 9100)
    assert "server 127.0.0.1:9001;\n    server 127.0.0.1:9002;\n    server 127.0.0.1:9003;" in made
    assert "listen 127.0.0.1:9100;" in made and "server 127.0.0.1:8601;" not in made
    for directive in ("ip_hash;", "proxy_set_header Upgrade $http_upgrade;",
                      "proxy_set_header Connection $connection_upgrade;", "proxy_http_version 1.1;"):
        assert directive in shipped and directive in made
    assert "X-Upstream" not in made and "X-Upstream" in class_server.site_config([1], 2, upstream_header=True)
