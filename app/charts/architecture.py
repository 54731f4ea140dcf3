"""The model's shape: parameters per block (bars) and the encoder-decoder block diagram
(:class:`app.charts.diagram.Diagram`, drawn as SVG by :func:`app.charts.diagram.svg`).

Pure functions: data in, Altair chart or diagram out; no Streamlit calls.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app import i18n
from app.charts.base import axis, pad, title
from app.charts.diagram import CROSS, Box, Column, Diagram, Sublayer
from app.charts.teaching import MAY_ATTEND

ENCODER, DECODER = "#0072B2", CROSS  # the stacks' frames (colour-blind safe); the cross arrow the decoder's
COLOURS = {"attn": "#CFE3F3", "cross": "#F9DDB1", "ffn": "#D5EDE2", "norm": "#FFF4C2", "io": "#EDEDED"}
SCORES = {"scaled_dot": "softmax(QKᵀ/√d_k)", "dot": "softmax(QKᵀ)", "general": "softmax(QWKᵀ)",
          "additive": "softmax(vᵀ tanh(W_q q + W_k k))"}


def parameter_chart(table: pd.DataFrame, *, font_scale: float = 1.0, lang: str = i18n.DEFAULT) -> alt.LayerChart:
    """Parameters per block (horizontal bars with their value; share, and the formula when known, on hover; titles
    in ``lang``)."""
    def w(key: str) -> str:
        return i18n.text(lang, "charts", f"parameters.{key}")

    order = list(table["block"])
    tooltip = [alt.Tooltip("block:N", title=w("block")), alt.Tooltip("parameters:Q", format=",", title=w("parameters")),
               alt.Tooltip("share:Q", format=".1%")]
    if "formula" in table:
        tooltip.append(alt.Tooltip("formula:N"))
    base = alt.Chart(table, title=title(w("title"), font_scale, anchor="start"))
    bars = base.mark_bar(color=MAY_ATTEND).encode(
        y=alt.Y("block:N", sort=order, title=w("block"), axis=axis(font_scale)),
        x=alt.X("parameters:Q", title=w("parameters"), axis=axis(font_scale)), tooltip=tooltip)
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


def _diagram_words(lang: str):
    """The diagram's ``charts`` messages in ``lang``: ``w("source")``, ``w("heads", n=8, dk=64)``."""
    return lambda key, **values: i18n.text(lang, "charts", f"diagram.{key}", **values)


def _sublayers(norm: str, parts: list[tuple[str, str, str]], lang: str = i18n.DEFAULT) -> tuple[Sublayer, ...]:
    """Each sublayer (label, colour kind, key) in its residual connection: post-norm, the sublayer then Add & Norm;
    pre-norm, a LayerNorm, the sublayer, then the Add."""
    w = _diagram_words(lang)
    if norm == "pre":
        return tuple(Sublayer((Box("LayerNorm", COLOURS["norm"]), Box(label, COLOURS[kind], key)),
                              Box(w("add"), COLOURS["norm"])) for label, kind, key in parts)
    return tuple(Sublayer((Box(label, COLOURS[kind], key),), Box("Add & Norm", COLOURS["norm"]))
                 for label, kind, key in parts)


def _stack_title(kind: str, layers: int, norm: str, lang: str = i18n.DEFAULT) -> str:
    w = _diagram_words(lang)
    return w("stack", kind=kind, layers=layers, placement=w(f"{norm}_placement"))


def architecture_diagram(config, norm: str | None = None, lang: str = i18n.DEFAULT) -> Diagram:
    """The block diagram of a Transformer built from ``config`` (a core ModelConfig), each stack bottom to top,
    the encoder left of the decoder as in the paper's Figure 1, labelled in ``lang``.

    Shows layer counts, heads, d_model, d_ff, the score function, the positional encoding and where each
    LayerNorm sits (``norm`` overrides ``config.norm`` to compare "pre" and "post"): post-norm = Add & Norm after
    each sublayer; pre-norm = LayerNorm before each sublayer and a final LayerNorm after each stack (see
    :func:`has_final_norm`).
    """
    c, w = config, _diagram_words(lang)
    final_norm = has_final_norm(c, norm)
    norm = norm or c.norm
    if norm not in ("pre", "post"):
        raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
    heads = w("heads", n=c.n_heads, dk=c.head_dim)
    pe = w(f"pe_{c.positional}", base=c.pe_base)
    ffn = (f"{w('ffn')}\n{c.d_model} → {c.d_ff} → {c.d_model}, ReLU", "ffn", "")
    columns = []
    if c.has_encoder:
        if final_norm:
            out = [Box(w("final_memory") if c.has_decoder else w("final"), COLOURS["norm"], "memory")]
        elif c.has_decoder:
            out = [Box(w("memory"), COLOURS["io"], "memory")]
        else:
            out = []
        if not c.has_decoder:
            out += [Box(w("per_token", d=c.d_model, classes=c.n_classes), COLOURS["io"]),
                    Box(w("max_tokens"), COLOURS["io"])]
        columns.append(Column(
            (Box(w("source"), COLOURS["io"]), Box(f"{w('embedding', d=c.d_model)}\n{pe}", COLOURS["io"])),
            _stack_title("Encoder", c.n_encoder_layers, norm, lang), ENCODER,
            _sublayers(norm, [(f"{w('self_attention')}\n{heads}\n{SCORES[c.score]}", "attn", ""), ffn], lang),
            tuple(out)))
    if c.has_decoder:
        columns.append(_decoder(c, norm, (heads, ffn, pe), c.has_encoder, final_norm, lang))
    return Diagram(tuple(columns), cross=("memory", "cross") if c.has_encoder and c.has_decoder else None)


