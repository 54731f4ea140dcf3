"""The sidebar's import form for an uploaded PyTorch ``nn.Transformer`` state dict.

The shapes give d_model, the depths and d_ff (shown above the form) and a guess of which tensors are
the embeddings and the output layer; the form asks for what they cannot tell, as ``python -m core
import`` does, then :func:`app.services.catalog.import_upload` converts the file with core and checks the
checkpoint like any other upload.
"""

from __future__ import annotations

import streamlit as st

from app.services import catalog
from app import resources
from app.ui import widgets
from core import CheckpointError, convert, SPECIAL_TOKENS

NORMS = {"post": "post-norm (nn.Transformer's default)", "pre": "pre-norm (norm_first=True)"}
POSITIONALS = {"sinusoidal": "the paper's sinusoids", "none": "none"}
ROLES = {"src_embed": "Source embedding (--src-embed)", "tgt_embed": "Target embedding (--tgt-embed)",
         "lm_head": "Output layer (--lm-head)"}


def summary(layout: convert.NNTransformerLayout) -> str:
    """What the shapes tell, in one sentence."""
    return (f"d_model {layout.d_model}, {layout.n_encoder_layers} encoder and {layout.n_decoder_layers} decoder "
            f"layers, d_ff {layout.d_ff}")


def _tensor_picker(layout: convert.NNTransformerLayout, role: str) -> str | None:
    keys = list(layout.tables)
    guess = getattr(layout, role)
    return st.selectbox(ROLES[role], keys, index=keys.index(guess) if guess in keys else None, key=f"import_{role}",
                        format_func=lambda k: f"{k} ({layout.tables[k][0]} rows)",
                        placeholder="choose the tensor", help="guessed from the names where they tell")


def _fields(layout: convert.NNTransformerLayout) -> dict:
    """Draw the form's fields; their values by name."""
    values = {
        "heads": st.number_input("Attention heads (nhead)", min_value=1, max_value=layout.d_model, value=None,
                                 step=1, key="import_heads", help=f"must divide d_model = {layout.d_model}"),
        "norm": st.radio("Norm placement", list(NORMS), format_func=NORMS.get, key="import_norm"),
        "scale": st.checkbox("The model multiplied its embeddings by √d_model", key="import_scale"),
        "positional": st.radio("Positional encoding it added", list(POSITIONALS), format_func=POSITIONALS.get,
                               key="import_positional", horizontal=True),
        "tokenizer": st.radio("Tokens", ["word", "char"], key="import_tokenizer", horizontal=True,
                              format_func={"word": "words", "char": "characters"}.get),
        "src_vocab": st.text_area("Source vocabulary: one token per line, line i = id i", key="import_src_vocab"),
        "tgt_vocab": st.text_area("Target vocabulary (empty: the same as the source)", key="import_tgt_vocab"),
        "specials": st.text_input("How the vocabulary spells padding, start, end, unknown",
                                  value=" ".join(SPECIAL_TOKENS), key="import_specials"),
    }
    values.update({role: _tensor_picker(layout, role) for role in ROLES})
    return values


def options_from(values: dict) -> convert.NNImportOptions:
    """The form's values as import options.

    Raises:
        ValueError: no number of heads, or not four special tokens.
    """
    if values["heads"] is None:
        raise ValueError("say how many attention heads each layer has")
    specials = tuple(values["specials"].split())
    if len(specials) != len(SPECIAL_TOKENS):
        raise ValueError("name four special tokens, separated by spaces: padding, start, end, unknown")
    src_vocab = convert.vocab_lines(values["src_vocab"])
    return convert.NNImportOptions(
        n_heads=int(values["heads"]), src_vocab=src_vocab,
        tgt_vocab=convert.vocab_lines(values["tgt_vocab"]) if values["tgt_vocab"].strip() else src_vocab,
        tokenizer=values["tokenizer"], norm_first=values["norm"] == "pre", scale_embeddings=values["scale"],
        specials=specials, positional=values["positional"], src_embed=values["src_embed"],
        tgt_embed=values["tgt_embed"], lm_head=values["lm_head"],
    )


def import_form(layout: convert.NNTransformerLayout, filename: str, data: bytes) -> str | None:
    """Draw the form for the uploaded ``filename``; the new upload's catalog key once imported, else None."""
    st.info(f"{widgets.plain(filename)} holds a PyTorch nn.Transformer ({summary(layout)}). "
            "Say what the shapes cannot tell:")
    with st.form("nn_import"):
        values = _fields(layout)
        submitted = st.form_submit_button("Import", key="import_submit", type="primary")
    if not submitted:
        return None
    try:
        # through the gate at a lower CPU priority, as resources.save_upload checks uploads
        token, options = resources.owner(), options_from(values)
        return resources.gated_upload(resources.GATE, resources.session(),
                                      lambda: catalog.import_upload(token, filename, data, options))
    except (CheckpointError, ValueError) as error:
        st.error(f"This file cannot be imported: {widgets.plain(str(error))}")
        return None
