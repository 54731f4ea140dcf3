// The attention canvas's WebGL2 path for big maps (canvas.js's blitMap asks it first): each max-pooled level of the
// shown head is a texture of its uint8 colour indices, uploaded once, and the colour table a 256 × 1 texture; the
// fragment shader reads the cell under each pixel and its colour, so a zoom or pan step is one draw of the plot.
// Canvas 2D is the fallback where getContext('webgl2') is null (or the context is lost).
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

  levelTexture(level) { // the level's colour indices as an R8 texture, uploaded on first use (a few kept)
    let t = this.textures.get(level);
    if (t) return t;
    const gl = this.gl;
    if (this.textures.size >= 8) {
      const [oldest, texture] = this.textures.entries().next().value;
      gl.deleteTexture(texture); this.textures.delete(oldest);
    }
    t = this.texture();
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, t);
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.R8, level.cols, level.rows, 0, gl.RED, gl.UNSIGNED_BYTE, level.index);
    this.textures.set(level, t);
    return t;
  }

  draw(level, scale, window, width, height) { // the window (in full-map cells) of ``level`` over width × height px
    const gl = this.gl;
    if (gl.isContextLost()) return false;
    if (gl.canvas.width !== width || gl.canvas.height !== height) {
      gl.canvas.width = width; gl.canvas.height = height;
    }
    gl.viewport(0, 0, width, height);
    gl.useProgram(this.program);
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, this.levelTexture(level));
    gl.activeTexture(gl.TEXTURE1); gl.bindTexture(gl.TEXTURE_2D, this.lutTexture);
    gl.uniform4f(this.win, window.x0 / scale, window.y0 / scale, window.w / scale, window.h / scale);
    gl.drawArrays(gl.TRIANGLES, 0, 3);
    return true;
  }
}

Object.assign(AttentionCanvas.prototype, {
  usesGL() { // WebGL2 for big maps (``this.gpu``: 'auto', or 'on' / 'off' to choose), when the browser has it
    const choice = this.gpu || 'auto';
    if (choice === 'off' || (choice === 'auto' && this.cells() <= GL_CELLS)) return false;
    if (this.glMap === undefined) {
      this.glMap = GLMap.create(this.glCanvas);
      this.glCanvas.addEventListener('webglcontextlost', () => { this.glMap = null; this.render(); }); // 2D from now
    }
    return !!this.glMap;
  },

  blitGL(levels, k) { // the window from level k on the WebGL2 canvas laid over the plot; false: use Canvas 2D
    const p = this.plot, dpr = this.dpr || 1, c = this.glCanvas;
    Object.assign(c.style, {display: 'block', left: `${p.x}px`, top: `${p.y}px`, width: `${p.w}px`,
      height: `${p.h}px`});
    this.glMap.setLut(this.lut);
    const drawn = this.glMap.draw(levels[k], 2 ** k, this.window, Math.round(p.w * dpr), Math.round(p.h * dpr));
    if (!drawn) c.style.display = 'none';
    return drawn;
  }
});