def _decoder(c, norm: str, parts_text: tuple[str, tuple[str, str, str], str], cross: bool, final_norm: bool,
             lang: str) -> Column:
    """The decoder's column: ``parts_text`` is (heads, the FFN's sublayer, the positional line) as the encoder's."""
    w, (heads, ffn, pe) = _diagram_words(lang), parts_text
    parts = [(f"{w('masked')}\n{heads}\n{SCORES[c.score]}\n{w('look_ahead')}", "attn", "")]
    if cross:
        parts.append((f"{w('cross')}\n{heads}", "cross", "cross"))
    parts.append(ffn)
    tied = "\n" + w("shares") if c.tie_embeddings else ""
    out = [Box(w("final"), COLOURS["norm"])] if final_norm else []
    out += [Box(w("vocabulary", d=c.d_model, v=c.tgt_vocab_size) + tied, COLOURS["io"]),
            Box(w("softmax"), COLOURS["io"])]
    return Column((Box(w("target"), COLOURS["io"]), Box(f"{w('embedding', d=c.d_model)}\n{pe}", COLOURS["io"])),
                  _stack_title("Decoder", c.n_decoder_layers, norm, lang), DECODER, _sublayers(norm, parts, lang),
                  tuple(out))


def whisper_diagram(config, lang: str = i18n.DEFAULT) -> Diagram:
    """The block diagram of Whisper (a loaded model's config: ``n_mels``, ``d_model``, ``n_heads``, ``head_dim``,
    ``d_ff``, ``n_encoder_layers``, ``n_decoder_layers``, ``n_frames``, ``max_len``, ``vocab_size``), bottom to
    top: log-mel → conv front end → sinusoidal positions → pre-norm encoder; token embedding + learned positions
    → pre-norm decoder with masked self-attention and cross-attention into the frames; labelled in ``lang``."""
    c, w = config, _diagram_words(lang)
    heads, d, f = w("heads", n=c.n_heads, dk=c.head_dim), c.d_model, c.n_frames
    ffn = (f"{w('ffn')}\n{d} → {c.d_ff} → {d}, GELU", "ffn", "")
    encoder = Column(
        (Box(w("speech", mels=c.n_mels, columns=2 * f), COLOURS["io"]),
         Box(w("conv", mels=c.n_mels, d=d, frames=f), COLOURS["io"]), Box(w("whisper_pe"), COLOURS["io"])),
        _stack_title("Encoder", c.n_encoder_layers, "pre", lang), ENCODER,
        _sublayers("pre", [(f"{w('over_frames')}\n{heads}", "attn", ""), ffn], lang),
        (Box(w("frames_memory", frames=f), COLOURS["norm"], "memory"),))
    decoder = Column(
        (Box(w("tokens") + "<|startoftranscript|>\n" + ("<|lang|> <|task|> " if c.multilingual else "") + "<|notimestamps|>\n"
             + w("then_text"), COLOURS["io"]),
         Box(w("whisper_embedding", d=d, max_len=c.max_len), COLOURS["io"])),
        _stack_title("Decoder", c.n_decoder_layers, "pre", lang), DECODER,
        _sublayers("pre", [(f"{w('masked')}\n{heads}, {w('look_ahead')}", "attn", ""),
                           (f"{w('cross_frames', frames=f)}\n{heads}", "cross", "cross"), ffn], lang),
        (Box(w("final"), COLOURS["norm"]), Box(w("whisper_vocabulary", d=d, v=c.vocab_size), COLOURS["io"]),
         Box(w("softmax"), COLOURS["io"])))
    return Diagram((encoder, decoder), cross=("memory", "cross"))
