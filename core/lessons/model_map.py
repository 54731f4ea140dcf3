"""The Lesson's model map, the size of every array it draws, and what a family changes on each stage.

- :func:`model_map`: the encoder-decoder as blocks (embeddings → encoder layer × N → decoder layer × N
  → linear + softmax), drawn from the traced model's own sizes, in the order its layers compute
  (pre-norm layers normalise before each sub-layer).
- :func:`array_sizes`: every vector and matrix the Lesson shows, its shape in the notes' symbols and in
  numbers, read from the traced arrays themselves ("Q ∈ ℝ^(S × d_k) = 3 × 16").
- :func:`stage_notes`: where a family departs from the paper on a stage (pre-norm, RMSNorm, T5's
  relative positions, BART's learned positions, Marian's sinusoid layout, gated FFN, no biases); our
  own post-norm model gets none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from core.lessons.walkthrough import LessonTrace

TOPICS = ("architecture", "embeddings", "projections", "scaled", "add_norm", "ffn", "encoder_output", "masked_self", "cross",
          "output")


@dataclass(frozen=True)
class ArraySize:
    """One array of the Lesson: its name, its shape in symbols and in numbers."""

    name: str
    symbols: tuple[str, ...]
    dims: tuple[int, ...]

    @property
    def hover(self) -> str:
        """Plain text for a tooltip and a subtitle (no LaTeX braces): ``Q ∈ ℝ^(S × d_k) = 3 × 16``."""
        return f"{self.name} ∈ ℝ^({' × '.join(self.symbols)}) = {' × '.join(map(str, self.dims))}"

    @property
    def tex(self) -> str:
        """The same as LaTeX: ``Q \\in \\mathbb{R}^{3 \\times 16}``."""
        dims = r" \times ".join(map(str, self.dims))
        name = re.sub(r"_(\w+)", r"_{\1}", self.name).replace("ᵀ", r"^\top")
        return rf"{name} \in \mathbb{{R}}^{{{dims}}}"


#: A block's name by its ``term`` (English; the app words a term in the reader's language, filled from the block's
#: ``values``: ``norm``, ``heads``, ``d_ff``).
LABELS = {
    "tokens": "Tokens", "embeddings_pe": "Embeddings + PE", "embeddings_relative": "Embeddings (no PE)",
    "embeddings_learned": "Embeddings + learned pos.", "embeddings_rotary": "Embeddings (rotary in q, k)",
    "embeddings_none": "Embeddings", "self_attention": "Self-attention · {heads} heads",
    "masked_self_attention": "Masked self-attention · {heads} heads",
    "norm_self_attention": "{norm} → self-attn · {heads} heads", "add_norm": "Add & {norm}",
    "residual": "+ x (residual)", "ffn": "Feed-forward · {d_ff}", "norm_ffn": "{norm} → FFN · {d_ff}",
    "memory": "Memory", "encoder_output": "Encoder output", "memory_final": "Memory (+ final {norm})",
    "encoder_output_final": "Encoder output (+ final {norm})", "linear_softmax": "Linear + softmax",
    "next_token": "Next token", "masked_self": "Masked self-attention", "cross": "Cross-attention (memory)",
    "decoder_ffn": "Feed-forward", "use_hidden": "Sentence vector (pooled)", "use_masked_lm": "Masked-token prediction",
    "use_classes": "Classifier", "use_token_classes": "Token classifier", "use_other": "The model's head",
}


@dataclass(frozen=True)
class MapBlock:
    """One block of the model map. ``key`` names it; ``label`` is its English name; ``group`` is input, encoder,
    decoder or output; ``sizes`` are the hover lines of the arrays it holds; ``term`` and ``values`` name it
    without a language (:data:`LABELS`: ``label`` is ``LABELS[term].format(**values)``)."""

    key: str
    label: str
    group: str
    sizes: tuple[str, ...]
    term: str = ""
    values: dict[str, object] = field(default_factory=dict)


def _block(key: str, term: str, group: str, sizes: tuple[str, ...], **values: object) -> MapBlock:
    return MapBlock(key, LABELS[term].format(**values), group, sizes, term, values)


@dataclass(frozen=True)
class ModelMap:
    """The model as blocks, with the sizes that head each stack."""

    blocks: tuple[MapBlock, ...]
    n_encoder_layers: int
    n_decoder_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    norm: str
    norm_type: str = "layernorm"

    @property
    def sublayer(self) -> str:
        """How every decoder sub-layer is wrapped, in words."""
        norm = "RMSNorm" if self.norm_type == "rmsnorm" else "LayerNorm"
        return (f"each sub-layer: x + Sublayer({norm}(x))" if self.norm == "pre"
                else f"each sub-layer: {norm}(x + Sublayer(x))")

    def group(self, name: str) -> tuple[MapBlock, ...]:
        """The blocks of one group, in order."""
        return tuple(b for b in self.blocks if b.group == name)


def _size(name: str, symbols: tuple[str, ...], array: np.ndarray | tuple[int, ...]) -> ArraySize:
    return ArraySize(name, symbols, tuple(int(n) for n in np.shape(array)) if not isinstance(array, tuple)
                     else array)


def array_sizes(trace: LessonTrace) -> dict[str, ArraySize]:
    """Every array the Lesson draws, keyed by its name, with its size read from the trace's arrays."""
    head, d, dk, h = trace.encoder_head, trace.d_model, trace.d_k, trace.n_heads
    f, vocab = trace.d_ff, len(trace.target_vocab)
    items = [
        _size("E", ("V_src", "d_model"), (trace.source_vocab_size, d)),
        _size("x", ("S", "d_model"), trace.embedded), _size("PE", ("S", "d_model"), trace.embedded.shape),
        _size("W_qkv", ("d_model", "3·h·d_k"), (d, 3 * h * dk)),
        *(_size(f"W^{n}", ("d_model", "d_k"), (d, dk)) for n in "QKV"),
        _size("Q", ("S", "d_k"), head.q), _size("K", ("S", "d_k"), head.k), _size("V", ("S", "d_k"), head.v),
        _size("QKᵀ", ("S", "S"), head.dot), _size("M", ("S", "S"), head.mask), _size("A", ("S", "S"), head.weights),
        _size("Z", ("S", "d_k"), head.output), _size("Concat", ("S", "h·d_k"), trace.heads_concat),
        _size("W^O", ("h·d_k", "d_model"), (h * dk, d)), _size("MultiHead", ("S", "d_model"), trace.attention_out),
        _size("AddNorm", ("S", "d_model"), trace.add_norm1), _size("W_1", ("d_model", "d_ff"), (d, f)),
        _size("H", ("S", "d_ff"), (len(trace.source_tokens), f)), _size("W_2", ("d_ff", "d_model"), (f, d)),
        _size("FFN", ("S", "d_model"), trace.ffn_out), _size("LayerOut", ("S", "d_model"), trace.layer_out),
        _size("memory", ("S", "d_model"), trace.memory), _size("A_dec", ("T", "T"), trace.decoder_head.weights),
        _size("A_cross", ("T", "S"), trace.cross_weights), _size("W_out", ("d_model", "V"), (d, vocab)),
        _size("P", ("T", "V"), trace.probabilities),
    ]
    return {item.name: item for item in items}


