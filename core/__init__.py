"""Attnscope core: a Transformer that returns every head's attention alongside its predictions.

The flow is text → tokens (``core.io``) → model (``core.model``) → a pure-data
:class:`Explanation` (``core.inspect``) → the app's charts. Training lives in
``core.training``, built-in data generators in ``core.tasks``. This module is the
public API: the app and ``bench/`` use nothing else::

    from core import explain, load_checkpoint
    result = explain("assets/checkpoints/reverse.safetensors", "abcdef")

Pretrained models open the same way: ``explain(path, text)`` with a BERT-family folder or a
Llama-family ``.gguf`` file (``pretrained_models()`` lists the installed ones, ``core.io.pretrained``).

Command line: ``python -m core {train,explain,evaluate}`` (see ``core/__main__.py``).
"""

from core.config import ARCHITECTURES, ModelConfig
from core.device import available_devices, resolve_device
from core.inspect.analysis import (difference, head_entropy, head_finder, head_statistics, knockout_mask,
                                   max_weight, mean_distance, mean_over_heads, rollout, rollout_by_layer)
from core.inspect.decode import Generation, beam_search, greedy, sample
from core.inspect.explainer import ExplainOptions, explain, explain_batch
from core.inspect.pretrained import sentence_embeddings, sentence_similarity
from core.inspect.records import KIND_LABELS, Explanation, Prediction
from core.io.checkpoint import Checkpoint, CheckpointError, CheckpointInfo, read_info
from core.io.checkpoint import load as load_checkpoint
from core.io.checkpoint import save as save_checkpoint
from core.io.pretrained import PretrainedEntry, PretrainedModel, is_pretrained, load_pretrained, pretrained_models
from core.io.tokenizer import SPECIAL_TOKENS, Encoding, Tokenizer
from core.lessons.self_attention import (AttentionCost, PathComparison, PermutationDemo, attention_cost,
                                         path_comparison, permutation_demo)
from core.lessons.walkthrough import HeadTrace, LessonTrace, trace_translation
from core.model.attention import MultiHeadAttention, attention, attention_weights
from core.model.masks import combine_masks, padding_mask, subsequent_mask
from core.model.positional import sinusoidal_encoding
from core.model.rotary import rotary_frequencies, rotary_relative_scores
from core.model.transformer import KINDS, AttentionControls, ModelOutput, Transformer
from core.tasks import TASKS, get_task
from core.training.evaluation import evaluate
from core.training.objectives import noam_lr, smoothed_loss, smoothed_targets
from core.training.setup import PRESETS
from core.training.snapshots import snapshot_maps
from core.training.trainer import StepInfo, TrainConfig, TrainResult, train

__all__ = [
    "ARCHITECTURES", "KINDS", "KIND_LABELS", "PRESETS", "SPECIAL_TOKENS", "TASKS",
    "AttentionControls", "AttentionCost", "Checkpoint", "CheckpointError", "CheckpointInfo", "Encoding", "ExplainOptions",
    "Explanation", "Generation", "HeadTrace", "LessonTrace", "ModelConfig", "ModelOutput", "MultiHeadAttention", "PathComparison", "PermutationDemo", "Prediction",
    "PretrainedEntry", "PretrainedModel",
    "StepInfo",
    "Tokenizer", "TrainConfig", "TrainResult", "Transformer",
    "attention", "attention_cost", "attention_weights", "available_devices", "beam_search", "combine_masks", "difference",
    "evaluate", "explain", "explain_batch", "get_task", "greedy", "head_entropy", "head_finder", "head_statistics",
    "is_pretrained", "load_pretrained", "pretrained_models", "rotary_frequencies", "rotary_relative_scores",
    "sentence_embeddings", "sentence_similarity",
    "knockout_mask", "load_checkpoint", "max_weight", "mean_distance", "mean_over_heads", "noam_lr",
    "padding_mask", "path_comparison", "permutation_demo", "read_info", "resolve_device", "rollout", "rollout_by_layer", "sample", "save_checkpoint",
    "sinusoidal_encoding", "smoothed_loss", "smoothed_targets", "snapshot_maps", "subsequent_mask", "trace_translation", "train",
]
