// The attention canvas's other views (model, lines, before / after / difference panels) and its exports, as
// methods of AttentionCanvas (canvas.js).
Object.assign(AttentionCanvas.prototype, {
  // ------------------------------------------------------------------ the model view
  drawModel() {
    const h = this.h, font = this.font();
    this.titleLine.textContent = `${h.title}: every layer × head on one scale (click one to open it)`;
    const width = Math.max(this.root.clientWidth || 600, 320), left = this.measure([`layer ${h.layers}`]) + 14;
    const [, , sq, sk] = this.thumbShape();
    const gap = 6, top = font * 1.8;
    let side = Math.max(24, Math.min(110 * (h.presentation ? 1.25 : 1), (width - left - 80) / h.heads - 6));
    if (h.presentation) { // the whole grid on the projector's first screen
      side = Math.max(24, Math.min(side, ((this.firstScreenRoom() - top - 10) / h.layers - gap) * sk / sq));
    }
    const tw = side, th = side * sq / sk;
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
  },

  thumbShape() { return this.h.sections.thumbs.shape; },

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
  },

  thumbAt(x, y) {
    const g = this.grid, hd = Math.floor((x - g.x) / (g.tw + g.gap)), l = Math.floor((y - g.y) / (g.th + g.gap));
    const inside = x - g.x - hd * (g.tw + g.gap) <= g.tw && y - g.y - l * (g.th + g.gap) <= g.th;
    return inside && hd >= 0 && hd < this.h.heads && l >= 0 && l < this.h.layers ? {layer: l, head: hd} : null;
  },

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
  },

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
  },

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
  },

  toggleHead(hd) {
    if (this.lineHeads.has(hd)) this.lineHeads.delete(hd); else this.lineHeads.add(hd);
    this.render();
  },

  // ------------------------------------------------------------------ panels: before / after / difference
  drawPanels() {
    const h = this.h, font = this.font(), n = h.panels.length;
    this.titleLine.textContent = h.title;
    const width = Math.max(this.root.clientWidth || 600, 320), gap = 18;
    const left = Math.min(this.measure(h.panels[0].rows) + 10, width * 0.22) + font * 1.6;
    const longest = Math.max(...h.panels.map(p => Math.max(p.rows.length, p.cols.length)));
    const bottom = Math.min(Math.max(...h.panels.map(p => this.measure(p.cols))) + 10, 120) + font * 1.6;
    const top = font * 2.6;
    let side = Math.max(60, Math.min(360, (width - left - 60 - gap * (n - 1)) / n));
    if (h.presentation) side = Math.max(60, Math.min(side, this.firstScreenRoom() - top - bottom - font * 3));
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
  },

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
  },

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
  },

  panelValue(i, q, k) {
    const p = this.h.panels[i];
    return q < p.rows.length && k < p.cols.length ? half(this.a[`value${i}`][q * p.cols.length + k]) : null;
  },

  // ------------------------------------------------------------------ exports (in the browser)
  fileName(ext) {
    const h = this.h;
    return h.mode === 'maps' ? `${h.kind}-layer${this.layer + 1}-head${this.head + 1}.${ext}` : `${h.name || 'comparison'}.${ext}`;
  },

  download(blob, name) {
    const a = el('a', {href: URL.createObjectURL(blob), download: name}, this.root);
    a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 5000);
  },

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
  },

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
});
