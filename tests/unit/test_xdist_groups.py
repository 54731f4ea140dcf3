"""The README's test command runs ``pytest -n auto --dist loadgroup`` so that every browser test runs on one worker,
in file order (tests/conftest.py marks them ``xdist_group("browser")``): a module's tests may share one served app
and build on each other (the classroom's projector test follows its class test). pytest 9.2 with pytest-xdist 3.8
silently dropped the groups; this runs a tiny suite the same way and fails if the group is split."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFTEST = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()
HOOK = CONFTEST[CONFTEST.index("@pytest.hookimpl(tryfirst=True)  # before xdist"):CONFTEST.index("item.add_marker(")]


def test_every_browser_test_runs_on_one_worker(tmp_path):
    (tmp_path / "browser").mkdir()
    (tmp_path / "conftest.py").write_text("from pathlib import Path\nimport pytest\n\n\n" + HOOK
                                          + 'item.add_marker(pytest.mark.xdist_group("browser"))\n')
    for n in range(4):
        (tmp_path / "browser" / f"test_m{n}.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
        (tmp_path / f"test_u{n}.py").write_text("def test_u():\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider",
                          "-p", "no:randomly", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    workers = set(re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED \S*browser/", run.stdout))
    assert len(re.findall(r"PASSED \S*browser/", run.stdout)) == 8 and len(workers) == 1, run.stdout[-2000:]
