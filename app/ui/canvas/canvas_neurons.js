// The attention canvas's neuron view, as methods of AttentionCanvas (canvas.js): the head's map, and under it,
// for the (query, key) pair under the pointer, the query q, the key k and their product q⊙k per dimension, their
// sum q·k, the score scale · q·k and the weight softmax gives it. The queries and keys are the payload's float16
// `q` (l, H, Tq, dk) and `k` (l, Hkv, Tk, dk) sections of the layers its header's `neurons` lists.
Object.assign(AttentionCanvas.prototype, {
  neuronRoom() { return this.view === 'neuron' ? Math.round(this.font() * 9.5) : 0; },

  neuronSlot() { const n = this.h.neurons; return n ? n.layers.indexOf(this.layer) : -1; },

  neuronVectors(q, k) { // Float32Arrays q, k and q⊙k (dk each) of the hovered pair of the shown head
    const n = this.h.neurons, dk = n.dk, slot = this.neuronSlot(), g = n.kv_head_of[this.head];
    const qa = (((slot * this.h.heads + this.head) * this.h.tq) + q) * dk;
    const ka = (((slot * n.kv_heads + g) * this.h.tk) + k) * dk;
    const qv = new Float32Array(dk), kv = new Float32Array(dk), prod = new Float32Array(dk);
    for (let d = 0; d < dk; d++) {
      qv[d] = half(this.a.q[qa + d]); kv[d] = half(this.a.k[ka + d]); prod[d] = qv[d] * kv[d];
    }
    return {qv, kv, prod};
  },

  neuronNumbers(q, k) { // q·k, the score and the weight of the pair (and the dimensions adding the most)
    const n = this.h.neurons, slot = this.neuronSlot(), {qv, kv, prod} = this.neuronVectors(q, k);
    let dot = 0;
    for (const p of prod) dot += p;
    const scale = n.scale[slot], score = dot * scale;
    const top = Array.from(prod.keys()).sort((a, b) => Math.abs(prod[b]) - Math.abs(prod[a])).slice(0, 3);
    return {qv, kv, prod, dot, scale, score, weight: this.value(this.layer, this.head, q, k), top};
  },

  hoverNeurons(ctx, hv) {
    const box = this.neuronBox, h = this.h, n = h.neurons, font = this.font();
    if (!box) return;
    ctx.font = `${font}px "Source Sans", sans-serif`;
    ctx.fillStyle = this.dark ? '#e6eaf1' : '#31333f'; ctx.textBaseline = 'middle'; ctx.textAlign = 'left';
    if (!n) return ctx.fillText(h.pinned?.view === 'neuron' ? 'This model\'s scores are not a dot product of queries '
      + 'and keys: no neuron view.' : 'Loading the queries and keys…', box.x, box.y + font);
    if (this.neuronSlot() < 0) return ctx.fillText(`Pin this head to load layer ${this.layer + 1}'s queries and keys.`,
      box.x, box.y + font);
    if (!hv || hv.q == null || hv.k == null) return ctx.fillText('Hover a cell: its query q, key k and q⊙k per '
      + 'dimension appear here, with the score they make.', box.x, box.y + font);
    const m = this.neuronNumbers(hv.q, hv.k);
    const labelW = Math.min(box.w * 0.25, font * 9), rowH = font * 1.55, dk = n.dk;
    const cell = Math.max(2, Math.min(font * 2, (box.w - labelW - font * 6) / dk));
    const vecTop = Math.max(...m.qv.map(Math.abs), ...m.kv.map(Math.abs), 1e-9);
    const prodTop = Math.max(...m.prod.map(Math.abs), 1e-9);
    const rows = [[`q  “${short(h.rows[hv.q], 12)}”`, m.qv, vecTop],
      [`k  “${short(h.cols[hv.k], 12)}”`, m.kv, vecTop], ['q⊙k', m.prod, prodTop]];
    rows.forEach(([label, vec, top], r) => {
      const y = box.y + font * 0.4 + r * rowH;
      ctx.fillStyle = this.dark ? '#e6eaf1' : '#31333f'; ctx.textAlign = 'right';
      ctx.fillText(label, box.x + labelW - 6, y + rowH * 0.4);
      for (let d = 0; d < dk; d++) {
        const i = Math.max(0, Math.min(255, Math.round(127.5 + 127.5 * vec[d] / top)));
        ctx.fillStyle = css(this.a.lut_signed, i);
        ctx.fillRect(box.x + labelW + d * cell, y, Math.max(cell - (cell > 4 ? 1 : 0), 1), rowH * 0.8);
      }
      ctx.fillStyle = this.dark ? '#a3a8b4' : '#6b6f7b'; ctx.textAlign = 'left';
      ctx.fillText(`±${top.toPrecision(2)}`, box.x + labelW + dk * cell + 6, y + rowH * 0.4);
    });
    const sum = `q·k = Σ q⊙k = ${m.dot.toFixed(3)}; score = q·k × ${m.scale.toPrecision(3)}`
      + `${Math.abs(m.scale * Math.sqrt(dk) - 1) < 1e-3 ? ' (1/√d_k)' : ''} = ${m.score.toFixed(3)}`
      + `${n.plain ? '' : ' (before the bias / cap)'}${n.temperature !== 1 ? `, × β ${n.temperature}` : ''}`
      + ` → weight ${m.weight.toFixed(4)}`;
    ctx.fillStyle = this.dark ? '#e6eaf1' : '#31333f';
    ctx.fillText(sum, box.x, box.y + font * 0.4 + 3 * rowH + font * 0.6);
    ctx.fillStyle = this.dark ? '#a3a8b4' : '#6b6f7b';
    ctx.fillText(`Largest terms: ${m.top.map(d => `d${d + 1} ${m.prod[d] >= 0 ? '+' : ''}${m.prod[d].toFixed(3)}`)
      .join(', ')} (of ${dk} dimensions). Blue −, orange +.`, box.x, box.y + font * 0.4 + 3 * rowH + font * 1.95);
    this.status.textContent += `; q·k ${m.dot.toFixed(3)}, score ${m.score.toFixed(3)}`;
    this.root.dataset.neuron = JSON.stringify({q: hv.q, k: hv.k, dot: m.dot, score: m.score, weight: m.weight});
  }
});
