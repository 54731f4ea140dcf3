"""Attnscope core: a Transformer that returns every head's attention alongside its predictions.

The flow is text → tokens (``core.text``) → model (``core.model``: the contract, the paper's model and
the pretrained families) → io (checkpoints, pretrained readers) → generation (``core.generate``) → one
pure-data :class:`Explanation` (``core.inspect``) → the app's charts. Training lives in
``core.training``, built-in data generators in ``core.tasks``, the teaching maths in ``core.lessons``
(``from core import lessons``). This module is the public API the app and ``bench/`` use::

    from core import explain, load_checkpoint
    result = explain("assets/checkpoints/reverse.safetensors", "abcdef")

Pretrained models open the same way: ``explain(path, text)`` with a Hugging Face model folder or a
``.gguf`` file (``pretrained_models()`` lists the installed ones; ``identify(path)`` says what a file
is); speech models through ``explain_speech(model, audio)``.

Command line: ``python -m core {train,evaluate,report,explain,import}`` (see ``core/cli.py``).
"""

from core.config import ModelConfig
from core.device import available_devices, gpu_count, is_out_of_memory, release_memory, set_threads, thread_count
from core.tasks import get_task, TASKS
from core.text.deadline import TokenizerWorker
from core.text.inputs import input_vocabulary, trained_lengths_note
from core.text.tokenizer import SPECIAL_TOKENS, Tokenizer
from core.audio.decode import load_audio
from core.audio.mel import log_mel
from core.model.attention import attention
from core.model.contract import AttentionControls
from core.model.masks import subsequent_mask
from core.model.positional import sinusoidal_encoding
from core.model.rotary import rotary_frequencies, rotary_relative_scores
from core.model.transformer import Transformer
from core.io.checkpoint import (Checkpoint, CheckpointError, CheckpointInfo, load as load_checkpoint, read_info,
                                save as save_checkpoint)
from core.io.convert import (import_nn_transformer, nn_transformer_layout, NNImportOptions, NNTransformerLayout,
                             vocab_lines)
from core.io.identify import find_models, identify, model_version, ModelFile
from core.io.pretrained.load import (is_pretrained, load_pretrained, pretrained_models, PretrainedEntry,
                                     PretrainedModel)
from core.generate.decode import beam_search, greedy, sample
from core.inspect.analysis import (difference, head_finder, head_statistics, knockout_mask, mean_over_heads,
                                   rollout_by_layer)
from core.inspect.explainer import explain, explain_batch
from core.inspect.records import Explanation, KIND_LABELS
from core.inspect.sentences import sentence_similarity
from core.inspect.speech import explain_speech
from core.training.config import TrainConfig
from core.training.objectives import noam_lr, smoothed_loss
from core.training.setup import PRESETS
from core.training.snapshots import snapshot_timeline, SnapshotTimeline, training_history
from core.training.state import resume_state_path, run_checkpoint_path, run_checkpoints
from core.training.step import make_optimizer
from core.training.trainer import StepInfo, train, TrainResult

from core import lessons  # noqa: E402 - the teaching maths, as a namespace

__all__ = [
    "attention", "AttentionControls", "available_devices", "beam_search", "Checkpoint",
    "CheckpointError", "CheckpointInfo", "difference", "explain", "explain_batch",
    "explain_speech", "Explanation", "find_models", "get_task", "gpu_count", "greedy",
    "head_finder", "head_statistics", "identify", "import_nn_transformer", "input_vocabulary",
    "is_out_of_memory", "is_pretrained", "KIND_LABELS", "knockout_mask", "load_audio", "load_checkpoint",
    "load_pretrained", "log_mel", "make_optimizer", "mean_over_heads", "model_version",
    "ModelConfig", "ModelFile", "nn_transformer_layout", "NNImportOptions",
    "NNTransformerLayout", "noam_lr", "PRESETS", "pretrained_models",
    "PretrainedEntry", "PretrainedModel", "read_info", "release_memory", "resume_state_path",
    "rollout_by_layer", "rotary_frequencies", "rotary_relative_scores", "run_checkpoint_path",
    "run_checkpoints", "sample", "save_checkpoint", "sentence_similarity",
    "set_threads", "sinusoidal_encoding", "smoothed_loss", "snapshot_timeline", "SnapshotTimeline",
    "SPECIAL_TOKENS", "StepInfo", "subsequent_mask", "TASKS", "thread_count", "Tokenizer", "TokenizerWorker", "train",
    "TrainConfig", "trained_lengths_note", "training_history", "TrainResult", "Transformer", "vocab_lines",
    "lessons",
]
