"""Before/after of two checkouts in the browser, in ONE run: ``python -m bench.ab_browser BEFORE AFTER ACTION``.

Each checkout serves the app (``streamlit run``, as ``python -m bench browser`` serves it) and the bare page of
this checkout is served beside them; one Chromium drives all three in alternation, round after round, so load on
a shared machine hits them alike. Prints each one's median and after ÷ before. BEFORE and AFTER are checkout
folders (``git worktree add /tmp/before main``). ACTION: ``edit`` (an Explore text edit, every chart redrawn),
``view`` (Explore's view switched between the model view and the summary), or a Learn page's main control by its
path in :data:`bench.browser_learn.PAGES` (``masks``, ``architecture``, …; timed until the page settles), or
``open:PATH``, a Learn page opened anew each round (a new session, the browser's cache warm) and timed until it
settles, against the bare page opened the same way.
Example: ``python -m bench.ab_browser /tmp/before . masks --rounds 8``; ``--fresh 2`` times each round's action on a
page just opened and read for 2 s (the Lesson's first Next).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench import browser_page as bp
from bench.browser import APP, BASE, EXPLORE, sentence
from bench.browser_learn import CONTROL_SECTIONS, PAGES, control_ms


def _opened(browser, server: bp.Server, action: str, bare: bool):
    """A page of ``server`` ready for ``action`` (the bare page: its own text and slider)."""
    page = bp.new_page(browser)
    if bare:
        bp.load_ms(page, server.url)
    elif action in ("edit", "view"):
        bp.load_ms(page, server.url + EXPLORE)
        bp.submit_ms(page, sentence(200))  # the first edit loads nothing the timed ones need
    elif action.startswith("open:"):
        bp.load_ms(page, f"{server.url}/{action.removeprefix('open:')}", need=0, mode="page")
    else:
        section = f"?{CONTROL_SECTIONS[action]}=true" if action in CONTROL_SECTIONS else ""
        bp.load_ms(page, f"{server.url}/{action}{section}", need=0, mode="page")
    return page


def _act(page, action: str, bare: bool, round_: int) -> float:
    """Milliseconds of one ``action`` on ``page`` (the bare page: its text or its slider, timed the same way)."""
    if action == "edit":
        return bp.submit_ms(page, sentence(210 + round_))
    if action.startswith("open:"):  # the same address again: a new session
        return bp.load_ms(page, page.url) if bare else bp.load_ms(page, page.url, need=0, mode="page")
    if bare:
        return bp.nudge_ms(page, "layer")
    if action == "view":
        return bp.click_ms(page, "view", "Summary" if round_ % 2 == 0 else "Model view")
    return control_ms(page, action)


def compare(before: Path, after: Path, action: str, rounds: int, fresh: float | None = None) -> dict[str, list[float]]:
    """The milliseconds of ``rounds`` alternating actions on the before and after apps and the bare page; with
    ``fresh``, each round acts once on a page just opened (a new session), ``fresh`` seconds after it was drawn
    (a reader's pause: what the page does while idle counts, as a first move after opening it)."""
    times: dict[str, list[float]] = {"before": [], "after": [], "bare page": []}
    with tempfile.TemporaryDirectory(prefix="attnscope-ab-") as folder, ExitStack() as stack:
        runs = Path(folder)
        servers = {"before": stack.enter_context(bp.served(APP, runs, runs / "before.log", before.resolve())),
                   "after": stack.enter_context(bp.served(APP, runs, runs / "after.log", after.resolve())),
                   "bare page": stack.enter_context(bp.served(BASE, runs, runs / "bare.log"))}
        browser = stack.enter_context(bp.chromium())
        pages = {name: _opened(browser, server, action, name == "bare page") for name, server in servers.items()}
        for round_ in range(rounds):
            for name, page in pages.items():
                if fresh is not None:
                    page.context.close()
                    page = pages[name] = _opened(browser, servers[name], action, name == "bare page")
                    time.sleep(fresh)
                times[name].append(_act(page, action, name == "bare page", round_))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("action", choices=["edit", "view", *PAGES, *(f"open:{path}" for path in PAGES)])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--fresh", type=float, default=None, metavar="SECONDS",
                        help="act once per round on a page just opened, SECONDS after it was drawn")
    args = parser.parse_args()
    missing = bp.chromium_missing()
    if missing:
        raise SystemExit(f"cannot run: {missing}")
    times = compare(args.before, args.after, args.action, args.rounds, args.fresh)
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    for name, samples in times.items():
        print(f"{name:10s} median {medians[name]:7.1f} ms  ({', '.join(f'{t:.0f}' for t in samples)})")
    print(f"after ÷ before: {medians['after'] / medians['before']:.2f}")


if __name__ == "__main__":
    main()
