// The attention canvas: every attention map of one input, drawn and explored in the browser (app/ui/canvas).
// Streamlit calls this module's default export on every run that draws the component; the payload (one
// Uint8Array, see payload.py) is decoded once per input (its header's id) and the drawing state lives on the
// component's root, so a rerun that re-sends the same bytes changes nothing on screen.
// Hover, layer / head / view selection, zoom and pan never message the server. Python hears of one thing only:
// the head the reader pins (the "Pin" button, or a layer the payload does not carry yet), via setStateValue.

const STATES = new WeakMap();
const LINE_WIDTH = 8; // the lines view's stroke width for a weight of 1 (px): width = weight × LINE_WIDTH
const LINES_TOKENS = 256; // the lines view draws inputs up to this many tokens
const SR_TOKENS = 64; // the hidden table for screen readers, and the SVG export, up to this many tokens
const MAX_LABELS = 400; // labels drawn on one axis at most (the rest are thinned)
const HEAD_COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000',
  '#7f7f7f', '#8c564b', '#9467bd', '#17becf'];
const SVG_NS = 'http://www.w3.org/2000/svg';

let HALF = null; // float16 bit pattern → float32, built on first use
function half(bits) {
  if (!HALF) {
    HALF = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) {
      const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
      HALF[h] = exp === 0 ? sign * 2 ** -14 * (frac / 1024)
        : exp === 31 ? (frac ? NaN : sign * Infinity) : sign * 2 ** (exp - 15) * (1 + frac / 1024);
    }
  }
  return HALF[bits];
}

function parse(bytes) {
  let u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (u8.byteOffset % 8) u8 = u8.slice(); // sections are 8-aligned from the payload's start
  if (String.fromCharCode(u8[0], u8[1], u8[2], u8[3]) !== 'ATC1') throw new Error('not an attention canvas payload');
  const length = new DataView(u8.buffer, u8.byteOffset, 8).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + length)));
  const arrays = {};
  for (const [name, s] of Object.entries(header.sections)) {
    const count = s.shape.reduce((a, b) => a * b, 1);
    const Kind = s.dtype === 'uint8' ? Uint8Array : Uint16Array;
    arrays[name] = new Kind(u8.buffer, u8.byteOffset + s.offset, count);
  }
  return {header, arrays};
}

function lut32(rgb) { // (256 × 3) uint8 → 256 RGBA pixels as little-endian uint32
  const out = new Uint32Array(256);
  for (let i = 0; i < 256; i++) out[i] = (255 << 24 | rgb[3 * i + 2] << 16 | rgb[3 * i + 1] << 8 | rgb[3 * i]) >>> 0;
  return out;
}

function css(rgb, i) { return `rgb(${rgb[3 * i]},${rgb[3 * i + 1]},${rgb[3 * i + 2]})`; }

function el(tag, attrs = {}, parent = null, ns = null) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') node.textContent = v; else node.setAttribute(k, v);
  }
  if (parent) parent.appendChild(node);
  return node;
}

function short(label, n = 22) { return label.length > n ? label.slice(0, n - 1) + '…' : label; }

// A pyramid of one map's colour indices: level k max-pools 2^k × 2^k cells, so a sharp peak survives the overview.
// Each level is painted into its canvas the first time it is drawn (a 2,048² map's full level waits for a zoom).
function pyramid(index, rows, cols, lut) {
  const levels = [];
  let data = index, r = rows, c = cols;
  for (;;) {
    levels.push(new Level(data, r, c, lut));
    if (Math.max(r, c) <= 256) break;
    data = pool(data, r, c); r = (r + 1) >> 1; c = (c + 1) >> 1;
  }
  return levels;
}

function pool(data, rows, cols) { // (rows × cols) → the maximum of each 2 × 2 block (the last ones may be smaller)
  const r2 = (rows + 1) >> 1, c2 = (cols + 1) >> 1, out = new Uint8Array(r2 * c2), even = cols & ~1;
  for (let i = 0; i < r2; i++) {
    const a = 2 * i * cols, b = 2 * i + 1 < rows ? a + cols : a, o = i * c2;
    let j = 0, k = o;
    for (; j < even; j += 2, k++) {
      let m = data[a + j];
      const x = data[a + j + 1], y = data[b + j], z = data[b + j + 1];
      if (x > m) m = x;
      if (y > m) m = y;
      if (z > m) m = z;
      out[k] = m;
    }
    if (j < cols) out[k] = data[a + j] > data[b + j] ? data[a + j] : data[b + j];
  }
  return out;
}

