"""Issue 28, K1 through the app: an uploaded model's tokenizer never holds the server.

A ``tokenizer.json`` whose split regex nests quantifiers (``(a+)+$``) or repeats overlapping
alternatives (``(a|aa)+$``) is refused when the upload is read; one that backtracks polynomially
(``a*a*a*a*a*$``: the static check lets it through) is stopped by the worker process at
the gate's run time (the uploaded model's explanation runs wholly in its worker process, which
tokenizes there), or panics in native code there. Either way the page shows one
``st.error`` line within seconds, and the interpreter stays free throughout: a ticker thread of the
same process keeps ticking (no native call holds the GIL), as the server's health handler would.
"""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from pathlib import Path

import pytest

from app import resources
from tests.helpers.apptest_helpers import open_page
from tests.helpers.pretrained_files import write_tiny_bert
from tests.helpers.uploads import uploader_key

SLOW = ("a" * 28 + "b") * 700  # 20,300 characters: ~30 s of backtracking in all
PANIC = "a" * 19_990 + "b"  # one match attempt past Oniguruma's retry limit (within the 20,000 characters read): a
# PanicException in native code


def hostile_zip(folder: Path, pattern: str) -> bytes:
    """A tiny BERT folder, zipped, whose tokenizer splits words with ``pattern``."""
    write_tiny_bert(folder)
    spec = json.loads((folder / "tokenizer.json").read_text())
    spec["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    (folder / "tokenizer.json").write_text(json.dumps(spec))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, path.name)
    return buffer.getvalue()


class Ticker:
    """A thread that ticks every 10 ms; ``longest_gap`` is the longest the interpreter kept it waiting."""

    def __init__(self) -> None:
        self.stop, self.ticks = threading.Event(), [time.perf_counter()]
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        while not self.stop.wait(0.01):
            self.ticks.append(time.perf_counter())

    def __enter__(self) -> Ticker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(5)

    @property
    def longest_gap(self) -> float:
        return max(b - a for a, b in zip(self.ticks, self.ticks[1:]))


@pytest.mark.parametrize("pattern, text, refusal", [
    (r"(a+)+$", SLOW, "nests one repeated part inside another"),  # refused by the static check
    (r"(a|aa)+$", SLOW, "repeats alternatives that can match the same text"),  # refused by the static check
    (r"a*a*a*a*a*$", SLOW, "longer than 2 s and was stopped"),  # polynomial, passes the check: the deadline
    (r"a*a*a*a*a*$", PANIC, "tokenizing failed in the tokenizers library: Onig"),  # a native panic (a BaseException), caught in the worker
])
def test_a_backtracking_uploaded_tokenizer_is_refused_within_seconds_and_never_holds_the_server(
        runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str, text: str, refusal: str) -> None:
    monkeypatch.setattr(resources.GATE, "run_s", 2.0)  # the worker's deadline is the gate's own run time
    data = hostile_zip(tmp_path / "bert", pattern)
    at = open_page("explore")
    at.file_uploader(key=uploader_key(at)).upload("hostile.zip", data).run()
    assert not at.exception, [e.message for e in at.exception]
    if at.error:  # the static check refused the upload itself
        assert refusal in at.error[0].value and "\n" not in at.error[0].value
        return
    assert at.session_state["ckpt"].startswith("upload:")
    at.text_area(key="text").input("ba").run()  # an honest text works (and starts the worker)
    assert not at.exception and not at.error
    with Ticker() as ticker:
        started = time.perf_counter()
        at.text_area(key="text").input(text).run(timeout=60)
        took = time.perf_counter() - started
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and refusal in errors[0] and "\n" not in errors[0], errors
    assert took < 15.0  # the regex alone would run for hours on 20,000 characters
    assert ticker.longest_gap < 2.0  # the interpreter was free all along (the regex alone runs ~30 s)
    at.text_area(key="text").input("ab").run()  # a fresh worker: the tab still works
    assert not at.exception and not at.error, [e.value for e in at.error]
