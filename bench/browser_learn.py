"""The Learn and pretrained pages in the browser benchmark: each page's first draw and its
main control, against the bare page's first draw and slider move in the same run.

A page's first draw is timed from navigation to the page settled (``mode="page"`` in
:mod:`bench.browser_page`: the script done, nothing stale, every Altair chart with its canvas or SVG), each
load of the page alternating with one of the bare page, both in a fresh browser context of their own (the first
load of each is cold, nothing cached, the others warm: the bare page used to be timed warm against each Learn
page's cold first load); its main control is a slider nudged one step, or the button that moves it on, timed
the same way. The bare page is timed by the same rule as the Learn page (settled, ``mode="page"``; it used to be
timed to its chart's first draw, 5-10 % sooner than settled). The model runs ``app.resources`` logs during the
control moves are counted: a control that does not touch a model must not run one. ``python -m bench
browser_learn`` runs these rows alone (a few minutes less than the whole ``browser`` section).
"""

from __future__ import annotations

import statistics
import sys

from bench import browser_page as bp
from bench.table import Row

# url path → (page, what the main control is, the widget key, a button's label or None for a slider); a page
# opens its first section only (app.ui.presentation.section): a control in a later one is timed with its section
# opened by the page's link (the first draw is timed without it)
PAGES = {
    "lesson": ("Lesson", "next stage", "lesson_next", "Next"),
    "positional": ("Positional encoding", "sequence length", "pe_len", None),
    "playground": ("Attention playground", "β", "pg_beta", None),
    "masks": ("Masks", "sequence length", "mask_len", None),
    "architecture": ("Architecture", "tokens", "ffn_tokens", None),
    "self-attention": ("Strengths and limits", "longest length", "cc_max", None),
}
CONTROL_SECTIONS = {"architecture": "section-arch-ffn", "self-attention": "section-cc-cost"}
LOADS, MOVES = 3, 4  # a fresh context's first load is cold (nothing cached), the others warm


def control_ms(page, path: str) -> float:
    """Milliseconds of one move of the main control of the Learn page at ``path`` (until the page settles)."""
    _, _, key, label = PAGES[path]
    if label is None:
        return bp.nudge_ms(page, key, mode="page")
    return bp.click_ms(page, key, label, mode="page")


def learn_rows(browser, app: bp.Server, base: bp.Server, goal_row) -> list[Row]:
    """Two rows per Learn page (first draw, main control), each against the bare page in the same run."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only where Chromium runs
    rows = []
    for path, (title, control, _, _) in PAGES.items():
        page, floor = bp.new_page(browser), bp.new_page(browser)  # both fresh: the same cache, cold then warm
        try:
            loads, floor_loads = [], []
            for _ in range(LOADS):
                loads.append(bp.load_ms(page, f"{app.url}/{path}", need=0, mode="page"))
                floor_loads.append(bp.load_ms(floor, base.url, mode="page"))  # settled, as the page is
            if path in CONTROL_SECTIONS:
                bp.load_ms(page, f"{app.url}/{path}?{CONTROL_SECTIONS[path]}=true", need=0, mode="page")
            runs_before = len(app.events("run"))
            moves, floor_moves = [], []
            for _ in range(MOVES):
                moves.append(control_ms(page, path))
                floor_moves.append(bp.nudge_ms(floor, "layer", mode="page"))  # timed as the control is
            runs = len(app.events("run")) - runs_before
        except (PlaywrightTimeout, bp.Refused) as error:  # a page that never settles makes a "not drawn" row
            sys.stderr.write(f"browser: {title}: not drawn ({error})\n")
            rows.append(Row("browser", f"{title}: not drawn ({type(error).__name__})", "≤ 1.3× bare page",
                            bp.TIMEOUT_MS, "ms", None, False))
            continue
        finally:
            page.context.close()
            floor.context.close()
        rows.append(goal_row(f"{title}: first draw (median of {LOADS})", loads, floor_loads))
        rows.append(goal_row(f"{title}: {control} moved (median of {MOVES}; model runs: {runs})", moves,
                             floor_moves, holds=runs == 0))
        sys.stderr.write(f"browser: {title}: first draw {statistics.median(loads):.0f} ms, {control} "
                         f"{statistics.median(moves):.0f} ms\n")
    return rows


def run() -> list[Row]:
    """The Learn rows alone, the app and the bare page served as ``python -m bench browser`` serves them."""
    from bench import browser  # the whole section's servers and verdicts (it imports this module)
    return browser.served_rows(lambda chromium, app, base: learn_rows(chromium, app, base, browser.goal_row))
