"""Before/after of two checkouts in the browser, in ONE run: ``python -m bench.ab_browser BEFORE AFTER ACTION``.

Each checkout serves the app (``streamlit run``, as ``python -m bench browser`` serves it) and the bare page of
this checkout is served beside them; one Chromium drives all three in alternation, round after round, so load on
a shared machine hits them alike. Prints each one's median and after ÷ before. BEFORE and AFTER are checkout
folders (``git worktree add /tmp/before main``). ACTION: ``edit`` (an Explore text edit, every chart redrawn),
``view`` (Explore's view switched between the model view and the summary), or a Learn page's main control by its
path in :data:`bench.browser_learn.PAGES` (``masks``, ``architecture``, …; timed until the page settles), or
``open:PATH``, a Learn page opened anew each round (a new session, the browser's cache warm) and timed until it
settles, against the bare page opened the same way, or ``map:NAME``, a big map (``head512``, ``model512``,
``head2048``, ``smollm2``: :func:`bench.browser.big_map_cases`) drawn for a new text each round, against the bare
page drawing its 400 × 400 heatmap (as ``python -m bench browser``'s big-map rows).
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

from bench import browser_models as models
from bench import browser_page as bp
from bench.browser import APP, BASE, EXPLORE, MAP_KEYS, MAX_SIDE, PAUSE_S, big_map_cases, sentence
from bench.browser_learn import CONTROL_SECTIONS, PAGES, control_ms


def _opened(browser, server: bp.Server, action: str, bare: bool, texts: list[str]):
    """A page of ``server`` ready for ``action`` (the bare page: its own text and slider; ``texts``: a big map's)."""
    page = bp.new_page(browser)
    if bare:
        bp.load_ms(page, server.url + (f"/?size={MAX_SIDE}" if texts else ""))
    elif texts:  # a big map: its address, and the model's load and first run untimed
        bp.load_ms(page, server.url + action, need=0)
        bp.submit_ms(page, texts[0], only=MAP_KEYS)
    elif action in ("edit", "view"):
        bp.load_ms(page, server.url + EXPLORE)
        bp.submit_ms(page, sentence(200))  # the first edit loads nothing the timed ones need
    elif action.startswith("open:"):
        bp.load_ms(page, f"{server.url}/{action.removeprefix('open:')}", need=0, mode="page")
    else:
        section = f"?{CONTROL_SECTIONS[action]}=true" if action in CONTROL_SECTIONS else ""
        bp.load_ms(page, f"{server.url}/{action}{section}", need=0, mode="page")
    return page


def _act(page, action: str, bare: bool, round_: int, texts: list[str]) -> float:
    """Milliseconds of one ``action`` on ``page`` (the bare page: its text or its slider, timed the same way)."""
    if texts:  # after a reader's pause: the app's gate asks a session to rest after a long run
        time.sleep(PAUSE_S)
        return bp.submit_ms(page, f"map {round_}" if bare else texts[1 + round_], only=None if bare else MAP_KEYS)
    if action == "edit":
        return bp.submit_ms(page, sentence(210 + round_))
    if action.startswith("open:"):  # the same address again: a new session
        return bp.load_ms(page, page.url) if bare else bp.load_ms(page, page.url, need=0, mode="page")
    if bare:
        return bp.nudge_ms(page, "layer")
    if action == "view":
        return bp.click_ms(page, "view", "Summary" if round_ % 2 == 0 else "Generation")
    return control_ms(page, action)


def compare(before: Path, after: Path, action: str, rounds: int, fresh: float | None = None) -> dict[str, list[float]]:
    """The milliseconds of ``rounds`` alternating actions on the before and after apps and the bare page; with
    ``fresh``, each round acts once on a page just opened (a new session), ``fresh`` seconds after it was drawn
    (a reader's pause: what the page does while idle counts, as a first move after opening it)."""
    times: dict[str, list[float]] = {"before": [], "after": [], "bare page": []}
    with tempfile.TemporaryDirectory(prefix="attnscope-ab-") as folder, ExitStack() as stack:
        runs = Path(folder)
        texts: list[str] = []
        if action.startswith("map:"):
            models.nn512(runs)
            models.long2048(runs)
            cases = big_map_cases(runs, rounds)
            if action.removeprefix("map:") not in cases:
                raise SystemExit(f"cannot run {action}: its model is not installed")
            _, action, texts = cases[action.removeprefix("map:")]
        servers = {"before": stack.enter_context(bp.served(APP, runs, runs / "before.log", before.resolve())),
                   "after": stack.enter_context(bp.served(APP, runs, runs / "after.log", after.resolve())),
                   "bare page": stack.enter_context(bp.served(BASE, runs, runs / "bare.log"))}
        browser = stack.enter_context(bp.chromium())
        pages = {name: _opened(browser, server, action, name == "bare page", texts)
                 for name, server in servers.items()}
        for round_ in range(rounds):
            for name, page in pages.items():
                if fresh is not None:
                    page.context.close()
                    page = pages[name] = _opened(browser, servers[name], action, name == "bare page", texts)
                    time.sleep(fresh)
                times[name].append(_act(page, action, name == "bare page", round_, texts))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    maps = ("head512", "model512", "head2048", "smollm2")
    parser.add_argument("action", choices=["edit", "view", *PAGES, *(f"open:{path}" for path in PAGES),
                                           *(f"map:{name}" for name in maps)])
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
