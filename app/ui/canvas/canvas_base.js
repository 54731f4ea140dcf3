// The attention canvas's helpers: the payload's decoding, colour tables, DOM elements and the max-pooled levels
// of a big map. app/ui/canvas/module.py joins the canvas*.js files, in its PARTS order, into the one module
// Streamlit loads (and the notebook widget inlines).


const STATES = new WeakMap();
const LINE_WIDTH = 8; // the lines view's stroke width for a weight of 1 (px): width = weight × LINE_WIDTH
const LINES_TOKENS = 256; // the lines view draws inputs up to this many tokens
const SR_TOKENS = 64; // the hidden table for screen readers, and the SVG export, up to this many tokens
const MAX_LABELS = 400; // labels drawn on one axis at most (the rest are thinned)
const HEAD_COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000',
  '#7f7f7f', '#8c564b', '#9467bd', '#17becf'];
const SVG_NS = 'http://www.w3.org/2000/svg';
const STRIP_CELLS = 1 << 18; // cells a level colours in one slice of idle time (about a millisecond)

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
// Each level is coloured once into its own canvas, in strips of STRIP_CELLS: the coarsest when first drawn, the
// finer ones in idle time (AttentionCanvas.warm), so a zoom step only copies a region of a ready canvas.
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
  constructor(index, rows, cols, lut) { Object.assign(this, {index, rows, cols, lut, painted: null, done: 0}); }

  get ready() { return this.done >= this.rows; }

  get canvas() { // the whole level, coloured now if it is not yet
    while (!this.ready) this.paintStrip();
    return this.painted;
  }

  paintStrip() { // colours the next STRIP_CELLS cells' rows through the colour table
    if (!this.painted) {
      this.painted = document.createElement('canvas');
      this.painted.width = this.cols; this.painted.height = this.rows;
    }
    const r0 = this.done, r1 = Math.min(this.rows, r0 + Math.max(1, Math.floor(STRIP_CELLS / this.cols)));
    const ctx = this.painted.getContext('2d'), image = ctx.createImageData(this.cols, r1 - r0);
    const pixels = new Uint32Array(image.data.buffer), lut = this.lut, index = this.index, base = r0 * this.cols;
    for (let i = 0; i < pixels.length; i++) pixels[i] = lut[index[base + i]];
    ctx.putImageData(image, 0, r0);
    this.done = r1;
  }
}

const idle = window.requestIdleCallback ? f => window.requestIdleCallback(f, {timeout: 50}) : f => setTimeout(f, 0);

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