class Level {
  constructor(index, rows, cols, lut) { Object.assign(this, {index, rows, cols, lut, painted: null}); }
  get canvas() { return this.painted || (this.painted = paint(this.index, this.rows, this.cols, this.lut)); }
}

function paint(index, rows, cols, lut) {
  const canvas = document.createElement('canvas');
  canvas.width = cols; canvas.height = rows;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(cols, rows);
  const pixels = new Uint32Array(image.data.buffer);
  for (let i = 0; i < index.length; i++) pixels[i] = lut[index[i]];
  ctx.putImageData(image, 0, 0);
  return canvas;
}

class AttentionCanvas {
  constructor(parent) {
    this.parent = parent;
    this.root = el('div', {class: 'atc', tabindex: '0', role: 'group'}, parent);
    if (parent.host) parent.host.setAttribute('data-attnscope-canvas', '1'); // presentation.js leaves its keys alone
    this.bar = el('div', {class: 'atc-bar'}, this.root);
    this.titleLine = el('div', {class: 'atc-title'}, this.root);
    this.stage = el('div', {class: 'atc-stage'}, this.root);
    this.mapCanvas = el('canvas', {class: 'atc-map'}, this.stage);
    this.overCanvas = el('canvas', {class: 'atc-over'}, this.stage);
    this.svg = el('svg', {class: 'atc-svg'}, this.stage, SVG_NS);
    this.status = el('div', {class: 'atc-status', role: 'status', 'aria-live': 'polite'}, this.root);
    this.note = el('div', {class: 'atc-note'}, this.root);
    this.table = el('table', {class: 'atc-sr'}, this.root);
    this.id = null; this.pinned = null; this.view = 'head'; this.layer = 0; this.head = 0;
    this.hover = null; this.frame = 0; this.stats = {hover: [], switch: [], paint: []};
    this.listen();
    new ResizeObserver(() => this.id && this.render()).observe(this.root);
  }

