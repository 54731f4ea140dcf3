"""The model's shape: parameters per block (bars) and the encoder-decoder block diagram
(:class:`app.charts.diagram.Diagram`, drawn as SVG by :func:`app.charts.diagram.svg`).

Pure functions: data in, Altair chart or diagram out; no Streamlit calls.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.base import axis, pad, title
from app.charts.diagram import CROSS, Box, Column, Diagram, Sublayer
from app.charts.teaching import MAY_ATTEND

ENCODER, DECODER = "#0072B2", CROSS  # the stacks' frames (colour-blind safe); the cross arrow the decoder's
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


def has_final_norm(config, norm: str | None = None) -> bool:
    """Whether a LayerNorm follows the last layer of each stack.

    The paper's post-norm stack has none (each Add & Norm already ends in one); pre-norm needs one.
    With no ``norm`` override the config decides (``final_norm``, which older post-norm checkpoints
    set when they carry one); an override draws the textbook layout of that placement.
    """
    if norm is None:
        return config.has_final_norm
    return norm == "pre"


def _sublayers(norm: str, parts: list[tuple[str, str, str]]) -> tuple[Sublayer, ...]:
    """Each sublayer (label, colour kind, key) in its residual connection: post-norm, the sublayer then Add & Norm;
    pre-norm, a LayerNorm, the sublayer, then the Add."""
    if norm == "pre":
        return tuple(Sublayer((Box("LayerNorm", COLOURS["norm"]), Box(label, COLOURS[kind], key)),
                              Box("Add (residual)", COLOURS["norm"])) for label, kind, key in parts)
    return tuple(Sublayer((Box(label, COLOURS[kind], key),), Box("Add & Norm", COLOURS["norm"]))
                 for label, kind, key in parts)


def _stack_title(kind: str, layers: int, norm: str) -> str:
    placement = "pre-norm: LayerNorm first" if norm == "pre" else "post-norm: LayerNorm after Add"
    return f"{kind} layer × {layers}\n{placement}"


def architecture_diagram(config, norm: str | None = None) -> Diagram:
    """The block diagram of a Transformer built from ``config`` (a core ModelConfig), each stack bottom to top,
    the encoder left of the decoder as in the paper's Figure 1.

    Shows layer counts, heads, d_model, d_ff, the score function, the positional encoding and where each
    LayerNorm sits (``norm`` overrides ``config.norm`` to compare "pre" and "post"): post-norm = Add & Norm after
    each sublayer; pre-norm = LayerNorm before each sublayer and a final LayerNorm after each stack (see
    :func:`has_final_norm`).
    """
    c = config
    final_norm = has_final_norm(c, norm)
    norm = norm or c.norm
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
    heads = f"{c.n_heads} heads × d_k={c.head_dim}"
    pe = {"sinusoidal": f"+ sinusoidal PE (base {c.pe_base:g})", "learned": "+ learned positions",
          "none": "(no positional encoding)"}[c.positional]
    ffn = (f"feed-forward (position-wise)\n{c.d_model} → {c.d_ff} → {c.d_model}, ReLU", "ffn", "")
    columns = []
    if c.has_encoder:
        if final_norm:
            out = [Box("final LayerNorm → memory\n(K, V for the decoder)" if c.has_decoder else "final LayerNorm",
                       COLOURS["norm"], "memory")]
        elif c.has_decoder:
            out = [Box("encoder output = memory\n(K, V for the decoder;\nno final LayerNorm)", COLOURS["io"],
                       "memory")]
        else:
            out = []
        if not c.has_decoder:
            out += [Box(f"linear {c.d_model} → {c.n_classes} per token", COLOURS["io"]),
                    Box("max over tokens\n→ class scores", COLOURS["io"])]
        columns.append(Column(
            (Box("source tokens", COLOURS["io"]), Box(f"embedding × √{c.d_model}\n{pe}", COLOURS["io"])),
            _stack_title("Encoder", c.n_encoder_layers, norm), ENCODER,
            _sublayers(norm, [(f"self-attention\n{heads}\n{SCORES[c.score]}", "attn", ""), ffn]), tuple(out)))
    if c.has_decoder:
        columns.append(_decoder(c, norm, heads, ffn, pe, c.has_encoder, final_norm))
    return Diagram(tuple(columns), cross=("memory", "cross") if c.has_encoder and c.has_decoder else None)


def _decoder(c, norm: str, heads: str, ffn: tuple[str, str, str], pe: str, cross: bool, final_norm: bool) -> Column:
    parts = [(f"masked self-attention\n{heads}\n{SCORES[c.score]}\nlook-ahead mask", "attn", "")]
    if cross:
        parts.append((f"cross-attention\nQ: decoder · K, V: encoder\n{heads}", "cross", "cross"))
    parts.append(ffn)
    tied = "\n(shares the target embedding)" if c.tie_embeddings else ""
    out = [Box("final LayerNorm", COLOURS["norm"])] if final_norm else []
    out += [Box(f"linear {c.d_model} → {c.tgt_vocab_size}\n(vocabulary){tied}", COLOURS["io"]),
            Box("softmax\n→ next-token probabilities", COLOURS["io"])]
    return Column((Box("target tokens\n(shifted right, <bos> first)", COLOURS["io"]),
                   Box(f"embedding × √{c.d_model}\n{pe}", COLOURS["io"])),
                  _stack_title("Decoder", c.n_decoder_layers, norm), DECODER, _sublayers(norm, parts), tuple(out))


def whisper_diagram(config) -> Diagram:
    """The block diagram of Whisper (a loaded model's config: ``n_mels``, ``d_model``, ``n_heads``, ``head_dim``,
    ``d_ff``, ``n_encoder_layers``, ``n_decoder_layers``, ``n_frames``, ``max_len``, ``vocab_size``), bottom to
    top: log-mel → conv front end → sinusoidal positions → pre-norm encoder; token embedding + learned positions
    → pre-norm decoder with masked self-attention and cross-attention into the frames."""
    c = config
    heads, d, f = f"{c.n_heads} heads × d_k={c.head_dim}", c.d_model, c.n_frames
    ffn = (f"feed-forward (position-wise)\n{d} → {c.d_ff} → {d}, GELU", "ffn", "")
    encoder = Column(
        (Box(f"speech, 16 kHz, a 30 s window\nlog-mel spectrogram\n{c.n_mels} × {2 * f} (10 ms columns)",
             COLOURS["io"]),
         Box(f"conv front end:\nConv1d {c.n_mels} → {d}, k 3, GELU\nConv1d {d} → {d}, k 3, stride 2,\n"
             f"GELU → {f:,} frames of 20 ms", COLOURS["io"]),
         Box("+ sinusoidal positions\n(a fixed table)", COLOURS["io"])),
        _stack_title("Encoder", c.n_encoder_layers, "pre"), ENCODER,
        _sublayers("pre", [(f"self-attention over the frames\n{heads}", "attn", ""), ffn]),
        (Box(f"final LayerNorm → memory:\n{f:,} frames (K, V for the decoder)", COLOURS["norm"], "memory"),))
    decoder = Column(
        (Box("tokens: <|startoftranscript|>\n" + ("<|lang|> <|task|> " if c.multilingual else "")
             + "<|notimestamps|>\nthen the text", COLOURS["io"]),
         Box(f"token embedding (no × √{d})\n+ learned positions ({c.max_len})", COLOURS["io"])),
        _stack_title("Decoder", c.n_decoder_layers, "pre"), DECODER,
        _sublayers("pre", [(f"masked self-attention\n{heads}, look-ahead mask", "attn", ""),
                           (f"cross-attention\nQ: decoder · K, V: the {f:,} frames\n{heads}", "cross", "cross"), ffn]),
        (Box("final LayerNorm", COLOURS["norm"]),
         Box(f"linear {d} → {c.vocab_size:,} (vocabulary)\n(shares the token embedding)", COLOURS["io"]),
         Box("softmax\n→ next-token probabilities", COLOURS["io"])))
    return Diagram((encoder, decoder), cross=("memory", "cross"))
