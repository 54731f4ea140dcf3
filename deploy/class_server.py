"""Serve Attnscope as N app processes behind Debian's nginx, for a class larger than one process holds.

    python deploy/class_server.py --processes 2 --port 8500 --host 192.168.1.20

starts N ``streamlit run`` processes on consecutive loopback ports (``--first-port`` on), all on one data folder
(``--data``, else ``$ATTNSCOPE_RUNS``, else ``runs/``): they share its class store, so a class's teacher and students
may sit on different processes. Unless ``--no-nginx``, it then runs its own nginx (Debian's ``/usr/sbin/nginx``,
no root needed: its configuration, pid file, logs and temporary files live in a folder of their own) on ``--port``,
configured from ``deploy/attnscope.nginx.conf`` (the same file the system-wide set-up installs) with this run's
processes and port: ``ip_hash`` affinity and the websocket upgrade headers. Ctrl+C stops everything.
``--host`` names the address the students type (repeat it for several); it is added to each process's allowed hosts.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(__file__).with_name("attnscope.nginx.conf")
NGINX = "/usr/sbin/nginx"
READY_S = 120.0


def nginx_path() -> str | None:
    return shutil.which("nginx") or (NGINX if Path(NGINX).exists() else None)


def nginx_missing() -> str | None:
    """Why nginx cannot run here (apt-get install nginx), or None."""
    return None if nginx_path() else "nginx is not installed (apt-get install nginx)"


def site_config(ports: list[int], listen: int, address: str = "127.0.0.1", upstream_header: bool = False) -> str:
    """``deploy/attnscope.nginx.conf`` with its upstream's servers on ``ports`` and listening on ``address``:``listen``;
    ``upstream_header``: each response says which process answered (``X-Upstream``: for tests)."""
    text = SITE.read_text(encoding="utf-8")
    servers = "".join(f"    server 127.0.0.1:{port};\n" for port in ports)
    text = re.sub(r"(?:    server 127\.0\.0\.1:\d+;\n)+", servers, text, count=1)
    text = re.sub(r"listen 80;", f"listen {address}:{listen};", text, count=1)
    if upstream_header:
        text = text.replace("proxy_pass http://attnscope;", "proxy_pass http://attnscope;\n"
                            "        add_header X-Upstream $upstream_addr always;")
    return text


def nginx_config(folder: Path, site: str) -> str:
    """A whole nginx configuration for a private instance in ``folder`` serving ``site``."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # as root, workers would run as nobody: not in the folder
    temp = "".join(f"    {kind}_temp_path {folder / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi",
                                                                             "scgi"))
    return (f"{user}worker_processes 1;\nworker_rlimit_nofile 8192;\ndaemon off;\npid {folder / 'nginx.pid'};\n"
            f"error_log {folder / 'error.log'} warn;\nevents {{ worker_connections 4096; }}\n"
            f"http {{\n    access_log {folder / 'access.log'};\n{temp}{site}\n}}\n")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _wait(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while not _healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not start:\n{log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)


@contextmanager
def _process(command: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass(frozen=True)
class Served:
    """What is running: the students' address (``url``), the app processes' ports and pids."""

    url: str
    ports: list[int]
    pids: list[int]


def app_command(port: int, hosts: list[str]) -> list[str]:
    """One app process on loopback ``port`` accepting the Host names ``hosts`` besides the loopback ones."""
    allowed = [arg for host in ["localhost", "127.0.0.1", *hosts] for arg in ("--server.allowedHosts", host)]
    return [sys.executable, "-m", "streamlit", "run", "app/streamlit_app.py", "--server.port", str(port),
            "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
            *allowed]


def free_ports(count: int) -> list[int]:
    """``count`` consecutive free loopback ports."""
    import socket
    for first in range(8601, 9000, count):
        taken = False
        for port in range(first, first + count + 1):
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    taken = True
                    break
        if not taken:
            return list(range(first, first + count + 1))
    raise OSError("no free ports")


@contextmanager
def serving(data: Path, processes: int = 2, port: int | None = None, first_port: int | None = None,
            hosts: list[str] | None = None, nginx: bool = True, upstream_header: bool = False,
            address: str = "127.0.0.1") -> Iterator[Served]:
    """N app processes on ``data`` and (``nginx``) nginx in front on ``address``:``port``, ready; everything stops
    on exit.
    Ports not given are free ones found here (the first ``processes`` for the app, the next for nginx)."""
    found = free_ports(processes) if first_port is None or port is None else []
    ports = list(range(first_port, first_port + processes)) if first_port is not None else found[:processes]
    listen = port if port is not None else found[-1]
    env = {**os.environ, "ATTNSCOPE_RUNS": str(data), "PYTHONPATH": str(ROOT)}
    data.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="attnscope-nginx-") as scratch:
        folder = Path(scratch)
        apps = [stack.enter_context(_process(app_command(p, hosts or []), folder / f"app-{p}.log", env))
                for p in ports]
        for p, app in zip(ports, apps):
            _wait(f"http://127.0.0.1:{p}", app, folder / f"app-{p}.log")
        url = f"http://127.0.0.1:{ports[0]}"
        if nginx:  # checked through loopback whatever it listens on
            (folder / "nginx.conf").write_text(nginx_config(folder, site_config(ports, listen, address, upstream_header)))
            proxy = stack.enter_context(_process([nginx_path() or NGINX, "-p", str(folder), "-e",
                                                  str(folder / "error.log"), "-c", str(folder / "nginx.conf")],
                                                 folder / "nginx.out", env))
            url = f"http://{'127.0.0.1' if address in ('0.0.0.0', '127.0.0.1') else address}:{listen}"
            _wait(url, proxy, folder / "error.log")
        yield Served(url, ports, [a.pid for a in apps])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python deploy/class_server.py", description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2, help="app processes (default 2: one per core)")
    parser.add_argument("--port", type=int, default=8500, help="nginx's port, the students' address")
    parser.add_argument("--address", default="0.0.0.0", help="where nginx listens (default: every interface)")
    parser.add_argument("--first-port", type=int, default=8601, help="the first app process's port")
    parser.add_argument("--host", action="append", default=[], help="an address the students type")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("ATTNSCOPE_RUNS", ROOT / "runs")))
    parser.add_argument("--no-nginx", action="store_true", help="the processes only (a system-wide nginx in front)")
    args = parser.parse_args(argv)
    if not args.no_nginx and nginx_missing():
        parser.error(nginx_missing())
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop as on Ctrl+C
    with serving(args.data, args.processes, args.port, args.first_port, args.host, not args.no_nginx,
                 address=args.address) as served:
        where = f" behind nginx on {args.address}:{args.port}" if not args.no_nginx else ""
        print(f"serving {args.processes} processes on ports {served.ports[0]}–{served.ports[-1]}{where}; "
              "Ctrl+C stops", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
