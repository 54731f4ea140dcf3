"""Attnscope core: a Transformer that returns every head's attention alongside its predictions.

The public API (the app uses nothing else)::

    from core import ModelConfig, Transformer, explain, load_checkpoint
"""

from core.attention import MultiHeadAttention, attention, attention_weights
from core.checkpoint import Checkpoint, CheckpointError, CheckpointInfo, read_info
from core.checkpoint import load as load_checkpoint
from core.checkpoint import save as save_checkpoint
from core.config import ModelConfig
from core.decode import Generation, beam_search, greedy, sample
from core.device import available_devices, resolve_device
from core.explain import ExplainOptions, explain
from core.masks import combine_masks, padding_mask, subsequent_mask
from core.model import KINDS, AttentionControls, ModelOutput, Transformer
from core.positional import sinusoidal_encoding
from core.records import KIND_LABELS, Explanation, Prediction
from core.tokenizer import SPECIAL_TOKENS, Encoding, Tokenizer

__all__ = [
    "AttentionControls", "Checkpoint", "CheckpointError", "CheckpointInfo", "Encoding", "ExplainOptions",
    "Explanation", "Generation", "KINDS", "KIND_LABELS", "ModelConfig", "ModelOutput", "MultiHeadAttention",
    "Prediction", "SPECIAL_TOKENS", "Tokenizer", "Transformer", "attention", "attention_weights",
    "available_devices", "beam_search", "combine_masks", "explain", "greedy", "load_checkpoint", "padding_mask",
    "read_info", "resolve_device", "sample", "save_checkpoint", "sinusoidal_encoding", "subsequent_mask",
]
