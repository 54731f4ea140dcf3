"""Importers from other formats into Attnscope's :class:`~core.model.Transformer`."""

from core.io.interop.nn_transformer import config_for_nn_transformer, from_nn_transformer, load_state_dict_file

__all__ = ["config_for_nn_transformer", "from_nn_transformer", "load_state_dict_file"]
