// The attention canvas's input: hover painted in one frame, zoom and pan of the head view, pointer and keys, as
// methods of AttentionCanvas (canvas.js). None of it messages the server.
Object.assign(AttentionCanvas.prototype, {
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
    if (this.view === 'neuron') this.hoverNeurons(ctx, hv);
  },

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
  },

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
  },

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
  },

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
  },

  // ------------------------------------------------------------------ zoom and pan (head view)
  zoom(factor, x, y) {
    const h = this.h, p = this.plot, w = this.window;
    const most = Math.max(h.tq, h.tk), fewest = Math.max(2, Math.min(most, Math.ceil(Math.max(p.w, p.h) / 48)));
    const scale = Math.min(Math.max(w.w * factor, Math.min(h.tk, fewest * h.tk / most)), h.tk) / w.w;
    const cx = w.x0 + (x - p.x) / p.w * w.w, cy = w.y0 + (y - p.y) / p.h * w.h;
    const nw = w.w * scale, nh = w.h * scale;
    this.window = {w: nw, h: nh, x0: cx - (cx - w.x0) * scale, y0: cy - (cy - w.y0) * scale};
    this.clampWindow();
  },

  clampWindow() {
    const h = this.h, w = this.window;
    w.w = Math.min(w.w, h.tk); w.h = Math.min(w.h, h.tq);
    w.x0 = Math.min(Math.max(w.x0, 0), h.tk - w.w); w.y0 = Math.min(Math.max(w.y0, 0), h.tq - w.h);
  },

  redrawMap() { // one zoom or pan step
    const t0 = performance.now();
    this.drawMap(true); this.paintHover();
    this.stats.paint.push(performance.now() - t0);
  },

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
      const at = this.locate(x, y), key = at ? `${at.q},${at.k},${at.thumb?.layer},${at.thumb?.head}` : '';
      if (this.hover && key === this.hoverKey && this.view === this.hoverView) return; // the same cell: no paint
      this.hover = at; this.hoverKey = key; this.hoverView = this.view;
      this.schedule(() => this.paintHover(), e.timeStamp);
    });
    this.stage.addEventListener('pointerleave', () => {
      this.hover = null; this.hoverKey = ''; this.schedule(() => this.paintHover());
    });
    this.stage.addEventListener('pointerdown', e => {
      const [x, y] = point(e);
      if (this.showsMap() && this.locate(x, y)?.k != null) {
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
      if (this.showsMap()) { this.window = null; this.render(); }
    });
    this.stage.addEventListener('wheel', e => {
      if (!this.showsMap()) return;
      e.preventDefault();
      const [x, y] = point(e);
      this.zoom(e.deltaY > 0 ? 1.25 : 0.8, x, y); this.schedule(() => this.redrawMap(), e.timeStamp);
    }, {passive: false});
    this.root.addEventListener('keydown', e => this.key(e));
  },

  key(e) {
    if (this.h?.mode !== 'maps' || e.altKey || e.ctrlKey || e.metaKey) return;
    const moves = {ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0]}[e.key];
    if (moves) {
      e.preventDefault(); e.stopPropagation();
      this.go(this.layer + moves[0], this.head + moves[1]);
    } else if (e.key === 'Escape' && this.window) { this.window = null; this.render(); }
  },

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
});
