"""The model's shape: parameters per block (bars) and the encoder-decoder diagram (Graphviz DOT).

Pure functions: data in, Altair chart or DOT text out; no Streamlit calls.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.base import axis, pad, title
from app.charts.teaching import MAY_ATTEND

COLOURS = {"attn": "#CFE3F3", "cross": "#F9DDB1", "ffn": "#D5EDE2", "norm": "#FFF4C2", "io": "#EDEDED"}
SCORES = {"scaled_dot": "softmax(QKᵀ/√d_k)", "dot": "softmax(QKᵀ)", "general": "softmax(QWKᵀ)",
          "additive": "softmax(vᵀ tanh(W_q q + W_k k))"}


def parameter_chart(table: pd.DataFrame, *, font_scale: float = 1.0) -> alt.LayerChart:
    """Parameters per block (horizontal bars with their value; share, and the formula when known, on hover)."""
    order = list(table["block"])
    tooltip = [alt.Tooltip("block:N"), alt.Tooltip("parameters:Q", format=","), alt.Tooltip("share:Q", format=".1%")]
    if "formula" in table:
        tooltip.append(alt.Tooltip("formula:N"))
    base = alt.Chart(table, title=title("Parameters per block", font_scale, anchor="start"))
    bars = base.mark_bar(color=MAY_ATTEND).encode(
        y=alt.Y("block:N", sort=order, title="block", axis=axis(font_scale)),
        x=alt.X("parameters:Q", title="parameters", axis=axis(font_scale)), tooltip=tooltip)
    text = base.mark_text(align="left", dx=4, fontSize=11 * font_scale).encode(
        y=alt.Y("block:N", sort=order), x="parameters:Q", text=alt.Text("parameters:Q", format=","))
    return pad(alt.layer(bars, text).properties(width=520, height=max(120, 34 * len(order) * font_scale)))


def _dot_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _node(name: str, label: str, kind: str) -> str:
    return f'  {name} [label="{_dot_label(label)}", fillcolor="{COLOURS[kind]}"];'


def _stack(lines: list[str], norm: str, prefix: str, title: str, colour: str, parts: list[tuple[str, str, str]],
           entry: str) -> str:
    """A cluster of sublayers (name, label, kind), each wrapped in its residual + LayerNorm; returns its exit."""
    norm_note = ("LayerNorm before each sublayer (pre-norm)" if norm == "pre"
                 else "LayerNorm after each residual add (post-norm)")
    nodes, edges, prev = [], [], entry
    for name, label, kind in parts:
        sub, add = f"{prefix}_{name}", f"{prefix}_{name}_add"
        if norm == "pre":
            ln = f"{prefix}_{name}_norm"
            nodes += [_node(ln, "LayerNorm", "norm"), _node(sub, label, kind), _node(add, "Add (residual)", "norm")]
            edges.append(f"  {prev} -> {ln}; {ln} -> {sub}; {sub} -> {add};")
        else:
            nodes += [_node(sub, label, kind), _node(add, "Add & Norm", "norm")]
            edges.append(f"  {prev} -> {sub}; {sub} -> {add};")
        edges.append(f'  {prev} -> {add} [style=dashed, constraint=false, tooltip="residual connection"];')
        prev = add
    lines.extend([f"  subgraph cluster_{prefix} {{",
                  f'    label="{_dot_label(title)}\\n{_dot_label(norm_note)}"; style="rounded"; color="{colour}";',
                  *("  " + n for n in nodes), "  }", *edges])
    return prev


def _decoder(lines: list[str], c, norm: str, heads: str, ffn: str, pe: str, memory: str | None,
             final_norm: bool) -> None:
    lines += [_node("tgt_in", "target tokens\n(shifted right, <bos> first)", "io"),
              _node("tgt_emb", f"embedding × √{c.d_model}\n{pe}", "io"), "  tgt_in -> tgt_emb;"]
    parts = [("self", f"masked self-attention\n{heads}\n{SCORES[c.score]}, look-ahead mask", "attn")]
    if memory:
        parts.append(("cross", f"cross-attention\nQ: decoder · K, V: encoder\n{heads}", "cross"))
    parts.append(("ffn", ffn, "ffn"))
    last = _stack(lines, norm, "dec", f"Decoder layer × {c.n_decoder_layers}", "#D55E00", parts, "tgt_emb")
    tied = "\n(shares the target embedding)" if c.tie_embeddings else ""
    if final_norm:
        lines += [_node("dec_out", "final LayerNorm", "norm"), f"  {last} -> dec_out;"]
        last = "dec_out"
    lines += [_node("proj", f"linear {c.d_model} → {c.tgt_vocab_size} (vocabulary){tied}", "io"),
              _node("soft", "softmax → next-token probabilities", "io"), f"  {last} -> proj; proj -> soft;"]
    if memory:
        lines.append(f'  {memory} -> dec_cross [color="#D55E00", penwidth=2, label="K, V"];')


def has_final_norm(config, norm: str | None = None) -> bool:
    """Whether a LayerNorm follows the last layer of each stack.

    The paper's post-norm stack has none (each Add & Norm already ends in one); pre-norm needs one.
    With no ``norm`` override the config decides (``final_norm``, which older post-norm checkpoints
    set when they carry one); an override draws the textbook layout of that placement.
    """
    if norm is None:
        return config.has_final_norm
    return norm == "pre"


def architecture_dot(config, norm: str | None = None, font_scale: float = 1.0) -> str:
    """Graphviz DOT of a Transformer built from ``config`` (a core ModelConfig), bottom to top.

    Shows layer counts, heads, d_model, d_ff, the score function, the positional encoding and
    where each LayerNorm sits (``norm`` overrides ``config.norm`` to compare "pre" and "post"):
    post-norm = Add & Norm after each sublayer; pre-norm = LayerNorm before each sublayer and a
    final LayerNorm after each stack (see :func:`has_final_norm`).
    """
    c = config
    final_norm = has_final_norm(c, norm)
    norm = norm or c.norm
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
    fs = 12 * font_scale
    lines = [
        "digraph transformer {",
        "  rankdir=BT; newrank=true; nodesep=0.35; ranksep=0.3;",
        (f'  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize={fs:.0f}, '
         'fillcolor="#F2F2F2", color="#555555"];'),
        f'  edge [color="#555555", arrowsize=0.7, fontname="Helvetica", fontsize={fs * 0.85:.0f}];',
        f'  graph [fontname="Helvetica", fontsize={fs:.0f}, labelloc=b];',
    ]
    heads = f"{c.n_heads} heads × d_k={c.head_dim}"
    pe = {"sinusoidal": f"+ sinusoidal PE (base {c.pe_base:g})", "learned": "+ learned positions",
          "none": "(no positional encoding)"}[c.positional]
    ffn = f"feed-forward (position-wise)\n{c.d_model} → {c.d_ff} → {c.d_model}, ReLU"
    memory = None
    if c.has_encoder:
        lines += [_node("src_in", "source tokens", "io"), _node("src_emb", f"embedding × √{c.d_model}\n{pe}", "io"),
                  "  src_in -> src_emb;"]
        last = _stack(lines, norm, "enc", f"Encoder layer × {c.n_encoder_layers}", "#0072B2",
                      [("attn", f"self-attention\n{heads}\n{SCORES[c.score]}", "attn"), ("ffn", ffn, "ffn")],
                      "src_emb")
        memory = "enc_out"
        if final_norm:
            out = "final LayerNorm → memory (K, V for the decoder)" if c.has_decoder else "final LayerNorm"
            lines += [_node("enc_out", out, "norm"), f"  {last} -> enc_out;"]
        elif c.has_decoder:
            lines += [_node("enc_out", "encoder output = memory\n(K, V for the decoder; no final LayerNorm)", "io"),
                      f"  {last} -> enc_out;"]
        else:
            memory = last
    if c.has_decoder:
        _decoder(lines, c, norm, heads, ffn, pe, memory, final_norm)
    else:
        lines += [_node("cls", f"linear {c.d_model} → {c.n_classes} per token", "io"),
                  _node("pool", "max over tokens → class scores", "io"), f"  {memory} -> cls; cls -> pool;"]
    lines.append("}")
    return "\n".join(lines)


def whisper_dot(config, font_scale: float = 1.0) -> str:
    """Graphviz DOT of Whisper (a loaded model's config: ``n_mels``, ``d_model``, ``n_heads``, ``head_dim``,
    ``d_ff``, ``n_encoder_layers``, ``n_decoder_layers``, ``n_frames``, ``max_len``, ``vocab_size``),
    bottom to top: log-mel → conv front end → sinusoidal positions → pre-norm encoder; token embedding +
    learned positions → pre-norm decoder with masked self-attention and cross-attention into the frames."""
    c, fs = config, 12 * font_scale
    heads, d, f = f"{c.n_heads} heads × d_k={c.head_dim}", c.d_model, c.n_frames
    ffn = f"feed-forward (position-wise)\n{d} → {c.d_ff} → {d}, GELU"
    lines = [
        "digraph whisper {", "  rankdir=BT; newrank=true; nodesep=0.35; ranksep=0.3;",
        (f'  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize={fs:.0f}, '
         'fillcolor="#F2F2F2", color="#555555"];'),
        f'  edge [color="#555555", arrowsize=0.7, fontname="Helvetica", fontsize={fs * 0.85:.0f}];',
        f'  graph [fontname="Helvetica", fontsize={fs:.0f}, labelloc=b];',
        _node("audio", f"speech, 16 kHz, a 30 s window\nlog-mel spectrogram {c.n_mels} × {2 * f} (10 ms columns)",
              "io"),
        _node("conv", f"conv front end: Conv1d {c.n_mels} → {d}, k 3, GELU\nConv1d {d} → {d}, k 3, stride 2, GELU\n"
                      f"→ {f:,} frames of 20 ms", "io"),
        _node("wpos", "+ sinusoidal positions (a fixed table)", "io"), "  audio -> conv -> wpos;",
    ]
    last = _stack(lines, "pre", "wenc", f"Encoder layer × {c.n_encoder_layers}", "#0072B2",
                  [("attn", f"self-attention over the frames\n{heads}", "attn"), ("ffn", ffn, "ffn")], "wpos")
    lines += [_node("wmem", f"final LayerNorm → memory: {f:,} frames\n(K, V for the decoder)", "norm"),
              f"  {last} -> wmem;",
              _node("wtok", "tokens: <|startoftranscript|> <|lang|> <|task|>\n<|notimestamps|> then the text", "io"),
              _node("wemb", f"token embedding (no × √{d})\n+ learned positions ({c.max_len})", "io"),
              "  wtok -> wemb;"]
    last = _stack(lines, "pre", "wdec", f"Decoder layer × {c.n_decoder_layers}", "#D55E00",
                  [("self", f"masked self-attention\n{heads}, look-ahead mask", "attn"),
                   ("cross", f"cross-attention\nQ: decoder · K, V: the {f:,} frames\n{heads}", "cross"),
                   ("ffn", ffn, "ffn")], "wemb")
    lines += [_node("wnorm", "final LayerNorm", "norm"),
              _node("wproj", f"linear {d} → {c.vocab_size:,} (vocabulary)\n(shares the token embedding)", "io"),
              _node("wsoft", "softmax → next-token probabilities", "io"),
              f"  {last} -> wnorm -> wproj -> wsoft;",
              '  wmem -> wdec_cross [color="#D55E00", penwidth=2, label="K, V"];', "}"]
    return "\n".join(lines)