#: What an encoder-only model's output block says it is for, by its head (the term of :data:`LABELS`).
USES = {"hidden": "use_hidden", "masked_lm": "use_masked_lm", "classes": "use_classes",
        "token_classes": "use_token_classes"}


def _hovers(sizes: dict[str, ArraySize], *names: str) -> tuple[str, ...]:
    return tuple(sizes[n].hover for n in names)


def model_map(trace: LessonTrace) -> ModelMap:
    """The traced model as a map: its blocks in computing order, each with the sizes of its arrays."""
    s, pre = array_sizes(trace), trace.norm == "pre"
    norm = "RMSNorm" if trace.norm_type == "rmsnorm" else "LayerNorm"
    positions = {"relative": "embeddings_relative", "learned": "embeddings_learned", "rotary": "embeddings_rotary",
                 "none": "embeddings_none"}.get(trace.positions, "embeddings_pe")
    stack = "decoder" if trace.kind == "decoder" else "encoder"
    attend = "norm_self_attention" if pre else "masked_self_attention" if stack == "decoder" else "self_attention"
    add, ffn = ("residual", "norm_ffn") if pre else ("add_norm", "ffn")
    facts = dict(norm=norm, heads=trace.n_heads, d_ff=trace.d_ff)
    layer = (
        _block("self_attention", attend, stack,
               _hovers(s, "W_qkv", "W^Q", "Q", "K", "V", "QKᵀ", "A", "Z", "Concat", "W^O", "MultiHead"), **facts),
        _block("add_norm", add, stack, _hovers(s, "AddNorm"), **facts),
        _block("ffn", ffn, stack, _hovers(s, "W_1", "H", "W_2", "FFN"), **facts),
        _block("add_norm2", add, stack, _hovers(s, "LayerOut"), **facts),
    )
    memory = _block("encoder_output", ("memory" if trace.kind == "encoder-decoder" else "encoder_output")
                    + ("_final" if trace.final_norm else ""), "encoder", _hovers(s, "memory"), norm=norm)
    head = (_block("output", "linear_softmax", "output", _hovers(s, "W_out", "P")),
            _block("decode", "next_token", "output", (f"T = {len(trace.target_tokens)} steps",)))
    if trace.kind == "encoder":
        head = (_block("use", USES.get(trace.use, "use_other"), "output", _hovers(s, "memory")),)
    decoder = () if trace.kind != "encoder-decoder" else (
        _block("masked_self", "masked_self", "decoder", _hovers(s, "A_dec")),
        _block("cross", "cross", "decoder", _hovers(s, "A_cross")),
        _block("decoder_ffn", "decoder_ffn", "decoder", (f"W_1 ∈ ℝ^(d_model × d_ff) = {trace.d_model} × "
                                                         f"{trace.d_ff}",)))
    blocks = (
        _block("tokens", "tokens", "input", (f"S = {len(trace.source_tokens)} tokens",)),
        _block("embeddings", positions, "input", _hovers(s, "E", "PE", "x")),
        *layer, *(() if trace.kind == "decoder" else (memory,)), *decoder, *head,
    )
    return ModelMap(blocks, trace.n_encoder_layers, trace.n_decoder_layers, trace.n_heads, trace.d_model,
                    trace.d_ff, trace.norm, trace.norm_type)


