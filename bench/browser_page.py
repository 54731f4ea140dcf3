"""The browser benchmark's machinery: a ``streamlit run`` server on loopback (its log kept, so the
model loads and runs the app logs can be counted), Debian's Chromium through Playwright, and the
in-page clock that says when a page is drawn.

"Drawn" (``DRAWN_JS``): Streamlit's ``stApp`` reports the script state ``notRunning``, no element is stale
(``data-stale="true"``: left from the previous run), at least ``need`` Plotly charts or attention canvases are on the
page, each Plotly chart with its ``.main-svg`` and, for every heatmap, its ``.hm image``, each canvas with its payload
read (a new payload or a new paint counts as drawn anew); and after an action, every chart (``mode="all"``) or at
least one (``mode="any"``) has been drawn anew, or (``mode="page"``, for a page whose charts an action may or may
not change) the script was seen running or the main area changed outside the acted widget (React may draw a short
run's start and end in one render), every Vega chart has its canvas, no element is still a skeleton (``stSkeleton``:
Streamlit's place-holder while it loads the code of a kind of chart the page had not drawn yet), and the main area
has then been unchanged for ``SETTLE_MS`` (the figure: its last change); ``only`` (a CSS selector) limits the charts
that count to those inside it. Plotly replaces a chart's ``_fullLayout`` on every (re)draw, so a layout seen before
the action is stale. A run that ends with an error message on the page instead is reported (:class:`Refused`). The
check runs on every animation frame in the page and records ``performance.now()`` the first frame it holds, so the
figure is the page's own clock, not a Playwright round trip; it also notes when the script was first seen running (a
``MutationObserver`` on the script state, so that a run shorter than a frame is not missed) and the frame it was
seen done, and the page's long tasks (Chrome's ``longtask`` entries: its main thread busy for 50 ms or more at a
time; :func:`phases`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run", "--disable-sync"]
TIMEOUT_MS = 90_000

DRAWN_JS = """({mode, need, only}) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stElementContainer"][data-stale="true"]')) return false;
  if (mode === 'page') {
    if (window.__bench && window.__bench.ran === null && window.__bench.last === null) return false;
    if (document.querySelector('[data-testid="stMain"] [data-testid="stSkeleton"]')) return false;
    const vega = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
    if (vega.some(v => !v.querySelector('canvas, svg'))) return false;
  }
  const plots = [...document.querySelectorAll(only || '[data-testid="stPlotlyChart"]')]
    .flatMap(box => [...box.querySelectorAll('.js-plotly-plot')]);
  const canvases = [...document.querySelectorAll(only || 'body')]  // attention canvases count as charts
    .flatMap(box => [...box.querySelectorAll('[data-attnscope-canvas]')])
    .map(host => host.shadowRoot?.querySelector('.atc')?.canvas);
  if (plots.length + canvases.length < need || canvases.some(c => !c || !c.id)) return false;
  const old = window.__bench?.old, oldCanvases = window.__bench?.canvases;
  const fresh = c => !oldCanvases.has(`${c.id}#${c.stats.paint.length}`);  // a new payload, or painted again
  for (const gd of plots) {
    if (!gd._fullLayout || !gd.querySelector('.main-svg')) return false;
    const heatmaps = (gd._fullData || []).filter(t => t.type === 'heatmap').length;
    if (gd.querySelectorAll('.hm image').length < heatmaps) return false;
    if (mode === 'all' && old && old.has(gd._fullLayout)) return false;
  }
  if (mode === 'all' && old && canvases.some(c => !fresh(c))) return false;
  return mode !== 'any' || !old || plots.some(gd => !old.has(gd._fullLayout)) || canvases.some(fresh);
}"""

ARM_JS = """({mode, need, only, skip}) => {
  const drawn = %s;
  const layouts = [...document.querySelectorAll('.js-plotly-plot')].map(gd => gd._fullLayout).filter(Boolean);
  const painted = [...document.querySelectorAll('[data-attnscope-canvas]')]
    .map(host => host.shadowRoot?.querySelector('.atc')?.canvas).filter(c => c && c.id)
    .map(c => `${c.id}#${c.stats.paint.length}`);
  const bench = window.__bench = {old: new WeakSet(layouts), canvases: new Set(painted), t0: performance.now(),
                                  at: null, ran: null, ended: null, error: null, tasks: [], last: null};
  window.__benchChanges?.disconnect();  // the main area's last change but the acted widget's own (mode "page")
  window.__benchChanges = new MutationObserver(records => {
    const outside = r => { const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
                           return !skip || !el || !el.closest(skip); };
    if (records.some(outside)) bench.last = performance.now();
  });
  if (mode === 'page') window.__benchChanges.observe(document.querySelector('[data-testid="stMain"]') || document.body,
                                                     {subtree: true, childList: true, attributes: true,
                                                      characterData: true});
  window.__benchTasks?.disconnect();
  window.__benchTasks = new PerformanceObserver(list => bench.tasks.push(...list.getEntries()));
  window.__benchTasks.observe({type: 'longtask'});
  window.__benchRuns?.disconnect();  // a run shorter than a frame is still seen starting
  const app = document.querySelector('[data-testid="stApp"]');
  window.__benchRuns = new MutationObserver(() => {
    if (app.getAttribute('data-test-script-state') === 'running' && bench.ran === null) bench.ran = performance.now();
  });
  if (app) window.__benchRuns.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
  const watch = () => {
    if (window.__bench !== bench) return;
    const state = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
    if (state === 'running' && bench.ran === null) bench.ran = performance.now();
    if (state === 'notRunning' && bench.ran !== null && bench.ended === null) bench.ended = performance.now();
    const error = document.querySelector('[data-testid="stElementContainer"]:not([data-stale="true"]) '
                                         + '[data-testid="stAlertContentError"]');
    if (bench.ended !== null && error) { bench.error = error.innerText; bench.at = performance.now(); return; }
    if (drawn({mode, need, only})) bench.at = performance.now(); else requestAnimationFrame(watch);
  };
  requestAnimationFrame(watch);
}""" % DRAWN_JS


SETTLE_MS = 150  # mode "page": settled once the main area is unchanged this long, checked at animation frames (a
# chart drawn in a long task is drawn before the next frame can look, so only an idle page counts as quiet)
# The time of the main area's last change once it has been quiet for ``quiet`` ms (changes are watched from the
# action on, or from now on after a navigation; 0 when there was none).
SETTLE_JS = """(quiet) => new Promise(resolve => {
  const bench = window.__bench, start = performance.now();
  let last = bench ? bench.last || 0 : 0;
  const observer = bench ? null : new MutationObserver(() => { last = performance.now(); });
  observer?.observe(document.querySelector('[data-testid="stMain"]') || document.body,
                    {subtree: true, childList: true, attributes: true, characterData: true});
  const check = () => {
    if (bench) last = bench.last || 0;
    const now = performance.now();  // a page that never stops changing ends at the bench's timeout
    if (now - last >= quiet || now - start > %d) { observer?.disconnect(); resolve(last); }
    else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
})""" % TIMEOUT_MS


def chromium_missing() -> str | None:
    """Why the browser rows cannot run here, or None when Chromium and Playwright are installed."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -r requirements-dev.txt)"
    return None


def free_port(first: int = 8650, last: int = 8669) -> int:
    """A free loopback port in the bench's range (any free one when the range is taken)."""
    for port in [*range(first, last + 1), 0]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise OSError("no free port")


def events_in(log: str, event: str) -> list[str]:
    """What each ``model <event>:`` line ``app.resources`` logged names (``loaded``: a file; ``run``: a
    kind of run), in order."""
    return re.findall(rf"app\.resources model {event}: (\S+)", log)


class Server:
    """A running ``streamlit run`` of ``script`` (relative to the checkout ``root``, this one by default)."""

    def __init__(self, script: str, runs: Path, log: Path, root: Path = ROOT) -> None:
        self.script, self.runs, self.log, self.root = script, runs, log, root
        self._start()

    def _start(self) -> None:
        """Start the server on a free port (another process may take that port before the server binds it:
        :meth:`wait_ready` then starts it again on another)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "ATTNSCOPE_RUNS": str(self.runs), "PYTHONPATH": str(self.root)}
        command = [sys.executable, "-m", "bench.browser_serve", "run", self.script, "--server.port", str(self.port),
                   "--server.address", "127.0.0.1", "--server.headless", "true",
                   "--browser.gatherUsageStats", "false"]
        with open(self.log, "wb") as output:
            self.process = subprocess.Popen(command, cwd=self.root, env=env, stdout=output, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 120, port_tries: int = 3) -> None:
        """Return once ``/_stcore/health`` answers 200 ("server ready")."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            exited = self.process.poll() is not None
            taken = exited and f"Port {self.port} is not available" in self.log.read_text(errors="replace")
            if taken and port_tries > 1:
                port_tries -= 1
                self._start()
                continue
            if exited or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)

    def events(self, event: str) -> list[str]:
        """What each ``model <event>:`` line of ``app.resources`` in the server's log names, in order."""
        return events_in(self.log.read_text(errors="replace"), event)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def served(script: str, runs: Path, log: Path, root: Path = ROOT) -> Iterator[Server]:
    """A ready server of ``script`` in the checkout ``root``, stopped on exit."""
    server = Server(script, runs, log, root)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@contextmanager