  receive(bytes) {
    const {header, arrays} = parse(bytes);
    const theme = this.theme(header);
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
    if (['head', 'model', 'lines'].includes(pinned.view)) this.view = pinned.view;
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
      for (const [name, label] of [['head', 'Head'], ['model', 'Model'], ['lines', 'Lines']]) {
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
    this.svg.replaceChildren(); this.note.textContent = '';
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

  drawHead() {
    const h = this.h, font = this.font();
    this.titleLine.textContent = this.kindTitle();
    const width = Math.max(this.root.clientWidth || 600, 320);
    const left = Math.min(this.measure(h.rows) + 10, width * 0.3) + font * 1.6;
    const bottom = Math.min(this.measure(h.cols) + 10, 150) + font * 1.6;
    const room = width - left - 70, most = Math.max(240, Math.min(640, (window.innerHeight || 720) * 0.62));
    let pw = Math.min(room, most), ph = pw * h.tq / h.tk;
    if (ph > most) { ph = most; pw = ph * h.tk / h.tq; }
    pw = Math.max(pw, 80); ph = Math.max(ph, 40);
    this.plot = {x: left, y: 6, w: pw, h: ph};
    this.size(width, ph + bottom + 10);
    this.window = this.window || {x0: 0, y0: 0, w: h.tk, h: h.tq};
    this.drawMap();
    this.colourBar(left + pw + 16, 6, ph, this.a.lut, 0, 1, 'weight');
    this.axisTitles(h.row_title, h.col_title);
    clearTimeout(this.tableTimer); // after the paint: the table is for screen readers, not the frame
    this.tableTimer = setTimeout(() => this.accessibleTable(), 30);
  }

  drawMap(moving = false) {
    const ctx = this.mapCanvas.getContext('2d'), p = this.plot, w = this.window;
    ctx.clearRect(p.x - 1, p.y - 1, p.w + 2, p.h + 2);
    const levels = this.levelsOf(this.layer, this.head);
    const perPixel = Math.min(w.w / p.w, w.h / p.h);
    const k = Math.min(levels.length - 1, Math.max(0, Math.floor(Math.log2(Math.max(perPixel, 1)))));
    const s = 2 ** k;
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(levels[k].canvas, w.x0 / s, w.y0 / s, w.w / s, w.h / s, p.x, p.y, p.w, p.h);
    if (moving) { // zoom and pan paint the map alone; the labels follow once the gesture rests
      const ticks = this.svg.querySelector('.tick');
      if (ticks) ticks.style.display = 'none';
      clearTimeout(this.labelTimer);
      this.labelTimer = setTimeout(() => { this.labels(); this.paintHover(); }, 120);
    } else this.labels();
    const pooled = perPixel > 1;
    this.note.textContent = pooled ? `Overview: each pixel shows the largest of about ${Math.ceil(perPixel) ** 2} `
      + 'weights (max-pooled, so a sharp peak survives). Scroll to zoom, drag to pan, double-click to reset.'
      : (w.w < this.h.tk || w.h < this.h.tq ? 'Zoomed in: drag to pan, double-click to see the whole map.' : '');
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
    el('text', {class: 'axis-title', x: p.x + p.w / 2, y: this.H - 4, 'text-anchor': 'middle', 'font-size': font,
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
    if (h.mode !== 'maps' || this.view !== 'head' || Math.max(h.tq, h.tk) > SR_TOKENS) return;
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

  // ------------------------------------------------------------------ the model view
  drawModel() {
    const h = this.h, font = this.font();
    this.titleLine.textContent = `${h.title}: every layer × head on one scale (click one to open it)`;
    const width = Math.max(this.root.clientWidth || 600, 320), left = this.measure([`layer ${h.layers}`]) + 14;
    const [, , sq, sk] = this.thumbShape();
    const side = Math.max(24, Math.min(110 * (h.presentation ? 1.25 : 1), (width - left - 80) / h.heads - 6));
    const tw = side, th = side * sq / sk, gap = 6, top = font * 1.8;
    this.grid = {x: left, y: top, tw, th, gap};
    this.size(width, top + h.layers * (th + gap) + 10);
    const ctx = this.mapCanvas.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    const sheet = this.thumbSheet();
    const group = el('g', {'font-size': font}, this.svg, SVG_NS);
    for (let l = 0; l < h.layers; l++) {
      el('text', {x: left - 8, y: top + l * (th + gap) + th / 2, 'text-anchor': 'end', 'dominant-baseline': 'middle',
        text: `layer ${l + 1}`}, group, SVG_NS);
      for (let hd = 0; hd < h.heads; hd++) {
        ctx.drawImage(sheet, hd * sk, l * sq, sk, sq, left + hd * (tw + gap), top + l * (th + gap), tw, th);
      }
    }
    for (let hd = 0; hd < h.heads; hd++) {
      el('text', {x: left + hd * (tw + gap) + tw / 2, y: top - 6, 'text-anchor': 'middle', text: `head ${hd + 1}`},
        group, SVG_NS);
    }
    ctx.strokeStyle = '#e45756'; ctx.lineWidth = 3;
    ctx.strokeRect(left + this.head * (tw + gap) - 1.5, top + this.layer * (th + gap) - 1.5, tw + 3, th + 3);
    this.colourBar(left + h.heads * (tw + gap) + 10, top, Math.min(200, h.layers * (th + gap)), this.a.lut, 0,
      h.thumb_top, h.thumb_top < 1 ? 'weight per block' : 'weight');
  }

  thumbShape() { return this.h.sections.thumbs.shape; }

  thumbSheet() { // every thumbnail on one canvas, layers down and heads across, one pixel a block
    if (!this.thumbCanvas) {
      const [L, H, sq, sk] = this.thumbShape(), t = this.a.thumbs, index = new Uint8Array(L * sq * H * sk);
      for (let l = 0; l < L; l++) for (let hd = 0; hd < H; hd++) for (let i = 0; i < sq; i++) {
        index.set(t.subarray(((l * H + hd) * sq + i) * sk, ((l * H + hd) * sq + i + 1) * sk),
          (l * sq + i) * H * sk + hd * sk);
      }
      this.thumbCanvas = paint(index, L * sq, H * sk, this.lut);
    }
    return this.thumbCanvas;
  }

  thumbAt(x, y) {
    const g = this.grid, hd = Math.floor((x - g.x) / (g.tw + g.gap)), l = Math.floor((y - g.y) / (g.th + g.gap));
    const inside = x - g.x - hd * (g.tw + g.gap) <= g.tw && y - g.y - l * (g.th + g.gap) <= g.th;
    return inside && hd >= 0 && hd < this.h.heads && l >= 0 && l < this.h.layers ? {layer: l, head: hd} : null;
  }

  // ------------------------------------------------------------------ the lines view (BertViz)
  drawLines() {
    const h = this.h, font = this.font();
    this.titleLine.textContent = `${h.title} — layer ${this.layer + 1}: lines (width = weight)`;
    if (Math.max(h.tq, h.tk) > LINES_TOKENS) {
      this.size(Math.max(this.root.clientWidth || 600, 320), 10);
      this.note.textContent = `Lines are drawn for inputs of up to ${LINES_TOKENS} tokens (this one has `
        + `${Math.max(h.tq, h.tk)}): the head view shows it.`;
      return;
    }
    if (!this.lineHeads) this.lineHeads = new Set(Array.from({length: h.heads}, (_, i) => i));
    const width = Math.max(this.root.clientWidth || 600, 320), label = Math.min(this.measure([...h.rows, ...h.cols]),
      width * 0.25) + 12, step = Math.max(font * 1.5, 18), legend = font * 2.4;
    const n = Math.max(h.tq, h.tk), x1 = label, x2 = Math.min(width - label, label + Math.max(260, width * 0.45));
    this.size(width, legend + n * step + 10);
    this.linesGeom = {x1, x2, top: legend, step};
    this.legend(font);
    const lines = el('g', {class: 'atc-lines'}, this.svg, SVG_NS);
    this.lineGroup = lines; this.lineOf = {q: [], k: []};
    for (const hd of this.lineHeads) this.headLines(lines, hd);
    const text = el('g', {'font-size': font}, this.svg, SVG_NS);
    this.rowTicks = new Map(); this.colTicks = new Map();
    h.rows.forEach((r, i) => this.rowTicks.set(i, el('text', {x: x1 - 8, y: legend + (i + 0.5) * step,
      'text-anchor': 'end', 'dominant-baseline': 'middle', 'data-q': i, text: short(r)}, text, SVG_NS)));
    h.cols.forEach((c, i) => this.colTicks.set(i, el('text', {x: x2 + 8, y: legend + (i + 0.5) * step,
      'dominant-baseline': 'middle', 'data-k': i, text: short(c)}, text, SVG_NS)));
  }

  headLines(group, hd) {
    const h = this.h, g = this.linesGeom, colour = HEAD_COLOURS[hd % HEAD_COLOURS.length];
    for (let q = 0; q < h.tq; q++) for (let k = 0; k < h.tk; k++) {
      const w = this.value(this.layer, hd, q, k);
      if (!(w >= 0.01)) continue;
      const line = el('line', {x1: g.x1, y1: g.top + (q + 0.5) * g.step, x2: g.x2, y2: g.top + (k + 0.5) * g.step,
        stroke: colour, 'stroke-width': (w * LINE_WIDTH).toFixed(4), 'stroke-opacity': 0.7, 'data-head': hd,
        'data-q': q, 'data-k': k, 'data-weight': w.toFixed(5)}, group, SVG_NS);
      (this.lineOf.q[q] = this.lineOf.q[q] || []).push(line);
      (this.lineOf.k[k] = this.lineOf.k[k] || []).push(line);
    }
  }

  legend(font) {
    const legend = el('g', {class: 'atc-legend', 'font-size': font}, this.svg, SVG_NS);
    let x = 4;
    for (let hd = 0; hd < this.h.heads; hd++) {
      const item = el('g', {'data-head': hd, class: this.lineHeads.has(hd) ? '' : 'off', role: 'button',
        'aria-label': `head ${hd + 1}`}, legend, SVG_NS);
      el('rect', {x, y: 4, width: font, height: font, fill: HEAD_COLOURS[hd % HEAD_COLOURS.length]}, item, SVG_NS);
      el('text', {x: x + font + 4, y: 4 + font / 2, 'dominant-baseline': 'middle', text: `head ${hd + 1}`}, item,
        SVG_NS);
      x += font * 5.2;
      item.addEventListener('click', () => this.toggleHead(hd));
      item.addEventListener('dblclick', () => { this.lineHeads = new Set([hd]); this.render(); });
    }
  }

  toggleHead(hd) {
    if (this.lineHeads.has(hd)) this.lineHeads.delete(hd); else this.lineHeads.add(hd);
    this.render();
  }

  // ------------------------------------------------------------------ panels: before / after / difference
  drawPanels() {
    const h = this.h, font = this.font(), n = h.panels.length;
    this.titleLine.textContent = h.title;
    const width = Math.max(this.root.clientWidth || 600, 320), gap = 18;
    const left = Math.min(this.measure(h.panels[0].rows) + 10, width * 0.22) + font * 1.6;
    const longest = Math.max(...h.panels.map(p => Math.max(p.rows.length, p.cols.length)));
    const bottom = Math.min(Math.max(...h.panels.map(p => this.measure(p.cols))) + 10, 120) + font * 1.6;
    const side = Math.max(60, Math.min(360, (width - left - 60 - gap * (n - 1)) / n));
    const top = font * 2.6;
    this.boxes = h.panels.map((p, i) => {
      const s = side / Math.max(p.rows.length, p.cols.length) * 1;
      return {x: left + i * (side + gap), y: top, w: s * p.cols.length, h: s * p.rows.length, panel: p, i};
    });
    this.size(width, top + side + bottom + font * 3);
    const ctx = this.mapCanvas.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    this.panelLevels = this.panelLevels && this.panelLevels.id === this.id ? this.panelLevels : {id: this.id};
    for (const b of this.boxes) this.drawPanel(ctx, b, font, longest);
    this.panelBars(top + side + bottom, font);
    const x = font * 0.8, y = top + side / 2;
    el('text', {class: 'axis-title', x, y, 'text-anchor': 'middle', 'font-size': font,
      transform: `rotate(-90 ${x} ${y})`, text: h.row_title}, this.svg, SVG_NS);
  }

  drawPanel(ctx, b, font, longest) {
    const p = b.panel, lut = p.scale === 'weight' ? this.lut : this.lutSigned;
    if (!this.panelLevels[b.i]) this.panelLevels[b.i] = pyramid(this.a[`colour${b.i}`], p.rows.length, p.cols.length, lut);
    const levels = this.panelLevels[b.i];
    const k = Math.min(levels.length - 1, Math.max(0, Math.floor(Math.log2(Math.max(p.cols.length / b.w, 1)))));
    ctx.drawImage(levels[k].canvas, b.x, b.y, b.w, b.h);
    const g = el('g', {'font-size': font}, this.svg, SVG_NS);
    el('text', {x: b.x, y: b.y - font * 0.8, text: short(p.title, 48), 'font-weight': 700}, g, SVG_NS);
    const cell = b.w / p.cols.length, step = Math.max(1, Math.ceil(font * 1.2 / cell));
    if (b.i === 0) {
      for (let r = 0; r < p.rows.length; r += step) {
        el('text', {x: b.x - 6, y: b.y + (r + 0.5) * cell, 'text-anchor': 'end', 'dominant-baseline': 'middle',
          text: short(p.rows[r])}, g, SVG_NS);
      }
    }
    for (let c = 0; c < p.cols.length; c += step) {
      const x = b.x + (c + 0.5) * cell, y = b.y + b.h + 6;
      el('text', {x, y, 'text-anchor': 'end', 'dominant-baseline': 'middle', transform: `rotate(-90 ${x} ${y})`,
        text: short(p.cols[c])}, g, SVG_NS);
    }
  }

  panelBars(y, font) { // one horizontal colour bar per scale, under the panels that share it
    const ctx = this.mapCanvas.getContext('2d'), seen = new Map();
    for (const b of this.boxes) if (!seen.has(b.panel.scale)) seen.set(b.panel.scale, b);
    let x = this.boxes[0].x;
    for (const [scale, b] of seen) {
      const width = 160;
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(this.scaleImage(scale === 'weight' ? this.lut : this.lutSigned, true), x, y, width, 10);
      const g = el('g', {'font-size': font}, this.svg, SVG_NS);
      el('text', {x, y: y + 10 + font, text: b.panel.low.toPrecision(2)}, g, SVG_NS);
      el('text', {x: x + width, y: y + 10 + font, 'text-anchor': 'end', text: b.panel.high.toPrecision(2)}, g, SVG_NS);
      el('text', {class: 'axis-title', x: x + width / 2, y: y - 4, 'text-anchor': 'middle', text: scale}, g, SVG_NS);
      x += width + 60;
    }
  }

  panelValue(i, q, k) {
    const p = this.h.panels[i];
    return q < p.rows.length && k < p.cols.length ? half(this.a[`value${i}`][q * p.cols.length + k]) : null;
  }

  // ------------------------------------------------------------------ hover (one frame, no message)
  paintHover() {
    const ctx = this.overCanvas.getContext('2d');
    ctx.clearRect(0, 0, this.W || 0, this.H || 0);
    for (const node of this.svg.querySelectorAll('.hot')) node.classList.remove('hot');
    const hv = this.hover;
    if (this.h.mode === 'panels') return this.hoverPanels(ctx, hv);
    if (this.view === 'lines') return this.hoverLines(hv);
    if (this.view === 'model') {
      this.status.textContent = hv && hv.thumb ? `Layer ${hv.thumb.layer + 1}, head ${hv.thumb.head + 1}: click to `
        + 'open it in the head view.' : 'Click a thumbnail to open that head; ←/→ heads, ↑/↓ layers.';
      return;
    }
    this.hoverHead(ctx, hv);
  }

  hoverHead(ctx, hv) {
    const h = this.h, p = this.plot, w = this.window;
    if (!hv) { this.status.textContent = `${this.kindTitle()}. Hover a cell for its weight; ←/→ heads, ↑/↓ layers.`; return; }
    const cellW = p.w / w.w, cellH = p.h / w.h;
    ctx.fillStyle = this.dark ? 'rgba(255,255,255,0.16)' : 'rgba(255,255,255,0.28)';
    if (hv.q != null) ctx.fillRect(p.x, p.y + (hv.q - w.y0) * cellH, p.w, cellH);
    if (hv.k != null) ctx.fillRect(p.x + (hv.k - w.x0) * cellW, p.y, cellW, p.h);
    if (hv.q != null) this.rowTicks.get(hv.q)?.classList.add('hot');
    if (hv.k != null) this.colTicks.get(hv.k)?.classList.add('hot');
    if (hv.q != null && hv.k != null) {
      ctx.strokeStyle = '#e45756'; ctx.lineWidth = 2;
      ctx.strokeRect(p.x + (hv.k - w.x0) * cellW, p.y + (hv.q - w.y0) * cellH, Math.max(cellW, 2), Math.max(cellH, 2));
      const v = this.value(this.layer, this.head, hv.q, hv.k);
      this.status.textContent = `Layer ${this.layer + 1}, head ${this.head + 1}: query “${h.rows[hv.q]}” → key `
        + `“${h.cols[hv.k]}”: weight ${h.values ? v.toFixed(4) : '≈ ' + v.toFixed(3)}`;
    } else if (hv.q != null) {
      this.status.textContent = `Query “${h.rows[hv.q]}”: its row (the keys it reads) is highlighted.`;
    } else {
      this.status.textContent = `Key “${h.cols[hv.k]}”: its column (the queries reading it) is highlighted.`;
    }
  }

  hoverLines(hv) {
    const group = this.lineGroup;
    if (!group) return;
    for (const line of group.querySelectorAll('.keep')) line.classList.remove('keep');
    const kept = hv ? (hv.q != null ? this.lineOf.q[hv.q] : this.lineOf.k[hv.k]) || [] : null;
    group.classList.toggle('only', !!kept);
    if (!kept) { this.status.textContent = 'Hover a token to keep only its lines; click a head\'s colour to toggle it, '
      + 'double-click it to show it alone.'; return; }
    for (const line of kept) line.classList.add('keep');
    const token = hv.q != null ? this.h.rows[hv.q] : this.h.cols[hv.k];
    (hv.q != null ? this.rowTicks.get(hv.q) : this.colTicks.get(hv.k))?.classList.add('hot');
    this.status.textContent = `${hv.q != null ? 'Query' : 'Key'} “${token}”: ${kept.length} lines of weight ≥ 0.01.`;
  }

  hoverPanels(ctx, hv) {
    if (!hv || hv.q == null) { this.status.textContent = 'Hover a cell: the same cell is outlined in every panel.'; return; }
    const parts = [];
    ctx.strokeStyle = '#e45756'; ctx.lineWidth = 2;
    for (const b of this.boxes) {
      const p = b.panel, cell = b.w / p.cols.length, v = this.panelValue(b.i, hv.q, hv.k);
      if (v == null) continue;
      ctx.strokeRect(b.x + hv.k * cell, b.y + hv.q * cell, Math.max(cell, 2), Math.max(cell, 2));
      parts.push(`${p.title}: ${p.scale === 'weight' ? v.toFixed(4) : (v >= 0 ? '+' : '') + v.toFixed(4)}`);
    }
    const first = this.h.panels[0];
    this.status.textContent = `Query “${first.rows[hv.q] ?? hv.q}” → key “${first.cols[hv.k] ?? hv.k}”. ${parts.join(' · ')}`;
  }

  locate(x, y) { // what the pointer is over: a cell, a row / column label, a thumbnail, a token
    const h = this.h;
    if (h.mode === 'panels') {
      for (const b of this.boxes) {
        if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + b.h) {
          const cell = b.w / b.panel.cols.length;
          return {q: Math.floor((y - b.y) / cell), k: Math.floor((x - b.x) / cell)};
        }
      }
      return null;
    }
    if (this.view === 'model') { const t = this.thumbAt(x, y); return t ? {thumb: t} : null; }
    if (this.view === 'lines') {
      const g = this.linesGeom; if (!g) return null;
      const i = Math.floor((y - g.top) / g.step);
      if (i < 0) return null;
      if (x < g.x1 + 4 && i < h.tq) return {q: i};
      if (x > g.x2 - 4 && i < h.tk) return {k: i};
      return null;
    }
    const p = this.plot, w = this.window;
    const q = Math.floor(w.y0 + (y - p.y) / p.h * w.h), k = Math.floor(w.x0 + (x - p.x) / p.w * w.w);
    const inRows = y >= p.y && y < p.y + p.h, inCols = x >= p.x && x < p.x + p.w;
    if (inRows && inCols) return {q, k};
    if (inRows && x < p.x) return {q};
    if (inCols && y > p.y + p.h) return {k};
    return null;
  }

  // ------------------------------------------------------------------ zoom and pan (head view)
  zoom(factor, x, y) {
    const h = this.h, p = this.plot, w = this.window;
    const most = Math.max(h.tq, h.tk), fewest = Math.max(2, Math.min(most, Math.ceil(Math.max(p.w, p.h) / 48)));
    const scale = Math.min(Math.max(w.w * factor, Math.min(h.tk, fewest * h.tk / most)), h.tk) / w.w;
    const cx = w.x0 + (x - p.x) / p.w * w.w, cy = w.y0 + (y - p.y) / p.h * w.h;
    const nw = w.w * scale, nh = w.h * scale;
    this.window = {w: nw, h: nh, x0: cx - (cx - w.x0) * scale, y0: cy - (cy - w.y0) * scale};
    this.clampWindow();
  }

  clampWindow() {
    const h = this.h, w = this.window;
    w.w = Math.min(w.w, h.tk); w.h = Math.min(w.h, h.tq);
    w.x0 = Math.min(Math.max(w.x0, 0), h.tk - w.w); w.y0 = Math.min(Math.max(w.y0, 0), h.tq - w.h);
  }

  redrawMap() { // one zoom or pan step
    const t0 = performance.now();
    this.drawMap(true); this.paintHover();
    this.stats.paint.push(performance.now() - t0);
  }

  listen() {
    const point = e => { const r = this.stage.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    this.stage.addEventListener('pointermove', e => {
      const [x, y] = point(e);
      if (this.drag) {
        const p = this.plot, w = this.window, d = this.drag;
        w.x0 = d.x0 - (x - d.x) / p.w * w.w; w.y0 = d.y0 - (y - d.y) / p.h * w.h;
        d.moved = d.moved || Math.abs(x - d.x) + Math.abs(y - d.y) > 3;
        this.clampWindow(); this.schedule(() => this.redrawMap(), e.timeStamp);
        return;
      }
      this.hover = this.locate(x, y);
      this.schedule(() => this.paintHover(), e.timeStamp);
    });
    this.stage.addEventListener('pointerleave', () => { this.hover = null; this.schedule(() => this.paintHover()); });
    this.stage.addEventListener('pointerdown', e => {
      const [x, y] = point(e);
      if (this.h.mode === 'maps' && this.view === 'head' && this.locate(x, y)?.k != null) {
        this.drag = {x, y, x0: this.window.x0, y0: this.window.y0, moved: false};
        this.stage.setPointerCapture(e.pointerId);
      }
    });
    this.stage.addEventListener('pointerup', () => { this.drag = null; });
    this.stage.addEventListener('click', e => {
      const [x, y] = point(e);
      const t = this.view === 'model' && this.h.mode === 'maps' ? this.thumbAt(x, y) : null;
      if (t) { this.view = 'head'; this.window = null; this.layer = -1; this.go(t.layer, t.head); }
    });
    this.stage.addEventListener('dblclick', () => {
      if (this.h.mode === 'maps' && this.view === 'head') { this.window = null; this.render(); }
    });
    this.stage.addEventListener('wheel', e => {
      if (this.h.mode !== 'maps' || this.view !== 'head') return;
      e.preventDefault();
      const [x, y] = point(e);
      this.zoom(e.deltaY > 0 ? 1.25 : 0.8, x, y); this.schedule(() => this.redrawMap(), e.timeStamp);
    }, {passive: false});
    this.root.addEventListener('keydown', e => this.key(e));
  }

  key(e) {
    if (this.h?.mode !== 'maps' || e.altKey || e.ctrlKey || e.metaKey) return;
    const moves = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]}[e.key];
    if (moves) {
      e.preventDefault(); e.stopPropagation();
      this.go(this.layer + moves[0], this.head + moves[1]);
    } else if (e.key === 'Escape' && this.window) { this.window = null; this.render(); }
  }

  schedule(work, since = performance.now()) { // one paint per frame, timed from the event for the benchmark
    this.pending = work; this.since = Math.min(this.since ?? since, since);
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const todo = this.pending, since0 = this.since;
      this.pending = null; this.since = null;
      if (todo) todo();
      this.stats.hover.push(performance.now() - since0);
      if (this.stats.hover.length > 2000) this.stats.hover.splice(0, 1000);
    });
  }

  // ------------------------------------------------------------------ exports (in the browser)
  fileName(ext) {
    const h = this.h;
    return h.mode === 'maps' ? `${h.kind}-layer${this.layer + 1}-head${this.head + 1}.${ext}` : `${h.name || 'comparison'}.${ext}`;
  }

  download(blob, name) {
    const a = el('a', {href: URL.createObjectURL(blob), download: name}, this.root);
    a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 5000);
  }

