"""Turn a saved ``nn.Transformer`` state dict (``.safetensors``, or ``.pt`` read with ``weights_only=True``)
into a self-describing Attnscope checkpoint: the one function the CLI (``python -m core import``) and
the app's upload form share.

The shapes give the sizes (:mod:`core.io.convert.nn_layout`); :class:`NNImportOptions` carries what
they cannot: the number of heads, the norm placement, whether the user's model multiplied its
embeddings by √d_model, its positional encoding, and the vocabularies. A vocabulary is one token per
line, line i being id i; it must hold the model's padding, start, end and unknown tokens (spelled as
``specials`` says). Their rows of the embeddings and the output projection are moved to Attnscope's
ids 0–3 (``<pad> <bos> <eos> <unk>``), the other tokens keep their order: the model computes the
same function. ReLU feed-forward networks and LayerNorm ε = 1e-5 (``nn.Transformer``'s defaults)
are assumed.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from safetensors import SafetensorError, safe_open
from torch import Tensor

from core.budget import LOAD_BUDGET, Budget, check_budget
from core.config import ModelConfig
from core.io.atomic import replace_when_done
from core.io.checkpoint import Checkpoint, load, save
from core.io.convert.nn_layout import ROLES, NNTransformerLayout, Shapes, guess_roles, read_layout
from core.io.convert.nn_transformer import from_nn_transformer, load_state_dict_file
from core.text.tokenizer import SPECIAL_TOKENS, Tokenizer

_FLOATS = ("F16", "BF16", "F32", "F64")
_FLAGS = {"src_embed": "--src-embed", "tgt_embed": "--tgt-embed", "lm_head": "--lm-head"}
_NAMES = {"src_embed": "source embedding", "tgt_embed": "target embedding", "lm_head": "output layer"}
Reader = Callable[[list[str]], dict[str, Tensor]]


@dataclass(frozen=True)
class NNImportOptions:
    """What the shapes of an ``nn.Transformer`` state dict cannot tell.

    Attributes:
        n_heads: attention heads per layer (``nhead``); must divide d_model.
        src_vocab, tgt_vocab: the model's vocabularies, one token per entry, entry i = id i.
        tokenizer: ``"word"`` (whitespace and punctuation split) or ``"char"`` (one character per token).
        norm_first: the model was built with ``norm_first=True`` (pre-norm); nn.Transformer's default is False.
        scale_embeddings: the model multiplied its embeddings by √d_model, as the paper does.
        specials: how the vocabularies spell the padding, start, end and unknown tokens.
        positional: ``"sinusoidal"`` (the paper's table added after the embedding) or ``"none"``.
        max_len: the longest input the imported model accepts.
        prefix: the key prefix of the nn.Transformer; None finds it.
        src_embed, tgt_embed, lm_head: keys of the (rows, d_model) tables; None guesses from the names.
    """

    n_heads: int
    src_vocab: tuple[str, ...]
    tgt_vocab: tuple[str, ...]
    tokenizer: str = "word"
    norm_first: bool = False
    scale_embeddings: bool = False
    specials: tuple[str, ...] = SPECIAL_TOKENS
    positional: str = "sinusoidal"
    max_len: int = 512
    prefix: str | None = None
    src_embed: str | None = None
    tgt_embed: str | None = None
    lm_head: str | None = None


def vocab_lines(text: str) -> tuple[str, ...]:
    """A vocabulary file's tokens: one per line (``\\n`` or ``\\r\\n``), a last empty line ignored."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(line[:-1] if line.endswith("\r") else line for line in lines)


def read_shapes(path: str | os.PathLike) -> tuple[Shapes, Reader]:
    """A state dict file's key → shape, and a reader of chosen tensors (float32).

    ``.safetensors`` files are read lazily (the header first, then only the tensors asked for);
    anything else is read as a ``.pt`` state dict with ``torch.load(weights_only=True)``.

    Raises:
        ValueError: the file cannot be read, or holds non-floating tensors where weights are asked for.
    """
    path = Path(path)
    if path.suffix.lower() != ".safetensors":
        state = load_state_dict_file(path)
        return {k: tuple(v.shape) for k, v in state.items()}, lambda keys: {k: _float(k, state[k]) for k in keys}
    try:
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            slices = {k: handle.get_slice(k) for k in handle.keys()}
            header = {k: (view.get_dtype(), tuple(view.get_shape())) for k, view in slices.items()}
    except (SafetensorError, OSError) as error:
        raise ValueError(f"cannot read {path.name} as a safetensors file ({str(error)[:200]})") from None

    def read(keys: list[str]) -> dict[str, Tensor]:
        odd = [k for k in keys if header[k][0] not in _FLOATS]
        if odd:
            raise ValueError(f"{odd[0]} holds {header[odd[0]][0]} values; weights must be floating point")
        try:
            with safe_open(str(path), framework="pt", device="cpu") as handle:
                return {k: handle.get_tensor(k).float() for k in keys}
        except (SafetensorError, OSError) as error:
            raise ValueError(f"cannot read the weights of {path.name} ({str(error)[:200]})") from None

    return {k: shape for k, (_, shape) in header.items()}, read


def nn_transformer_layout(path: str | os.PathLike, prefix: str | None = None) -> NNTransformerLayout:
    """What the shapes in a state dict file tell (a ``.safetensors`` file's header only).

    Raises:
        ValueError: the file cannot be read or holds no ``nn.Transformer`` (see :func:`read_layout`).
    """
    return read_layout(read_shapes(path)[0], prefix)


def _float(key: str, tensor: Tensor) -> Tensor:
    if not tensor.is_floating_point():
        raise ValueError(f"{key} holds {tensor.dtype} values; weights must be floating point")
    return tensor.float()


def vocab_tokenizer(kind: str, tokens: Sequence[str], specials: Sequence[str], side: str,
                    rows: int) -> tuple[Tokenizer, list[int]]:
    """Attnscope's tokenizer for a model's vocabulary, and ``order``: our id j is the model's id ``order[j]``.

    Raises:
        ValueError: a line count that is not ``rows``, a missing special, a repeated or unusable token.
    """
    if kind not in ("word", "char"):
        raise ValueError(f"tokenizer must be 'word' or 'char', not {kind!r}")
    tokens = [t.strip() for t in tokens] if kind == "word" else list(tokens)
    if len(tokens) != rows:
        raise ValueError(f"the {side} vocabulary has {len(tokens)} lines but the model's {side} embedding "
                         f"has {rows} rows")
    if len(set(specials)) != len(SPECIAL_TOKENS):
        raise ValueError("name four different special tokens: padding, start, end, unknown")
    repeated = [t for t, n in Counter(tokens).items() if n > 1]
    if repeated:
        raise ValueError(f"the {side} vocabulary lists {repeated[0]!r} more than once")
    missing = [s for s in specials if s not in tokens]
    if missing:
        raise ValueError(f"the {side} vocabulary has no line {missing[0]!r}; the vocabulary must hold the "
                         f"padding, start, end and unknown tokens (spelled {' '.join(specials)}: see --specials)")
    first = [tokens.index(s) for s in specials]
    order = first + [i for i in range(rows) if i not in first]
    pieces = [tokens[i] for i in order[len(first):]]
    bad = next((p for p in pieces if (len(p) != 1 if kind == "char" else not p or any(c.isspace() for c in p))), None)
    if bad is not None:
        rule = "one character per line" if kind == "char" else "one word per line, without spaces"
        raise ValueError(f"the {side} vocabulary's line {bad!r} does not fit a {kind} tokenizer ({rule})")
    try:
        return Tokenizer.from_vocab(kind, pieces), order
    except ValueError as error:
        raise ValueError(f"the {side} vocabulary: {error}") from None


def role_keys(layout: NNTransformerLayout, shapes: Shapes, options: NNImportOptions) -> dict[str, str]:
    """The key of each (rows, d_model) table: as given in ``options``, else guessed from the names of the others.

    Raises:
        ValueError: a role neither given nor guessed, or a key that is no (rows, d_model) table.
    """
    listed = ", ".join(f"{k} {'×'.join(map(str, s))}" for k, s in layout.tables.items()) or "none"
    given = {role: _table_key(layout, getattr(options, role), role, listed) for role in ROLES
             if getattr(options, role) is not None}
    rest = {k: s for k, s in layout.tables.items() if k not in given.values()}  # guessed among the others
    guessed = dict(zip(ROLES, guess_roles(rest, shapes)))
    keys = {}
    for role in ROLES:
        keys[role] = given.get(role) or guessed[role]
        if keys[role] is None:
            raise ValueError(f"cannot tell which tensor is the {_NAMES[role]}: name it with {_FLAGS[role]} KEY "
                             f"(tensors of shape (rows, {layout.d_model}): {listed})")
    return keys


def _table_key(layout: NNTransformerLayout, given: str, role: str, listed: str) -> str:
    """``given`` (or ``given.weight``) when it is one of the (rows, d_model) tables."""
    key = given if given in layout.tables or given + ".weight" not in layout.tables else given + ".weight"
    if key not in layout.tables:
        raise ValueError(f"{_FLAGS[role]} {given!r} is not a tensor of shape (rows, {layout.d_model}); "
                         f"those are: {listed}")
    return key


def _output_bias_key(lm_head: str, shapes: Shapes) -> str | None:
    """The output layer's bias key (``….bias`` beside ``….weight``), None when it has none."""
    bias = lm_head[:-len("weight")] + "bias" if lm_head.endswith(".weight") else None
    if bias not in shapes:
        return None
    if tuple(shapes[bias]) != (shapes[lm_head][0],):
        raise ValueError(f"the output layer's bias {bias} has shape {tuple(shapes[bias])}, not ({shapes[lm_head][0]},)")
    return bias


def import_nn_transformer(source: str | os.PathLike, out: str | os.PathLike, options: NNImportOptions, *,
                          budget: Budget = LOAD_BUDGET) -> Checkpoint:
    """Write the ``nn.Transformer`` state dict in ``source`` as an Attnscope checkpoint at ``out``.

    Everything is checked from the shapes (and ``budget``) before a weight is read; the written file
    is loaded back (verified) and returned.

    Raises:
        ValueError: the file, the options or the vocabularies do not fit (one line saying what to change).
        CheckpointError: the checkpoint cannot be written or does not load back.
    """
    shapes, read = read_shapes(source)
    layout = read_layout(shapes, options.prefix)
    keys = role_keys(layout, shapes, options)
    bias_key = _output_bias_key(keys["lm_head"], shapes)
    rows = {role: layout.tables[key][0] for role, key in keys.items()}
    if rows["lm_head"] != rows["tgt_embed"]:
        raise ValueError(f"the output layer {keys['lm_head']} has {rows['lm_head']} rows but the target embedding "
                         f"{keys['tgt_embed']} has {rows['tgt_embed']}")
    src_tok, src_order = vocab_tokenizer(options.tokenizer, options.src_vocab, options.specials, "source",
                                         rows["src_embed"])
    tgt_tok, tgt_order = vocab_tokenizer(options.tokenizer, options.tgt_vocab, options.specials, "target",
                                         rows["tgt_embed"])
    if options.positional not in ("sinusoidal", "none"):
        raise ValueError(f"positional must be 'sinusoidal' or 'none', not {options.positional!r}")
    config = ModelConfig(
        architecture="encoder-decoder", src_vocab_size=rows["src_embed"], tgt_vocab_size=rows["tgt_embed"],
        n_encoder_layers=layout.n_encoder_layers, n_decoder_layers=layout.n_decoder_layers,
        d_model=layout.d_model, n_heads=options.n_heads, d_ff=layout.d_ff, dropout=0.1, max_len=options.max_len,
        norm="pre" if options.norm_first else "post", positional=options.positional, final_norm=True,
        output_bias=bias_key is not None,
    )
    check_budget(config, budget)
    stack = layout.transformer_keys(shapes)
    tensors = read(sorted(set(stack) | set(keys.values()) | ({bias_key} if bias_key else set())))
    state = {k[len(layout.prefix):]: tensors[k] for k in stack}
    scale = 1.0 if options.scale_embeddings else 1.0 / math.sqrt(layout.d_model)  # ours always multiplies by √D
    model = from_nn_transformer(
        state, config, src_embed=tensors[keys["src_embed"]][src_order] * scale,  # (V_src, D), specials first
        tgt_embed=tensors[keys["tgt_embed"]][tgt_order] * scale, lm_head=tensors[keys["lm_head"]][tgt_order],
        lm_head_bias=tensors[bias_key][tgt_order] if bias_key else None,  # (V_tgt,), specials first
    )
    extra = {"imported_from": {"format": "nn.Transformer", "file": Path(source).name, "keys": keys}}

    def write_and_check(tmp: Path) -> None:  # every check on the temp file before it replaces out
        save(tmp, model, {"source": src_tok, "target": tgt_tok}, extra=extra)
        load(tmp, budget=budget)

    replace_when_done(Path(out), write_and_check)
    return load(out, budget=budget)
