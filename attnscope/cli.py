"""``attnscope COMMAND …``: the app and the command-line tools of a checkout, installed as one command.

- ``attnscope serve [--models DIR] [--port N]`` runs the web app (``python -m streamlit run app/streamlit_app.py``);
- ``attnscope explain | train | evaluate | report | import …`` are ``python -m core``'s commands.

The checkout is the folder above this package; it must hold ``core/`` and ``app/`` (``pip install -e .``, an
editable install, keeps it so). A copy installed without them says so in one line.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_COMMANDS = ("explain", "train", "evaluate", "report", "import")


def checkout() -> Path:
    """The checkout this command belongs to (added to the import path).

    Raises:
        SystemExit: no ``core/`` and ``app/`` beside this package: it was installed without them.
    """
    if not (ROOT / "core" / "__init__.py").is_file() or not (ROOT / "app" / "streamlit_app.py").is_file():
        raise SystemExit("error: attnscope runs from its checkout: install it with `pip install -e .` there")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return ROOT


def serve(argv: list[str]) -> int:
    """Run the app in the foreground until it is stopped; returns Streamlit's exit status."""
    parser = argparse.ArgumentParser(prog="attnscope serve", description="Run the Attnscope web app.")
    parser.add_argument("--models", metavar="DIR", help="list the models under DIR in the sidebar's picker")
    parser.add_argument("--port", type=int, default=8501, help="the port to serve on (default 8501)")
    args = parser.parse_args(argv)
    root = checkout()
    command = [sys.executable, "-m", "streamlit", "run", str(root / "app" / "streamlit_app.py"),
               "--server.port", str(args.port)]
    if args.models:
        command += ["--", "--models", os.path.abspath(args.models)]
    return subprocess.call(command, cwd=root)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv`` (default: the command line) to ``serve`` or one of ``python -m core``'s commands."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("serve", *CORE_COMMANDS):
        sys.stdout.write(__doc__.split("\n\n")[1] + "\n")
        return 0 if not argv or argv[0] in ("-h", "--help") else 2
    if argv[0] == "serve":
        return serve(argv[1:])
    checkout()
    from core.cli import main as core_main
    return core_main(argv)
