"""Importers from other formats into Attnscope's :class:`~core.model.Transformer`."""

from core.io.convert.nn_import import (NNImportOptions, import_nn_transformer, nn_transformer_layout, vocab_lines,
                                       vocab_tokenizer)
from core.io.convert.nn_layout import NNTransformerLayout, read_layout
from core.io.convert.nn_transformer import config_for_nn_transformer, from_nn_transformer, load_state_dict_file

__all__ = ["NNImportOptions", "NNTransformerLayout", "config_for_nn_transformer", "from_nn_transformer",
           "import_nn_transformer", "load_state_dict_file", "nn_transformer_layout", "read_layout", "vocab_lines",
           "vocab_tokenizer"]
