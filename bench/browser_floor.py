"""Streamlit's own floor under the browser rows (issue 23): the bare page sending as many elements as the app.

    python -m bench browser_floor

Every rerun re-sends each element of the part of the page it reruns, changed or not, and the browser renders each
anew: about a millisecond per element on this machine, whatever the app is (the bare page with 30 unchanged
elements after its chart edits 1.3× slower than without, with 60 1.6×). The goal rows compare every move with the
bare page, which sends four elements; a move of the app that re-sends 40 pays the framework for 40.

For each move, and each Learn page's first draw, this counts the elements and containers the app's rerun (or the
page's load) sends (Chromium's websocket frames read as Streamlit's ``ForwardMsg`` deltas), counts the bare page's
own the same way, and then times the app against the bare page sending as many (``bench/trivial_page.py?extra=N``:
N unchanged captions, Markdown lines and checkboxes after its one chart), in alternation, in the same run. The ratio
is what the app adds beyond what Streamlit takes to draw a page of that many elements with one chart: a move that
redraws more charts (the Lesson's next stage, the summary view), or a page with formulas and several kinds of chart
to load, stands on a higher floor than this one.
"""

from __future__ import annotations

import base64
import statistics
import sys
import time
from collections.abc import Callable, Iterator

from bench import browser_learn as learn
from bench import browser_page as bp
from bench.table import Row

Move = Callable[[object, int], float]  # (page, round) -> milliseconds until drawn
ROUNDS = 6
FIRST = 250  # the edits' sentences: browser.sentence(FIRST - 1 …), used by no other row of the run (none cached)
FLOOR_GOAL = "≤ 1.3× the bare page sending as many elements (Streamlit's floor)"
QUIET_S = 0.4  # after a counted move: the last deltas of a settled page are in