def chromium() -> Iterator[object]:
    """Debian's Chromium driven by Playwright (a ``Browser``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser) -> object:
    """A fresh context (its own Streamlit session) and page at the app's usual size."""
    return browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()


def arm(page, mode: str = "all", need: int = 1, only: str | None = None, skip: str | None = None) -> None:
    """Start the page's clock and its per-frame "drawn" check (see the module doc); ``only``: a CSS selector of
    the elements whose charts count (default: every chart on the page); ``skip``: the acted widget's container,
    whose own changes (a slider's thumb moving) are not the page's answer."""
    page.evaluate(ARM_JS, {"mode": mode, "need": need, "only": only, "skip": skip})


class Refused(RuntimeError):
    """The page answered the action with an error message (e.g. the app's gate asking to wait)."""


def drawn_ms(page, settle: bool = False) -> float:
    """Milliseconds from :func:`arm` to the first frame the page was drawn (waits for it); with ``settle``, to
    the main area's last change once it has been quiet for :data:`SETTLE_MS` (a chart drawn a frame after the
    script ended counts).

    Raises:
        Refused: the script ended with an error message on the page instead.
    """
    page.wait_for_function("() => window.__bench && window.__bench.at !== null", timeout=TIMEOUT_MS)
    error = page.evaluate("() => window.__bench.error")
    if error:
        raise Refused(error)
    at, t0 = page.evaluate("() => [window.__bench.at, window.__bench.t0]")
    if settle:
        at = max(at, page.evaluate(SETTLE_JS, SETTLE_MS))
    return at - t0


