// Attnscope's presentation mode, run in the page by app/presentation.py (nothing is fetched from anywhere).
// 1. Clicker keys: → / PageDown / Space press the page's Next button, ← / PageUp its Back button (the
//    buttons whose Streamlit key ends in "_next" / "_prev"), without focusing them; keys typed into a
//    text box, select box or slider are left alone.
// 2. Turning presentation mode on folds the sidebar away once, so the page has the whole screen.
// 3. The theme chosen in the ⋮ menu is kept on reload of any page: Streamlit stores it under a key named
//    after the path the app was first opened at, so it is copied to every page's key.
// 4. The html element's data-attnscope-theme says whether the theme is light or dark (the charts' dark colours
//    hang on it).
// 5. The chart modules a page names (its controls bring a kind of chart its first screen does not draw) are
//    imported from this server while the page is idle, one after another in the page's order (the one the next
//    control needs first), so the first such chart does not wait for its code; the app imports the same module
//    later and finds it loaded.
// 6. Presentation mode fits the first screen's charts into it: every chart (Plotly, Vega-Lite, a diagram) that
//    starts on the first screen of the unscrolled page and would end below it is drawn smaller (scaled, down to
//    FIT_FLOOR of its size), so its whole height is on the screen; the page below it moves up.
// 7. An Export menu's PNG / SVG button of a Plotly chart (app/ui/export.py: data-attnscope-image, the format, and
//    data-attnscope-chart, the chart's name) saves that chart in that format through its own toolbar's camera, the
//    chart found by the file name its toolbar saves under.
(() => {
  const state = window.__attnscope = Object.assign(window.__attnscope || {}, __CONFIG__);
  state.warm = () => {
    const index = document.querySelector('script[src*="/static/js/index."]');
    state.warmed = state.warmed || new Set();
    const wanted = (state.preload || []).filter(name => !state.warmed.has(name));
    if (!index || !wanted.length) return;
    wanted.forEach(name => state.warmed.add(name));
    const idle = then => window.requestIdleCallback ? requestIdleCallback(then, {timeout: 3000})
      : setTimeout(then, 1000);
    const load = ([name, ...rest]) => name && import(new URL(name, index.src).href)
      .catch(() => state.warmed.delete(name)).finally(() => idle(() => load(rest)));
    idle(() => load(wanted));
  };
  state.warm();
  if (state.installed) {
    setTimeout(state.fold, 50);
    return;
  }
  state.installed = true;

  // Presentation mode folds the sidebar away once when it is turned on (the header's » button opens it again).
  state.fold = () => {
    if (!state.clicker) { state.folded = false; return; }
    const bar = document.querySelector('[data-testid="stSidebar"]');
    const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
    if (state.folded || !bar || !button) return;
    if (bar.getAttribute('data-collapsed') === 'false') button.click();
    state.folded = true;
  };

  const typing = el => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName)
    || el.hasAttribute('data-attnscope-canvas') // the attention canvas's arrows move its heads and layers
    || ['slider', 'combobox', 'textbox', 'spinbutton'].includes(el.getAttribute('role')));
  document.addEventListener('keydown', event => {
    if (!state.clicker || event.altKey || event.ctrlKey || event.metaKey || typing(document.activeElement)) return;
    const forward = ['ArrowRight', 'PageDown', ' '].includes(event.key);
    const back = ['ArrowLeft', 'PageUp'].includes(event.key);
    if (!forward && !back) return;
    const suffix = forward ? '_next' : '_prev';
    const button = [...document.querySelectorAll('[data-testid="stMain"] [class*="st-key-"] button')]
      .find(b => !b.disabled && b.offsetParent !== null
        && [...b.closest('[class*="st-key-"]').classList].some(c => c.startsWith('st-key-') && c.endsWith(suffix)));
    if (!button) return;
    event.preventDefault();
    event.stopPropagation();
    button.click();
  }, true);

  document.addEventListener('click', event => {
    const button = event.target.closest && event.target.closest('button[data-attnscope-image]');
    if (!button) return;
    const format = button.getAttribute('data-attnscope-image'), name = button.getAttribute('data-attnscope-chart');
    const chart = [...document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')]
      .find(gd => gd._context?.toImageButtonOptions?.filename === name);
    const camera = chart?.querySelector('.modebar-btn[data-title^="Download plot"]');
    if (!camera) return;
    const options = chart._context.toImageButtonOptions, drawn = options.format;
    options.format = format;
    camera.dispatchEvent(new MouseEvent('click'));  // not bubbling: the menu stays open
    options.format = drawn;
  });

  const entry = performance.getEntriesByType('navigation')[0];
  const start = new URL(entry ? entry.name : location.href).pathname;
  const base = start.replace(/[^/]*$/, '');
  const key = path => `stActiveTheme-${path}-v2`;
  const sync = () => {
    const value = localStorage.getItem(key(start));
    for (const path of [base, ...state.paths.map(p => base + p)]) {
      if (path === start) continue;
      if (value === null) localStorage.removeItem(key(path));
      else if (localStorage.getItem(key(path)) !== value) localStorage.setItem(key(path), value);
    }
  };
  // The sticky Next row takes the theme's background, and the html element says whether it is dark (the charts' text is
  // painted for the light theme: app/charts/look.py's DARK_CSS repaints it).
  const background = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app) return;
    const root = document.documentElement, colour = getComputedStyle(app).backgroundColor;
    const [r, g, b] = (colour.match(/[\d.]+/g) || [255, 255, 255]).map(Number);
    const theme = 0.299 * r + 0.587 * g + 0.114 * b < 128 ? 'dark' : 'light';
    // set only on a change: each write restyles the whole page
    if (root.style.getPropertyValue('--attnscope-background') !== colour) {
      root.style.setProperty('--attnscope-background', colour);
    }
    if (root.dataset.attnscopeTheme !== theme) root.dataset.attnscopeTheme = theme;
  };
  const FIT_FLOOR = 0.45, FIT_GAP = 8;  // the smallest scale; the room left under a fitted chart (px)
  const CHARTS = '[data-testid="stMain"] [data-testid="stElementContainer"]:not(:has([data-testid="stElementContainer"]))'
    + ':has(:is([data-testid="stPlotlyChart"], [data-testid="stVegaLiteChart"], img.__DIAGRAM__))';
  // A chart's element container is scaled from its top left corner and gives back the height it no longer covers
  // (a negative bottom margin): its layout width stays, so a chart drawn to its column's width keeps its layout
  // (a CSS zoom would narrow the column it measures), and Plotly maps the pointer through the transform.
  const scaled = chart => parseFloat((chart.style.transform.match(/scale\(([\d.]+)\)/) || [0, 1])[1]);
  const scale = (chart, by) => {
    chart.style.transform = by === 1 ? '' : `scale(${by.toFixed(3)})`;
    chart.style.transformOrigin = by === 1 ? '' : 'top left';
    chart.style.marginBottom = by === 1 ? '' : `${-((1 - by) * chart.offsetHeight).toFixed(1)}px`;
  };
  // Scaled only once its box kept its size for a tick: a chart is not scaled while the page is still laid out (the
  // sidebar folding away, Plotly drawing it to its column's new width).
  const settled = chart => {
    const size = `${chart.offsetWidth}x${chart.offsetHeight}`, same = chart.dataset.attnscopeSize === size;
    chart.dataset.attnscopeSize = size;
    return same;
  };
  const fit = () => {
    const main = document.querySelector('[data-testid="stMain"]');
    const scrolled = document.scrollingElement.scrollTop + (main ? main.scrollTop : 0);
    for (const chart of document.querySelectorAll(CHARTS)) {
      const now = scaled(chart);
      if (!state.clicker) { if (now !== 1) scale(chart, 1); continue; }
      if (chart.offsetParent === null || !settled(chart)) continue;
      const top = chart.getBoundingClientRect().top + scrolled, natural = chart.offsetHeight;  // unscaled px
      if (top >= innerHeight || natural === 0) continue;
      const wanted = Math.max(FIT_FLOOR, Math.min(1, (innerHeight - top - FIT_GAP) / natural));
      if (Math.abs(wanted - now) > 0.01) scale(chart, wanted);
    }
  };
  const tick = () => { sync(); background(); state.fold(); fit(); };
  tick();
  setInterval(tick, 500);
})();