  exportPNG() { // the map at native resolution: one pixel a cell (or a whole number of pixels for small maps)
    const h = this.h, maps = h.mode === 'maps'
      ? [{rows: h.tq, cols: h.tk, canvas: this.levelsOf(this.layer, this.head)[0].canvas}]
      : h.panels.map((p, i) => ({rows: p.rows.length, cols: p.cols.length,
        canvas: (this.panelLevels?.[i] || pyramid(this.a[`colour${i}`], p.rows.length, p.cols.length,
          p.scale === 'weight' ? this.lut : this.lutSigned))[0].canvas}));
    const most = Math.max(...maps.map(m => Math.max(m.rows, m.cols))), s = Math.max(1, Math.floor(1024 / most));
    const gap = maps.length > 1 ? 8 * s : 0;
    const out = el('canvas', {});
    out.width = maps.reduce((a, m) => a + m.cols * s, 0) + gap * (maps.length - 1);
    out.height = Math.max(...maps.map(m => m.rows * s));
    const ctx = out.getContext('2d');
    ctx.imageSmoothingEnabled = false;
    ctx.fillStyle = this.dark ? '#0e1117' : '#ffffff'; ctx.fillRect(0, 0, out.width, out.height);
    let x = 0;
    for (const m of maps) { ctx.drawImage(m.canvas, x, 0, m.cols * s, m.rows * s); x += m.cols * s + gap; }
    out.toBlob(blob => this.download(blob, this.fileName('png')), 'image/png');
    this.root.dataset.exported = `${out.width}x${out.height}`;
  }