def deltas_in(frames: list[bytes]) -> int:
    """How many of the websocket ``frames`` (Streamlit ``ForwardMsg``s) are deltas: an element or a container
    sent, or a reference to one the browser has cached (a large message sent before), not the script's start, end
    or page messages."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # the bench reads Streamlit's own wire format
    deltas = 0
    for frame in frames:
        message = ForwardMsg()
        message.ParseFromString(frame)
        deltas += message.WhichOneof("type") in ("delta", "ref_hash")
    return deltas


class DeltaCounter:
    """Counts the Streamlit deltas (elements and containers) ``page`` receives over its websocket."""

    def __init__(self, page) -> None:
        self._frames: list[bytes] = []
        session = page.context.new_cdp_session(page)
        session.send("Network.enable")
        session.on("Network.webSocketFrameReceived", self._received)

    def _received(self, event: dict) -> None:
        frame = event["response"]
        if frame.get("opcode") == 2:  # binary: a ForwardMsg
            self._frames.append(base64.b64decode(frame["payloadData"]))

    def count(self, act: Callable[[], object]) -> int:
        """The deltas received while ``act()`` runs and the page then settles."""
        self._frames.clear()
        act()
        time.sleep(QUIET_S)
        return deltas_in(self._frames)


def moves(sentence: Callable[[int], str], explore: str) -> Iterator[tuple[str, str, Move, Move]]:
    """(name, address, the app's move, the bare page's move) for each browser row with a move: Explore's text edit
    and view switch (its layer and head are the canvas's, in the browser: ``bench.browser_canvas``), then each Learn
    page's main control."""
    yield ("Explore: text edit", explore, lambda page, i: bp.submit_ms(page, sentence(FIRST + i)),
           lambda page, i: bp.submit_ms(page, sentence(FIRST + i)))
    yield ("Explore: view switch (summary / generation)", explore,
           lambda page, i: bp.click_ms(page, "view", ("Summary", "Generation")[i % 2]),
           lambda page, i: bp.nudge_ms(page, "layer"))
    for path, (title, control, _, _) in learn.PAGES.items():
        section = f"?{learn.CONTROL_SECTIONS[path]}=true" if path in learn.CONTROL_SECTIONS else ""
        yield (f"{title}: {control}", f"/{path}{section}", lambda page, i, path=path: learn.control_ms(page, path),
               lambda page, i: bp.nudge_ms(page, "layer", mode="page"))


def floor_rows(browser, app: bp.Server, base: bp.Server, goal_row, sentence: Callable[[int], str],
               explore: str) -> list[Row]:
    """One row per Learn page's first draw and per move, each against the bare page sending as many deltas, in
    alternation (one that never settles makes a "not drawn" row)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only where Chromium runs
    cases = [(f"{title}: first draw", f"/{path}", None, None) for path, (title, *_) in learn.PAGES.items()]
    rows = []
    for name, address, app_move, base_move in [*cases, *moves(sentence, explore)]:
        page, floor = bp.new_page(browser), bp.new_page(browser)
        try:
            if app_move is None:
                rows.append(_load_row(page, floor, app.url + address, base.url, name, goal_row))
            else:
                rows.append(_move_row(page, floor, app.url + address, base.url, name, app_move, base_move, goal_row,
                                      edit_first=address == explore))
        except (PlaywrightTimeout, bp.Refused) as error:
            sys.stderr.write(f"browser floor: {name}: not drawn ({error})\n")
            rows.append(Row("browser", f"{name}: not drawn ({type(error).__name__})", FLOOR_GOAL, bp.TIMEOUT_MS, "ms",
                            None, False))
        finally:
            page.context.close()
            floor.context.close()
    return rows


def _load_row(page, floor, address: str, base_url: str, name: str, goal_row) -> Row:
    """A Learn page opened again and again (its first, cold load counted, not timed) against the bare page."""
    sent = DeltaCounter(page).count(lambda: bp.load_ms(page, address, need=0, mode="page"))
    own = DeltaCounter(floor).count(lambda: bp.load_ms(floor, base_url, mode="page"))
    extra = f"{base_url}/?extra={max(sent - own, 0)}"
    bp.load_ms(floor, extra, mode="page")
    times, floor_times = [], []
    for _ in range(learn.LOADS):
        times.append(bp.load_ms(page, address, need=0, mode="page"))
        floor_times.append(bp.load_ms(floor, extra, mode="page"))
    return _row(name, sent, own, "a load", times, floor_times, goal_row)


def _move_row(page, floor, address: str, base_url: str, name: str, app_move: Move, base_move: Move,
              goal_row, edit_first: bool) -> Row:
    """A move of the page at ``address`` (Explore's with ``edit_first``: one untimed edit, then a chart is there):
    its deltas counted once, then timed against the bare page's."""
    bp.load_ms(page, address, **({} if edit_first else {"need": 0, "mode": "page"}))
    if edit_first:  # the first edit loads nothing the timed moves need
        bp.submit_ms(page, "the first text of the session")
    bp.load_ms(floor, base_url)
    sent = DeltaCounter(page).count(lambda: app_move(page, -1))
    own = DeltaCounter(floor).count(lambda: base_move(floor, -1))
    bp.load_ms(floor, f"{base_url}/?extra={max(sent - own, 0)}")
    times, floor_times = [], []
    for i in range(ROUNDS):
        times.append(app_move(page, i))
        floor_times.append(base_move(floor, i))
    return _row(name, sent, own, "a rerun", times, floor_times, goal_row)


def _row(name: str, sent: int, own: int, per: str, times: list[float], floor_times: list[float], goal_row) -> Row:
    sys.stderr.write(f"browser floor: {name}: {sent} deltas {per} (the bare page {own}): "
                     f"{statistics.median(times):.0f} vs {statistics.median(floor_times):.0f} ms\n")
    return goal_row(f"{name} against the bare page sending as many elements, {sent} {per} (median of "
                    f"{len(times)})", times, floor_times, goal=FLOOR_GOAL)


def run() -> list[Row]:
    """The floor rows alone, the app and the bare page served as ``python -m bench browser`` serves them."""
    from bench import browser  # the section's servers, sentences and verdicts (it imports this module)
    return browser.served_rows(lambda chromium, app, base: floor_rows(chromium, app, base, browser.goal_row,
                                                                      browser.sentence, browser.EXPLORE))
