// The attention canvas: every attention map of one input, drawn and explored in the browser (app/ui/canvas).
// Streamlit calls this module's default export on every run that draws the component; the payload (one
// Uint8Array, see payload.py) is decoded once per input (its header's id) and the drawing state lives on the
// component's root, so a rerun that re-sends the same bytes changes nothing on screen.
// Hover, layer / head / view selection, zoom and pan never message the server. Python hears of one thing only:
// the head the reader pins (the "Pin" button, or a layer the payload does not carry yet), via setStateValue.
// This file holds the class and its head view; canvas_views.js adds the model, lines and panel views and the
// exports, canvas_input.js hover, zoom, pan and keys, both as methods of AttentionCanvas.

class AttentionCanvas {
  constructor(parent) {
    this.parent = parent;
    this.root = el('div', {class: 'atc', tabindex: '0', role: 'group'}, parent);
    if (parent.host) parent.host.setAttribute('data-attnscope-canvas', '1'); // presentation.js leaves its keys alone
    this.bar = el('div', {class: 'atc-bar'}, this.root);
    this.titleLine = el('div', {class: 'atc-title'}, this.root);
    this.stage = el('div', {class: 'atc-stage'}, this.root);
    this.glCanvas = el('canvas', {class: 'atc-gl', style: 'display: none'}, this.stage); // under the map's
    this.mapCanvas = el('canvas', {class: 'atc-map'}, this.stage);
    this.overCanvas = el('canvas', {class: 'atc-over'}, this.stage);
    this.svg = el('svg', {class: 'atc-svg'}, this.stage, SVG_NS);
    this.status = el('div', {class: 'atc-status', role: 'status', 'aria-live': 'polite'}, this.root);
    this.note = el('div', {class: 'atc-note'}, this.root);
    this.table = el('table', {class: 'atc-sr'}, this.root);
    this.id = null; this.pinned = null; this.view = 'head'; this.layer = 0; this.head = 0;
    this.hover = null; this.frame = 0; this.stats = {hover: [], switch: [], paint: []};
    this.listen();
    new ResizeObserver(() => { // a new width is a new layout (the sidebar folded): the stage's top is measured again
      if (this.root.clientWidth !== this.measuredWidth) { this.measuredWidth = this.root.clientWidth; this.stageTop = undefined; }
      if (this.id) this.render();
    }).observe(this.root);
  }

  receive(bytes) {
    const {header, arrays} = parse(bytes);
    const theme = this.theme(header);
    let kept = null; // new maps of the same kind while Python's pin stayed: the reader's own layer, head and view stay
    if (header.id !== this.id && this.h?.mode === 'maps' && header.mode === 'maps' && header.kind === this.h.kind
        && JSON.stringify(header.pinned || {}) === JSON.stringify(this.h.pinned || {})) {
      kept = {layer: this.layer, head: this.head, view: this.view};
    }
    if (header.id !== this.id) {
      this.id = header.id; this.h = header; this.a = arrays; this.levels = new Map(); this.thumbCanvas = null;
      this.lut = lut32(arrays.lut); this.lutSigned = arrays.lut_signed ? lut32(arrays.lut_signed) : null;
      this.window = null; this.lineHeads = null; this.hover = null;
      this.pinned = null;
    } else if (theme === this.dark) {
      const same = JSON.stringify(header.pinned || {}) === JSON.stringify(this.pinned || {});
      if (same) return; // the same bytes again: nothing to draw
    }
    this.h = Object.assign(this.h, {pinned: header.pinned});
    this.dark = theme;
    this.adopt(header.pinned || {});
    if (kept) { this.adopt(kept); this.pinned = header.pinned || {}; }
    this.root.classList.toggle('dark', this.dark);
    this.root.classList.toggle('big', !!header.presentation);
    this.render();
  }

