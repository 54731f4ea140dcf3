"""What the shapes of a saved ``nn.Transformer`` state dict tell, read without loading the weights.

A state dict holds ``nn.Transformer``'s keys either bare (``encoder.layers.0…``) or under the
user model's attribute (``transformer.encoder.layers.0…``: the *prefix*), next to the user's
embeddings and output layer. Shapes give ``d_model``, both depths and ``d_ff``; they cannot give
the number of heads or the norm placement. The other keys holding a (rows, d_model) matrix are
the candidates for the source and target embeddings and the output projection; their roles are
guessed from their names when that is unambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Shapes = dict[str, tuple[int, ...]]

ROLES = ("src_embed", "tgt_embed", "lm_head")
_ENCODER_LAYER = re.compile(r"^(.*?)encoder\.layers\.\d+\.")
_HINTS = {"src_embed": ("src", "source", "enc"), "tgt_embed": ("tgt", "target", "trg", "dec"),
          "lm_head": ("head", "generator", "proj", "fc", "linear", "classifier", "logit")}


@dataclass(frozen=True)
class NNTransformerLayout:
    """What a state dict's shapes say about the ``nn.Transformer`` inside it.

    Attributes:
        prefix: the key prefix before ``encoder.layers.`` (``""`` for a bare ``nn.Transformer``).
        d_model, n_encoder_layers, n_decoder_layers, d_ff: the sizes the shapes give.
        tables: every other key holding a (rows, d_model) matrix → its shape: the candidates
            for the embeddings and the output projection.
        src_embed, tgt_embed, lm_head: the candidate each role was given from its name, or None
            when the names do not tell.
    """

    prefix: str
    d_model: int
    n_encoder_layers: int
    n_decoder_layers: int
    d_ff: int
    tables: dict[str, tuple[int, ...]]
    src_embed: str | None
    tgt_embed: str | None
    lm_head: str | None

    def transformer_keys(self, shapes: Shapes) -> list[str]:
        """The keys of the ``nn.Transformer`` itself (both stacks), sorted."""
        stacks = (self.prefix + "encoder.", self.prefix + "decoder.")
        return sorted(k for k in shapes if k.startswith(stacks))


def read_layout(shapes: Shapes, prefix: str | None = None) -> NNTransformerLayout:
    """The :class:`NNTransformerLayout` of a state dict given as key → shape.

    Args:
        prefix: the key prefix of the ``nn.Transformer``; None finds it (it must be unique).

    Raises:
        ValueError: no (or more than one) ``nn.Transformer`` in the keys, or shapes that do not fit one.
    """
    prefix = _find_prefix(shapes) if prefix is None else prefix
    if prefix and not prefix.endswith("."):
        prefix += "."
    qkv = shapes.get(prefix + "encoder.layers.0.self_attn.in_proj_weight", ())
    linear1 = shapes.get(prefix + "encoder.layers.0.linear1.weight", ())
    if len(qkv) != 2 or qkv[0] != 3 * qkv[1] or len(linear1) != 2 or linear1[1] != qkv[1]:
        raise ValueError(f"{prefix}encoder.layers.0 has no self_attn.in_proj_weight of shape (3·d_model, d_model) "
                         "and linear1.weight of shape (d_ff, d_model): not an nn.Transformer's weights")
    d_model = qkv[1]
    stacks = (prefix + "encoder.", prefix + "decoder.")
    tables = {k: s for k, s in sorted(shapes.items()) if not k.startswith(stacks) and len(s) == 2 and s[1] == d_model}
    guesses = guess_roles(tables, shapes)
    return NNTransformerLayout(prefix, d_model, _depth(shapes, prefix, "encoder"), _depth(shapes, prefix, "decoder"),
                               linear1[0], tables, *guesses)


def _find_prefix(shapes: Shapes) -> str:
    found = sorted({match.group(1) for key in shapes if (match := _ENCODER_LAYER.match(key))})
    if not found:
        raise ValueError("no key holds 'encoder.layers.': not an nn.Transformer state dict")
    if len(found) > 1:
        raise ValueError(f"the keys hold several encoders (prefixes {', '.join(repr(p) for p in found[:5])}); "
                         "name the nn.Transformer's with --prefix")
    return found[0]


def _depth(shapes: Shapes, prefix: str, stack: str) -> int:
    """How many layers ``stack`` has: its layer indices must run 0 … n − 1."""
    pattern = re.compile(re.escape(f"{prefix}{stack}.layers.") + r"(\d+)\.")
    indices = {int(match.group(1)) for key in shapes if (match := pattern.match(key))}
    if not indices:
        raise ValueError(f"no {prefix}{stack}.layers.* keys: nn.Transformer has an encoder and a decoder")
    if indices != set(range(len(indices))):
        raise ValueError(f"{prefix}{stack}.layers has layers {sorted(indices)[:8]}; expected 0 … n−1")
    return len(indices)


def guess_roles(tables: dict[str, tuple[int, ...]], shapes: Shapes) -> tuple[str | None, str | None, str | None]:
    """(src_embed, tgt_embed, lm_head): the only candidate whose name fits each role, else None.

    An output projection is a matrix with a bias beside it or a head-like name (not an
    embedding's); a lone embedding with no source/target hint serves both sides.
    """
    def named(key: str, role: str) -> bool:
        return any(hint in key.lower() for hint in _HINTS[role])

    heads = [k for k in tables if (k.endswith(".weight") and k[:-len("weight")] + "bias" in shapes)
             or (named(k, "lm_head") and "emb" not in k.lower())]
    embeddings = [k for k in tables if k not in heads]
    src = [k for k in embeddings if named(k, "src_embed") and not named(k, "tgt_embed")]
    tgt = [k for k in embeddings if named(k, "tgt_embed") and not named(k, "src_embed")]
    if len(embeddings) == 1 and not src and not tgt:
        src = tgt = embeddings
    return tuple(keys[0] if len(keys) == 1 else None for keys in (src, tgt, heads))  # type: ignore[return-value]