def phases(page) -> tuple[float, float, float, float] | None:
    """Where the last timed action's milliseconds went: (action → script running, the script run,
    script done → drawn, the page's main thread busy in long tasks over the whole span), or None when
    no frame saw the script running."""
    return page.evaluate("""() => { const b = window.__bench;
        b.tasks.push(...window.__benchTasks.takeRecords());
        const busy = b.tasks.filter(t => t.startTime >= b.t0 && t.startTime <= b.at)
                            .reduce((sum, t) => sum + t.duration, 0);
        return b.ran === null || b.ended === null ? null : [b.ran - b.t0, b.ended - b.ran, b.at - b.ended, busy]; }""")


def load_ms(page, url: str, need: int = 1, mode: str = "load") -> float:
    """Milliseconds from navigation start to the page first drawn (the page's own clock)."""
    page.goto(url)
    check = f"arg => ({DRAWN_JS})(arg) ? performance.now() : false"
    drawn = page.wait_for_function(check, arg={"mode": mode, "need": need, "only": None}, timeout=TIMEOUT_MS,
                                   polling="raf").json_value()
    return max(drawn, page.evaluate(SETTLE_JS, SETTLE_MS)) if mode == "page" else drawn


def submit_ms(page, text: str, mode: str = "all", need: int = 1, only: str | None = None) -> float:
    """Type ``text`` into the page's text area, submit it (Ctrl+Enter) and time it until drawn (the charts
    inside ``only``, a CSS selector, where given)."""
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    arm(page, mode, need, only)
    box.press("Control+Enter")
    return drawn_ms(page)


def click_ms(page, key: str, label: str, mode: str = "any") -> float:
    """Click the button labelled ``label`` inside the widget with key ``key`` and time it until drawn: the clock
    starts once Playwright finds the button ready and the mouse then clicks its middle at once, as a slider's key
    press (:func:`nudge_ms`) is sent at once."""
    button = page.locator(f".st-key-{key} button", has_text=label).first
    button.click(trial=True)  # Playwright's own checks (visible, stable for two frames: 30-70 ms) before the clock
    box = button.bounding_box()
    arm(page, mode, need=0 if mode == "page" else 1, skip=f".st-key-{key}")
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # as a slider's key press: at once
    return drawn_ms(page, settle=mode == "page")


def nudge_ms(page, key: str, mode: str = "any") -> float:
    """Move the slider with widget key ``key`` one step (right, or left at its end) and time it until
    a chart is drawn anew."""
    slider = page.locator(f".st-key-{key}").get_by_role("slider")
    # an <input type="range">, or a select slider's aria values
    at_end = slider.evaluate("s => s.tagName === 'INPUT' ? s.value === s.max"
                             " : s.getAttribute('aria-valuenow') === s.getAttribute('aria-valuemax')")
    arm(page, mode, need=0 if mode == "page" else 1, skip=f".st-key-{key}")
    slider.press("ArrowLeft" if at_end else "ArrowRight")
    return drawn_ms(page, settle=mode == "page")

