"""The README does not lie: its quick-start commands are the ones CI runs, every file it links to exists, and it
stays a front door of at most 350 lines (its Python examples, and docs/'s, run in ``tests/e2e/test_readme_examples.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "RESULTS.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")  # a Markdown link's or image's target


def _anchor(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # no headings inside code
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)} links to what is not there: {broken}"


def test_the_readme_is_a_front_door() -> None:
    lines = README.count("\n")
    assert lines <= 350, (f"README.md has {lines} lines: keep it a front door (at most 350); run records belong in "
                          "bench/RESULTS.md and full references in docs/")


def test_quick_start_has_exactly_two_commands_that_ci_runs():
    quick_start = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [block.strip() for block in re.findall(r"```bash\n(.*?)```", quick_start, flags=re.S)]
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    run_marker, test_marker = quick_start.index("ci:run-command"), quick_start.index("ci:test-command")
    assert run_marker < quick_start.index(commands[0]) < test_marker < quick_start.index(commands[1])
    assert "streamlit run app/streamlit_app.py" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "ci:run-command" in ci and "ci:test-command" in ci