  exportSVG() { // a vector map of the visible head (or the panels) with its labels, for slides
    const h = this.h, cell = 20, font = 12, pad = 140, esc = s => s.replace(/[&<>"]/g,
      c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'})[c]);
    const maps = h.mode === 'maps' ? [{rows: h.rows, cols: h.cols, lut: this.a.lut,
      index: this.headIndex(this.layer, this.head), title: this.kindTitle()}]
      : h.panels.map((p, i) => ({rows: p.rows, cols: p.cols, lut: p.scale === 'weight' ? this.a.lut : this.a.lut_signed,
        index: this.a[`colour${i}`], title: p.title}));
    const parts = [];
    let x0 = pad;
    for (const m of maps) {
      parts.push(`<text x="${x0}" y="${font + 4}" font-size="${font}" font-weight="700">${esc(m.title)}</text>`);
      m.rows.forEach((r, q) => { if (x0 === pad) parts.push(`<text x="${pad - 6}" y="${30 + (q + 0.6) * cell}" font-size="${font}" text-anchor="end">${esc(r)}</text>`); });
      m.cols.forEach((c, k) => { const x = x0 + (k + 0.5) * cell, y = 34 + m.rows.length * cell; parts.push(`<text x="${x}" y="${y}" font-size="${font}" text-anchor="end" transform="rotate(-90 ${x} ${y})">${esc(c)}</text>`); });
      for (let q = 0; q < m.rows.length; q++) for (let k = 0; k < m.cols.length; k++) {
        parts.push(`<rect x="${x0 + k * cell}" y="${30 + q * cell}" width="${cell}" height="${cell}" fill="${css(m.lut, m.index[q * m.cols.length + k])}"/>`);
      }
      x0 += m.cols.length * cell + 30;
    }
    const height = 30 + Math.max(...maps.map(m => m.rows.length)) * cell + pad;
    const text = `<svg xmlns="${SVG_NS}" width="${x0 + 20}" height="${height}" font-family="sans-serif">${parts.join('')}</svg>`;
    this.download(new Blob([text], {type: 'image/svg+xml'}), this.fileName('svg'));
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
