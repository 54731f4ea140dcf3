// The attention canvas's WebGL2 path for big maps (canvas.js's blitMap asks it first): each max-pooled level of the
// shown head is a texture of its uint8 colour indices, uploaded once, and the colour table a 256 × 1 texture; the
// fragment shader reads the cell under each pixel and its colour, so a zoom or pan step is one draw of the plot.
// Like the 2D levels, the finer textures are uploaded in strips in idle time (AttentionCanvas.warm).
// Canvas 2D is the fallback where getContext('webgl2') is null (or the context is lost), and the choice where
// WebGL2 itself runs on the CPU (SwiftShader, llvmpipe): there a 2D copy of a ready canvas is the cheaper step.
const GL_CELLS = 1 << 16; // maps of more cells than this are drawn by WebGL2 when it is there

const GL_VERTEX = `#version 300 es
out vec2 uv;
void main() { // one triangle covering the plot; uv runs 0..1 left to right and top to bottom
  vec2 p = vec2(gl_VertexID == 1 ? 3.0 : -1.0, gl_VertexID == 2 ? -3.0 : 1.0);
  uv = vec2((p.x + 1.0) / 2.0, (1.0 - p.y) / 2.0);
  gl_Position = vec4(p, 0.0, 1.0);
}`;

const GL_FRAGMENT = `#version 300 es
precision highp float;
uniform sampler2D cells; // R8: the level's colour indices / 255
uniform sampler2D lut;   // RGBA8 256 × 1
uniform vec4 win;        // the window on the level: x0, y0, width, height in its cells
in vec2 uv;
out vec4 colour;
void main() {
  ivec2 size = textureSize(cells, 0);
  ivec2 at = clamp(ivec2(floor(win.xy + uv * win.zw)), ivec2(0), size - 1);
  int index = int(texelFetch(cells, at, 0).r * 255.0 + 0.5);
  colour = texelFetch(lut, ivec2(index, 0), 0);
}`;

class GLMap {
  static create(canvas) {
    const gl = canvas.getContext('webgl2', {antialias: false, alpha: true, premultipliedAlpha: false,
      preserveDrawingBuffer: true});
    if (!gl) return null;
    try {
      return new GLMap(gl);
    } catch (error) {
      console.warn('attention canvas: WebGL2 unusable, drawing with Canvas 2D:', error);
      return null;
    }
  }

  constructor(gl) {
    this.gl = gl; this.textures = new Map(); this.lutFor = null;
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    this.software = /swiftshader|llvmpipe|software/i.test(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : '');
    const shader = (type, text) => {
      const s = gl.createShader(type);
      gl.shaderSource(s, text); gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
      return s;
    };
    const program = gl.createProgram();
    gl.attachShader(program, shader(gl.VERTEX_SHADER, GL_VERTEX));
    gl.attachShader(program, shader(gl.FRAGMENT_SHADER, GL_FRAGMENT));
    gl.linkProgram(program);
    if (!gl.getProgramParameter(program, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(program));
    this.program = program; this.win = gl.getUniformLocation(program, 'win');
    gl.useProgram(program);
    gl.uniform1i(gl.getUniformLocation(program, 'cells'), 0);
    gl.uniform1i(gl.getUniformLocation(program, 'lut'), 1);
    this.lutTexture = this.texture();
  }

  texture() {
    const gl = this.gl, t = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, t);
    for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
    for (const p of [gl.TEXTURE_WRAP_S, gl.TEXTURE_WRAP_T]) gl.texParameteri(gl.TEXTURE_2D, p, gl.CLAMP_TO_EDGE);
    return t;
  }

  setLut(lut32) { // the colour table (256 little-endian RGBA uint32) as a 256 × 1 texture
    if (this.lutFor === lut32) return;
    const gl = this.gl;
    gl.activeTexture(gl.TEXTURE1); gl.bindTexture(gl.TEXTURE_2D, this.lutTexture);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, 256, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(lut32.buffer));
    this.lutFor = lut32;
  }

  entry(level) { // the level's R8 texture of colour indices and how many of its rows are uploaded (a few kept)
    let found = this.textures.get(level);
    if (found) return found;
    const gl = this.gl;
    if (this.textures.size >= 8) {
      const [oldest, old] = this.textures.entries().next().value;
      gl.deleteTexture(old.texture); this.textures.delete(oldest);
    }
    found = {texture: this.texture(), done: 0};
    gl.texStorage2D(gl.TEXTURE_2D, 1, gl.R8, level.cols, level.rows);
    this.textures.set(level, found);
    return found;
  }

  uploaded(level) { const found = this.textures.get(level); return !!found && found.done >= level.rows; }

  uploadStrip(level) { // the next STRIP_CELLS cells' rows of the level into its texture
    const gl = this.gl, found = this.entry(level), r0 = found.done;
    const r1 = Math.min(level.rows, r0 + Math.max(1, Math.floor(STRIP_CELLS / level.cols)));
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, found.texture);
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, r0, level.cols, r1 - r0, gl.RED, gl.UNSIGNED_BYTE,
      level.index.subarray(r0 * level.cols, r1 * level.cols));
    found.done = r1;
  }

  draw(level, scale, window, width, height) { // the window (in full-map cells) of ``level`` over width × height px
    const gl = this.gl;
    if (gl.isContextLost()) return false;
    if (gl.canvas.width !== width || gl.canvas.height !== height) {
      gl.canvas.width = width; gl.canvas.height = height;
    }
    gl.viewport(0, 0, width, height);
    gl.useProgram(this.program);
    while (!this.uploaded(level)) this.uploadStrip(level);
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, this.entry(level).texture);
    gl.activeTexture(gl.TEXTURE1); gl.bindTexture(gl.TEXTURE_2D, this.lutTexture);
    gl.uniform4f(this.win, window.x0 / scale, window.y0 / scale, window.w / scale, window.h / scale);
    gl.drawArrays(gl.TRIANGLES, 0, 3);
    return true;
  }
}

Object.assign(AttentionCanvas.prototype, {
  usesGL() { // WebGL2 for big maps on a GPU (``this.gpu``: 'auto', or 'on' / 'off' to choose), when there is one
    const choice = this.gpu || 'auto';
    if (choice === 'off' || (choice === 'auto' && this.cells() <= GL_CELLS)) return false;
    if (this.glMap === undefined) {
      this.glMap = GLMap.create(this.glCanvas);
      this.glCanvas.addEventListener('webglcontextlost', () => { this.glMap = null; this.render(); }); // 2D from now
    }
    return !!this.glMap && (choice === 'on' || !this.glMap.software);
  },

  blitGL(levels, k) { // the window from level k (or, while it is uploaded, the next coarser one uploaded) on the
    // WebGL2 canvas laid over the plot; false: use Canvas 2D
    const p = this.plot, dpr = this.dpr || 1, c = this.glCanvas;
    const waits = l => !this.glMap.uploaded(l) && l.rows * l.cols > STRIP_CELLS; // more than one strip to upload
    while (k < levels.length - 1 && waits(levels[k])) k++;
    Object.assign(c.style, {display: 'block', left: `${p.x}px`, top: `${p.y}px`, width: `${p.w}px`,
      height: `${p.h}px`});
    this.glMap.setLut(this.lut);
    const drawn = this.glMap.draw(levels[k], 2 ** k, this.window, Math.round(p.w * dpr), Math.round(p.h * dpr));
    if (!drawn) c.style.display = 'none';
    else this.drawnLevel = k;
    return drawn;
  }
});