  theme(header) {
    const marked = document.documentElement.getAttribute('data-attnscope-theme');
    if (marked) return marked === 'dark';
    const bg = getComputedStyle(this.root).getPropertyValue('--st-background-color').trim();
    const m = bg.match(/^#([0-9a-f]{6})$/i);
    if (m) {
      const v = parseInt(m[1], 16);
      return 0.299 * (v >> 16) + 0.587 * ((v >> 8) & 255) + 0.114 * (v & 255) < 128;
    }
    return header.theme === 'dark';
  }

  adopt(pinned) { // the head Python pinned (a share link, a reload) becomes the one shown
    this.pinned = pinned;
    if (this.h.mode !== 'maps') return;
    if (Number.isInteger(pinned.layer)) this.layer = Math.min(Math.max(pinned.layer, 0), this.h.layers - 1);
    if (Number.isInteger(pinned.head)) this.head = Math.min(Math.max(pinned.head, 0), this.h.heads - 1);
    const neurons = this.h.neurons || this.h.neuron_request; // carried, or sent once the reader asks
    if (['head', 'model', 'lines'].includes(pinned.view) || (pinned.view === 'neuron' && neurons)) {
      this.view = pinned.view;
    }
    if (this.view === 'neuron' && !neurons) this.view = 'head';
    if (!this.h.sent.includes(this.layer)) this.layer = this.h.sent[0];
  }

  // ------------------------------------------------------------------ geometry and values
  font() { return this.h.presentation ? 18 : 12; }
  slot(layer) { return this.h.sent.indexOf(layer); }
  cells() { return this.h.tq * this.h.tk; }

  value(layer, head, q, k) { // the exact weight (float16), or the colour index's weight when none was sent
    const h = this.h, at = ((this.slot(layer) * h.heads + head) * h.tq + q) * h.tk + k;
    return h.values ? half(this.a.value[at]) : this.a.colour[at] / 255;
  }

  headIndex(layer, head) {
    const start = (this.slot(layer) * this.h.heads + head) * this.cells();
    return this.a.colour.subarray(start, start + this.cells());
  }

  levelsOf(layer, head) {
    const key = `${layer}:${head}`;
    if (!this.levels.has(key)) {
      if (this.levels.size > 6) this.levels.delete(this.levels.keys().next().value);
      this.levels.set(key, pyramid(this.headIndex(layer, head), this.h.tq, this.h.tk, this.lut));
    }
    return this.levels.get(key);
  }

  measure(labels) {
    const ctx = this.mapCanvas.getContext('2d');
    ctx.font = `${this.font()}px "Source Sans", sans-serif`;
    let widest = 0;
    for (let i = 0; i < labels.length; i += Math.max(1, Math.floor(labels.length / 500))) {
      widest = Math.max(widest, ctx.measureText(short(labels[i])).width);
    }
    return widest;
  }

  size(width, height) { // the stage's canvases cleared, and reallocated only when their size changes
    const dpr = window.devicePixelRatio || 1;
    if (this.W === width && this.H === height && this.dpr === dpr) {
      for (const c of [this.mapCanvas, this.overCanvas]) c.getContext('2d').clearRect(0, 0, width, height);
      return;
    }
    this.dpr = dpr;
    for (const c of [this.mapCanvas, this.overCanvas]) {
      c.width = Math.round(width * dpr); c.height = Math.round(height * dpr);
      c.style.width = `${width}px`; c.style.height = `${height}px`;
      c.getContext('2d').setTransform(dpr, 0, 0, dpr, 0, 0);
    }
    this.svg.setAttribute('width', width); this.svg.setAttribute('height', height);
    this.stage.style.height = `${height}px`;
    this.W = width; this.H = height;
  }

  // ------------------------------------------------------------------ the toolbar
  bar_() {
    this.bar.replaceChildren();
    const h = this.h;
    if (h.mode === 'maps') {
      const views = el('div', {class: 'atc-group', role: 'group', 'aria-label': 'view'}, this.bar);
      const named = [['head', 'Head'], ['model', 'Model'], ['lines', 'Lines']];
      if (h.neurons || h.neuron_request) named.push(['neuron', 'Neurons']);
      for (const [name, label] of named) {
        const b = el('button', {type: 'button', 'data-view': name, 'aria-pressed': String(this.view === name),
          text: label}, views);
        b.onclick = () => this.setView(name);
      }
      this.stepper('layer', 'Layer', this.layer, h.layers, d => this.go(this.layer + d, this.head));
      this.stepper('head', 'Head', this.head, h.heads, d => this.go(this.layer, this.head + d));
      const pin = el('button', {type: 'button', 'data-action': 'pin', text: 'Pin head',
        title: 'Put this head in the share link, the exports and the panels below'}, this.bar);
      pin.onclick = () => this.pin();
    }
    const png = el('button', {type: 'button', 'data-action': 'png', text: 'PNG'}, this.bar);
    png.onclick = () => this.exportPNG();
    const small = h.mode === 'maps' ? Math.max(h.tq, h.tk) <= SR_TOKENS
      : h.panels.every(p => Math.max(p.rows.length, p.cols.length) <= SR_TOKENS);
    if (small) {
      const svgButton = el('button', {type: 'button', 'data-action': 'svg', text: 'SVG'}, this.bar);
      svgButton.onclick = () => this.exportSVG();
    }
  }

  stepper(name, label, value, count, step) {
    const group = el('div', {class: 'atc-group', 'data-stepper': name}, this.bar);
    const back = el('button', {type: 'button', 'aria-label': `previous ${name}`, text: '‹'}, group);
    el('span', {class: 'atc-count', text: `${label} ${value + 1} / ${count}`}, group);
    const next = el('button', {type: 'button', 'aria-label': `next ${name}`, text: '›'}, group);
    back.disabled = value <= 0; next.disabled = value >= count - 1;
    back.onclick = () => step(-1); next.onclick = () => step(1);
  }

  // ------------------------------------------------------------------ selection (all in the browser)
  setView(view) {
    if (view === this.view) return;
    this.view = view; this.hover = null; this.render();
    if (view === 'neuron' && !this.h.neurons && this.h.pinned?.view !== 'neuron') { // its queries and keys: one rerun
      this.status.textContent = 'Loading the queries and keys…';
      this.send('pinned', {kind: this.h.kind, layer: this.layer, head: this.head, view});
    }
  }

  go(layer, head) {
    const h = this.h, t0 = performance.now();
    layer = Math.min(Math.max(layer, 0), h.layers - 1); head = Math.min(Math.max(head, 0), h.heads - 1);
    if (layer === this.layer && head === this.head) return;
    if (!h.sent.includes(layer)) { // past the payload budget: this layer comes in one rerun
      this.layer = layer; this.head = head;
      this.status.textContent = `Loading layer ${layer + 1}…`;
      this.send('pinned', {kind: h.kind, layer, head, view: this.view});
      return;
    }
    this.layer = layer; this.head = head; this.window = null;
    this.render();
    this.stats.switch.push(performance.now() - t0);
  }

  pin() {
    const h = this.h;
    this.pinned = {kind: h.kind, layer: this.layer, head: this.head, view: this.view};
    this.send('pinned', this.pinned);
  }

  // ------------------------------------------------------------------ drawing
  render() {
    const t0 = performance.now();
    this.bar_();
    this.svg.replaceChildren(); this.note.textContent = ''; this.glCanvas.style.display = 'none';
    if (this.h.mode === 'panels') this.drawPanels();
    else if (this.view === 'model') this.drawModel();
    else if (this.view === 'lines') this.drawLines();
    else this.drawHead();
    this.paintHover();
    this.stats.paint.push(performance.now() - t0);
    this.root.dataset.layer = this.layer; this.root.dataset.head = this.head; this.root.dataset.view = this.view;
  }

  kindTitle() { // "Encoder self-attention — layer 1, head 3", naming the key/value head it shares when heads share them
    const h = this.h;
    if (h.mode !== 'maps') return h.title;
    const g = h.groups || [], shared = g.length ? ` · kv head ${g[this.head] + 1} of ${new Set(g).size}` : '';
    return `${h.title} — layer ${this.layer + 1}, head ${this.head + 1}${shared}`;
  }

  showsMap() { return this.h.mode === 'maps' && (this.view === 'head' || this.view === 'neuron'); }

  firstScreenRoom() { // the stage's height that keeps it and the status under it (two lines at most) on one screen:
    // the first screen when the stage starts on it, else the screen the reader scrolls it into (the stage's top is
    // measured once, on the unscrolled page)
    this.stageTop = this.stageTop ?? this.stage.getBoundingClientRect().top + (window.scrollY || 0);
    const screen = window.innerHeight || 720, top = this.stageTop < screen * 0.75 ? this.stageTop : this.font() * 2;
    return screen - top - 16 - this.font() * 3.6;
  }

  drawHead() { // the map and its labels on the first screen
    const h = this.h, font = this.font();
    this.titleLine.textContent = this.kindTitle();
    const width = Math.max(this.root.clientWidth || 600, 320);
    const left = Math.min(this.measure(h.rows) + 10, width * 0.3) + font * 1.6;
    const bottom = Math.min(this.measure(h.cols) + 10, 150) + font * 1.6;
    const reserve = this.neuronRoom(); // the neuron view's panel under the map
    const room = width - left - 70, most = Math.max(160, Math.min(640, this.firstScreenRoom() - bottom - reserve));
    let pw = Math.min(room, most), ph = pw * h.tq / h.tk;
    if (ph > most) { ph = most; pw = ph * h.tk / h.tq; }
    pw = Math.max(pw, 80); ph = Math.max(ph, 40);
    this.plot = {x: left, y: 6, w: pw, h: ph};
    this.size(width, ph + bottom + 10 + reserve);
    this.neuronBox = reserve ? {x: font * 0.8, y: ph + bottom + 10, w: width - font * 1.6, h: reserve} : null;
    this.window = this.window || {x0: 0, y0: 0, w: h.tk, h: h.tq};
    this.drawMap();
    this.colourBar(left + pw + 16, 6, ph, this.a.lut, 0, 1, 'weight');
    this.axisTitles(h.row_title, h.col_title);
    clearTimeout(this.tableTimer); // after the paint: the table is for screen readers, not the frame
    this.tableTimer = setTimeout(() => this.accessibleTable(), 30);
  }

  drawMap(moving = false) {
    const w = this.window, perPixel = this.blitMap();
    if (moving) { // zoom and pan paint the map alone; the labels follow once the gesture rests
      const ticks = this.svg.querySelector('.tick');
      if (ticks) ticks.style.display = 'none';
      clearTimeout(this.labelTimer);
      this.labelTimer = setTimeout(() => { this.labels(); this.paintHover(); }, 120);
    } else this.labels();
    const pooled = perPixel > 1;
    const note = pooled ? `Overview: each pixel shows the largest of about ${Math.ceil(perPixel) ** 2} `
      + 'weights (max-pooled, so a sharp peak survives). Scroll to zoom, drag to pan, double-click to reset.'
      : (w.w < this.h.tk || w.h < this.h.tq ? 'Zoomed in: drag to pan, double-click to see the whole map.' : '');
    if (this.note.textContent !== note) this.note.textContent = note; // unchanged text: no layout
  }

  blitMap() { // the visible window of the map, copied from the finest ready level; returns the cells per pixel
    const ctx = this.mapCanvas.getContext('2d'), p = this.plot, w = this.window;
    ctx.clearRect(p.x - 1, p.y - 1, p.w + 2, p.h + 2);
    const levels = this.levelsOf(this.layer, this.head);
    const perPixel = Math.min(w.w / p.w, w.h / p.h);
    let k = Math.min(levels.length - 1, Math.max(0, Math.floor(Math.log2(Math.max(perPixel, 1)))));
    if (this.usesGL() && this.blitGL(levels, k)) { this.warm(levels); return perPixel; }
    this.glCanvas.style.display = 'none';
    // the level wanted (coloured now if one strip holds it), else, while it is coloured, the next coarser ready one
    while (k < levels.length - 1 && !levels[k].ready && levels[k].rows * levels[k].cols > STRIP_CELLS) k++;
    const s = 2 ** k;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(levels[k].canvas, w.x0 / s, w.y0 / s, w.w / s, w.h / s, p.x, p.y, p.w, p.h);
    this.drawnLevel = k;
    this.warm(levels);
    return perPixel;
  }

  warm(levels) { // colours (or, drawing with WebGL2, uploads) the head's levels not yet ready, coarse to fine, a
    // strip per idle slice; once one finer than the level drawn is ready, the map is drawn again from it
    const gl = this.usesGL() ? this.glMap : null;
    if (this.warming === levels && this.warmingGL === gl) return;
    this.warming = levels; this.warmingGL = gl;
    const ready = l => gl ? gl.uploaded(l) : l.ready;
    const step = () => {
      if (this.warming !== levels || this.warmingGL !== gl) return; // another head or path: its levels first
      const level = [...levels].reverse().find(l => !ready(l));
      if (!level) { this.warming = null; return; }
      if (gl) gl.uploadStrip(level); else level.paintStrip();
      const shown = this.showsMap() && this.levels.get(`${this.layer}:${this.head}`) === levels;
      if (ready(level) && shown && levels.indexOf(level) < this.drawnLevel) {
        cancelAnimationFrame(this.refine);
        this.refine = requestAnimationFrame(() => this.blitMap());
      }
      idle(step);
    };
    idle(step);
  }

  labels() { // the visible rows and columns of the head view, thinned so that labels never touch
    for (const node of [...this.svg.querySelectorAll('.tick')]) node.remove();
    const h = this.h, p = this.plot, w = this.window, font = this.font();
    const cellH = p.h / w.h, cellW = p.w / w.w;
    this.rowTicks = new Map(); this.colTicks = new Map();
    const rowStep = Math.max(1, Math.ceil(font * 1.2 / cellH)), colStep = Math.max(1, Math.ceil(font * 1.2 / cellW));
    const group = el('g', {class: 'tick', 'font-size': font}, this.svg, SVG_NS);
    const r0 = Math.floor(w.y0), r1 = Math.min(h.tq, Math.ceil(w.y0 + w.h));
    let drawn = 0;
    for (let r = Math.ceil(r0 / rowStep) * rowStep; r < r1 && drawn < MAX_LABELS; r += rowStep, drawn++) {
      const y = p.y + (r - w.y0 + 0.5) * cellH;
      this.rowTicks.set(r, el('text', {x: p.x - 6, y, 'text-anchor': 'end', 'dominant-baseline': 'middle',
        text: short(h.rows[r])}, group, SVG_NS));
    }
    const c0 = Math.floor(w.x0), c1 = Math.min(h.tk, Math.ceil(w.x0 + w.w));
    drawn = 0;
    for (let c = Math.ceil(c0 / colStep) * colStep; c < c1 && drawn < MAX_LABELS; c += colStep, drawn++) {
      const x = p.x + (c - w.x0 + 0.5) * cellW, y = p.y + p.h + 6;
      this.colTicks.set(c, el('text', {x, y, 'text-anchor': 'end', 'dominant-baseline': 'middle',
        transform: `rotate(-90 ${x} ${y})`, text: short(h.cols[c])}, group, SVG_NS));
    }
  }

  axisTitles(rowTitle, colTitle) {
    const p = this.plot, font = this.font();
    const x = font * 0.8, y = p.y + p.h / 2;
    el('text', {class: 'axis-title', x, y, 'text-anchor': 'middle', 'font-size': font,
      transform: `rotate(-90 ${x} ${y})`, text: rowTitle}, this.svg, SVG_NS);
    el('text', {class: 'axis-title', x: p.x + p.w / 2, y: this.H - 4 - this.neuronRoom(), 'text-anchor': 'middle',
      'font-size': font,
      text: colTitle}, this.svg, SVG_NS);
  }

  scaleImage(lut, across) { // the colour scale as a 256-pixel strip (top = 1 when upright), made once per scale
    const key = across ? 'across' : 'up';
    this.strips = this.strips || new Map();
    if (!this.strips.has(lut)) this.strips.set(lut, {});
    const kept = this.strips.get(lut);
    if (!kept[key]) {
      const ramp = Uint8Array.from({length: 256}, (_, i) => across ? i : 255 - i);
      kept[key] = paint(ramp, across ? 1 : 256, across ? 256 : 1, lut);
    }
    return kept[key];
  }

  colourBar(x, y, height, rgb, low, high, title) {
    const ctx = this.mapCanvas.getContext('2d'), font = this.font();
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(this.scaleImage(this.lut, false), x, y, 12, height);
    const group = el('g', {'font-size': font}, this.svg, SVG_NS);
    for (const t of [0, 0.5, 1]) {
      const v = low + (high - low) * t;
      el('text', {x: x + 16, y: y + (1 - t) * height, 'dominant-baseline': 'middle',
        text: Math.abs(v) < 1e-9 ? '0' : v.toPrecision(2)}, group, SVG_NS);
    }
    el('text', {class: 'axis-title', x: x, y: y + height + font * 1.4, text: title}, group, SVG_NS);
  }

  accessibleTable() { // the visible head's weights for screen readers, for inputs up to SR_TOKENS tokens
    const h = this.h;
    this.table.replaceChildren();
    if (!this.showsMap() || Math.max(h.tq, h.tk) > SR_TOKENS) return;
    el('caption', {text: `${this.kindTitle()}: rows are queries, columns keys`}, this.table);
    const head = el('tr', {}, el('thead', {}, this.table));
    el('th', {text: 'query \\ key'}, head);
    for (const c of h.cols) el('th', {scope: 'col', text: c}, head);
    const body = el('tbody', {}, this.table);
    for (let q = 0; q < h.tq; q++) {
      const row = el('tr', {}, body);
      el('th', {scope: 'row', text: h.rows[q]}, row);
      for (let k = 0; k < h.tk; k++) el('td', {text: this.value(this.layer, this.head, q, k).toFixed(3)}, row);
    }
  }
}

export default function (component) {
  const {data, parentElement, setStateValue} = component;
  let canvas = STATES.get(parentElement);
  if (!canvas) { canvas = new AttentionCanvas(parentElement); STATES.set(parentElement, canvas); }
  canvas.send = setStateValue;
  canvas.root.canvas = canvas; // what the browser tests and the benchmark read (pixels, timings)
  if (data) canvas.receive(data);
}
