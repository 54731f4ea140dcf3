"""``python -m core import SRC --out OUT.safetensors --heads N --src-vocab FILE --tgt-vocab FILE``.

Turns a PyTorch ``nn.Transformer`` state dict into an Attnscope checkpoint that ``python -m core
explain`` and the app open (:func:`core.io.convert.nn_import.import_nn_transformer`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.io.checkpoint import CheckpointError
from core.io.convert.nn_import import NNImportOptions, import_nn_transformer, vocab_lines
from core.text.tokenizer import SPECIAL_TOKENS

DESCRIPTION = """Import the weights of a PyTorch nn.Transformer as an Attnscope checkpoint.

SRC is your model's state_dict saved with safetensors (.safetensors) or torch.save (.pt/.pth; read
with torch.load(weights_only=True): tensors only, nothing is ever unpickled). The nn.Transformer may
sit inside your model (keys such as transformer.encoder.layers.0...) or stand alone; your embeddings
and output layer are found by name or named with --src-embed/--tgt-embed/--lm-head. d_model, the
depths and d_ff are read from the shapes; the number of heads and the norm placement cannot be, so
say them. ReLU and LayerNorm eps 1e-5 (nn.Transformer's defaults) are assumed."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit status 2 (argparse prints the usage too)
        self.exit(2, f"error: {message} (see python -m core import --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m core import", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("source", metavar="SRC", help="the state dict file: .safetensors, .pt or .pth")
    add("--out", required=True, help="the Attnscope checkpoint to write (.safetensors)")
    add("--heads", type=int, required=True, metavar="N",
        help="attention heads per layer (nn.Transformer's nhead); must divide d_model")
    add("--src-vocab", required=True, metavar="FILE", help="source vocabulary: one token per line, line i = id i")
    add("--tgt-vocab", required=True, metavar="FILE", help="target vocabulary, as --src-vocab (may be the same file)")
    add("--tokenizer", choices=("word", "char"), default="word",
        help="split input into words and punctuation, or into characters (default: word)")
    add("--specials", nargs=4, metavar=("PAD", "BOS", "EOS", "UNK"), default=list(SPECIAL_TOKENS),
        help="how the vocabularies spell the padding, start, end and unknown tokens; each must be a line "
             "of both files (default: <pad> <bos> <eos> <unk>)")
    add("--norm-first", action="store_true",
        help="the model was built with norm_first=True (pre-norm); default: post-norm, nn.Transformer's default")
    add("--scale-embeddings", action="store_true",
        help="your model multiplied its embeddings by sqrt(d_model), as the paper does (default: it did not)")
    add("--positional", choices=("sinusoidal", "none"), default="sinusoidal",
        help="the positional encoding your model added to the embeddings: the paper's sinusoids or none "
             "(default: sinusoidal)")
    add("--max-len", type=int, default=512, metavar="N", help="the longest input the checkpoint accepts, in tokens (default: 512)")
    add("--prefix", metavar="P", help="the key prefix before encoder.layers. (default: found from the keys; '' for a bare "
                         "nn.Transformer)")
    add("--src-embed", metavar="KEY", help="the source embedding's key (default: guessed from the names)")
    add("--tgt-embed", metavar="KEY", help="the target embedding's key (default: guessed from the names)")
    add("--lm-head", metavar="KEY", help="the output layer's weight key (default: guessed from the names)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the exit status (2 with a one-line message on any error)."""
    args = _parser().parse_args(argv)
    try:
        vocab = {side: vocab_lines(Path(getattr(args, side)).read_text(encoding="utf-8"))
                 for side in ("src_vocab", "tgt_vocab")}
        options = NNImportOptions(
            n_heads=args.heads, src_vocab=vocab["src_vocab"], tgt_vocab=vocab["tgt_vocab"],
            tokenizer=args.tokenizer, norm_first=args.norm_first, scale_embeddings=args.scale_embeddings,
            specials=tuple(args.specials),
            positional=args.positional, max_len=args.max_len, prefix=args.prefix, src_embed=args.src_embed,
            tgt_embed=args.tgt_embed, lm_head=args.lm_head,
        )
        ckpt = import_nn_transformer(args.source, args.out, options)
    except (ValueError, CheckpointError, OSError, UnicodeDecodeError) as error:
        sys.stderr.write(f"error: {' '.join(str(error).split())}\n")
        return 2
    c = ckpt.config
    sys.stdout.write(f"wrote {args.out}: d_model={c.d_model}, {c.n_heads} heads, {c.n_encoder_layers}+"
                     f"{c.n_decoder_layers} layers, d_ff={c.d_ff}, {c.norm}-norm, vocabularies "
                     f"{c.src_vocab_size}/{c.tgt_vocab_size} ({args.tokenizer})\n")
    return 0