def _norm_notes(trace: LessonTrace) -> list[str]:
    norm = "RMSNorm" if trace.norm_type == "rmsnorm" else "LayerNorm"
    notes = []
    if trace.norm == "pre":
        notes.append(f"This model normalises before the sub-layer: x + Sublayer({norm}(x)) (pre-norm); the paper "
                     f"normalises after the residual sum, LayerNorm(x + Sublayer(x)).")
    if trace.norm_type == "rmsnorm":
        notes.append("Its norm is RMSNorm: x / √(mean(x²) + ε) ⊙ γ — no mean is subtracted and there is no "
                     "shift b.")
    return notes


def stage_notes(trace: LessonTrace, topic: str) -> tuple[str, ...]:
    """What the traced model does differently from the paper at ``topic`` (one of :data:`TOPICS`);
    empty for a model that follows the paper there.

    Raises:
        ValueError: an unknown topic.
    """
    if topic not in TOPICS:
        raise ValueError(f"topic must be one of {', '.join(TOPICS)}, got {topic!r}")
    notes: list[str] = []
    if topic == "architecture":
        notes += {"decoder": ["This model is decoder-only: there is no encoder and no cross-attention. One stack of "
                              "masked self-attention reads the prompt, and its output distribution continues it, one "
                              "token at a time."],
                  "encoder": ["This model is encoder-only: there is no decoder. The encoder's output, one vector per "
                              "token, is the model's output, and a head on top of it gives what the model is for."],
                  }.get(trace.kind, [])
    elif topic == "embeddings":
        if trace.positions == "learned" and trace.family not in ("bart", "mbart"):
            notes.append("This model learns its positions: row p of a learned table is added to the embedding of "
                         "the token at position p (no sinusoids).")
        notes += {"relative": ["T5 has no positional encoding added to embeddings: it adds a learned bias per "
                               "relative distance to the scores (one table per stack, shared by its layers)."],
                  "learned": ["BART learns its positions: row p + 2 of a learned table is added to each "
                              "embedding (no sinusoids)."] if trace.family in ("bart", "mbart") else [],
                  "rotary": ["No positions are added to the embeddings: rotary positions (RoPE) rotate each "
                             "head's q and k by an angle proportional to the token's position, so q·k depends on "
                             "the relative distance j − i."],
                  "marian": ["Marian's sinusoids put the sines of every frequency in the first half of the vector "
                             "and the cosines in the second half, not interleaved as in the paper's formula."],
                  }.get(trace.positions, [])
        if trace.embedding_norm:
            notes.append("A LayerNorm then normalises the sum (BART's layernorm_embedding): x is its output.")
    elif topic == "projections":
        notes += _norm_notes(trace)[:1]
        if not trace.projection_bias:
            notes.append("Its projections have no biases: q = x W^Q (b^Q = 0).")
    elif topic == "scaled" and trace.encoder_head.position_bias is not None:
        notes.append("T5 does not divide by √d_k: the softmax sees q·k + b(j − i), the learned bias of the "
                     "relative distance j − i added to the raw scores.")
    elif topic in ("add_norm", "ffn"):
        notes += _norm_notes(trace)
        if topic == "ffn" and trace.gated:
            notes.append(f"Its FFN is gated: (act(x W_g) ⊙ x W_1) W_2 with act = {trace.activation}.")
        elif topic == "ffn" and trace.activation != "relu":
            notes.append(f"Its FFN's non-linearity is {trace.activation}, not ReLU.")
    elif topic == "encoder_output" and trace.norm == "pre" and trace.final_norm:
        notes.append("A pre-norm stack ends with a final norm: the residual sum is never normalised otherwise.")
    elif topic == "masked_self":
        notes += _norm_notes(trace)[:1] if trace.kind == "encoder-decoder" else []
        if trace.positions == "relative":
            notes.append("T5's decoder adds its own relative bias to these scores (it only looks back).")
    elif topic == "cross" and trace.positions == "relative":
        notes.append("T5's cross-attention has no position bias.")
    elif topic == "output" and trace.logits_scale != 1.0:
        notes.append(f"The decoder's last vector is multiplied by {trace.logits_scale:.3g} (d_model^-0.5) before the "
                     "output layer, which shares its weights with the embedding.")
    return tuple(notes)
