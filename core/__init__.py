"""Attnscope core: a Transformer that returns every head's attention alongside its predictions.

The flow is text → tokens (``core.io``) → model (``core.model``) → a pure-data
:class:`Explanation` (``core.inspect``) → the app's charts. Training lives in
``core.training``, built-in data generators in ``core.tasks``. This module is the
public API: the app and ``bench/`` use nothing else::

    from core import explain, load_checkpoint
    result = explain("assets/checkpoints/reverse.safetensors", "abcdef")

Pretrained models open the same way: ``explain(path, text)`` with a BERT-family folder or a
Llama-family ``.gguf`` file (``pretrained_models()`` lists the installed ones, ``core.io.pretrained.load``).

Command line: ``python -m core {train,explain,evaluate,import}`` (see ``core/__main__.py``).
"""

from core.config import ARCHITECTURES, ModelConfig
from core.budget import LOAD_BUDGET, Budget, check_budget
from core.device import (available_devices, gpu_count, is_out_of_memory, release_memory, resolve_device, set_threads,
                         thread_count)
from core.inspect.analysis import (difference, head_entropy, head_finder, head_statistics, knockout_mask,
                                   max_weight, mean_distance, mean_over_heads, rollout, rollout_by_layer)
from core.generate.decode import Generation, beam_search, greedy, sample
from core.inspect.embeddings import Embeddings, model_embeddings
from core.inspect.explainer import explain, explain_batch
from core.inspect.options import ExplainOptions
from core.inspect.sentences import sentence_embeddings, sentence_similarity
from core.inspect.speech import detect_language, explain_speech
from core.audio.decode import Audio, load_audio
from core.audio.mel import log_mel
from core.text.inputs import input_vocabulary, trained_lengths_note
from core.inspect.records import row_labels
from core.inspect.records import KIND_LABELS, Explanation, Prediction, axis_tokens
from core.io.checkpoint import Checkpoint, CheckpointError, CheckpointInfo, read_info
from core.io.atomic import clean_stale_temp_files
from core.io.run_record import RunRecord
from core.io.identify import ModelFile, find_models, identify, model_version
from core.io.checkpoint import load as load_checkpoint
from core.io.checkpoint import save as save_checkpoint
from core.io.convert import (NNImportOptions, NNTransformerLayout, import_nn_transformer, nn_transformer_layout,
                             vocab_lines)
from core.io.pretrained.load import PretrainedEntry, PretrainedModel, is_pretrained, load_pretrained, pretrained_models
from core.text.tokenizer import SPECIAL_TOKENS, Encoding, Tokenizer
from core.lessons.attention import (KVLookup, QKVProjection, Saturation, ScoreFunction, attention_row, kv_lookup,
                                    qkv_projection, random_vectors, saturation, score_functions)
from core.lessons.masks import (BatchMasks, MaskedSoftmax, TokenBatch, batch_masks, look_ahead_mask,
                                masked_softmax_demo, pad_sentences, tokenizer_batch, whitespace_batch)
from core.lessons.norms import FFNDemo, NormDemo, NormStats, ffn_as_convolution, norm_demo, norm_stats
from core.lessons.parameters import BlockCount, expected_parameter_counts, parameter_table
from core.lessons.positional import (ModelEncoding, PECurves, RotationCheck, WorkedExample, model_encoding,
                                     pe_curves, pe_frequency, pe_table, rotation_check, rotation_matrix,
                                     worked_example)
from core.lessons.schedule import NoamCurve, SmoothingExample, noam_curve, smoothing_example
from core.lessons.self_attention import (AttentionCost, PathComparison, PermutationDemo, attention_cost,
                                         path_comparison, permutation_demo)
from core.lessons.walkthrough import HeadTrace, LessonTrace, trace_translation
# teaching additions (issue 13): real Q/K/V, the notes' worked example, KL form of label smoothing, beyond max length
from core.lessons.beyond import LengthAccuracy, PEBeyond, length_accuracy, pe_beyond
from core.lessons.positional import LectureComparison, lecture_comparison, wavelength_range
from core.lessons.projections import ModelProjection, model_projection
from core.lessons.schedule import KLCheck, kl_check, other_share
# teaching additions (issue 22): measured head links, sampling, schedules, code beside the maths
from core.lessons.coreference import HeadLink, LinkReport, head_links, links_from_ranking
from core.lessons.recipe import (ConfidencePenalty, PaperRecipe, confidence_penalty, paper_recipe,
                                 warmup_schedules)
from core.lessons.sampling import SamplingStep, sampling_step
from core.model.attention import MultiHeadAttention, attention, attention_weights
from core.model.masks import combine_masks, padding_mask, subsequent_mask
from core.model.positional import sinusoidal_encoding
from core.model.rotary import rotary_frequencies, rotary_relative_scores
from core.model.contract import KINDS, AttentionControls, ModelOutput
from core.model.transformer import Transformer
from core.tasks import TASKS, get_task, out_of_range
from core.training.config import TrainConfig
from core.training.data import Batch, Batcher
from core.training.evaluation import evaluate
from core.training.objectives import noam_lr, smoothed_loss, smoothed_targets
from core.training.setup import PRESETS
from core.training.snapshots import SnapshotTimeline, snapshot_maps, snapshot_timeline, training_history
from core.training.state import is_resume_state, resume_state_path, run_checkpoint_path, run_checkpoints
from core.training.step import StepOutcome, StepRecipe, make_optimizer, train_step
from core.training.trainer import StepInfo, TrainResult, train

__all__ = [
    "input_vocabulary", "trained_lengths_note",
    "NNImportOptions", "NNTransformerLayout", "import_nn_transformer", "nn_transformer_layout", "vocab_lines",
    "run_checkpoint_path", "run_checkpoints", "ModelFile", "RunRecord", "find_models", "identify", "model_version",
    "row_labels",
    "LOAD_BUDGET", "Budget", "check_budget", "clean_stale_temp_files",
    "ARCHITECTURES", "KINDS", "KIND_LABELS", "PRESETS", "SPECIAL_TOKENS", "TASKS", "AttentionControls",
    "AttentionCost", "Batch", "BatchMasks", "Batcher", "BlockCount", "Checkpoint", "CheckpointError",
    "CheckpointInfo", "Embeddings", "Encoding", "ExplainOptions", "Explanation", "FFNDemo", "Generation",
    "HeadTrace", "KVLookup", "LessonTrace", "MaskedSoftmax", "ModelConfig", "ModelEncoding", "ModelOutput",
    "MultiHeadAttention", "NoamCurve", "NormDemo", "NormStats", "PECurves", "PathComparison",
    "PermutationDemo", "Prediction", "PretrainedEntry", "PretrainedModel", "QKVProjection", "RotationCheck", "Saturation", "ScoreFunction",
    "SmoothingExample", "SnapshotTimeline", "StepInfo", "StepOutcome", "StepRecipe", "TokenBatch", "Tokenizer",
    "TrainConfig", "TrainResult", "Transformer", "WorkedExample", "attention", "attention_cost",
    "attention_row", "attention_weights", "available_devices", "axis_tokens", "batch_masks", "beam_search",
    "combine_masks", "difference", "evaluate", "expected_parameter_counts", "explain", "explain_batch",
    "ffn_as_convolution", "get_task", "gpu_count", "out_of_range", "greedy", "head_entropy", "head_finder", "head_statistics",
    "is_out_of_memory", "is_pretrained", "is_resume_state", "knockout_mask", "kv_lookup", "load_checkpoint", "load_pretrained", "look_ahead_mask",
    "make_optimizer", "masked_softmax_demo", "max_weight", "mean_distance", "mean_over_heads",
    "model_embeddings", "model_encoding", "noam_curve", "noam_lr", "norm_demo", "norm_stats", "pad_sentences",
    "padding_mask", "parameter_table", "path_comparison", "pe_curves", "pe_frequency", "pe_table",
    "permutation_demo", "pretrained_models", "qkv_projection", "random_vectors", "read_info", "release_memory", "resolve_device",
    "resume_state_path", "rollout", "rollout_by_layer", "rotary_frequencies", "rotary_relative_scores", "rotation_check", "rotation_matrix", "sample",
    "saturation", "save_checkpoint", "score_functions", "sentence_embeddings", "sentence_similarity", "set_threads", "sinusoidal_encoding", "smoothed_loss",
    "smoothed_targets", "smoothing_example", "snapshot_maps", "snapshot_timeline", "subsequent_mask",
    "thread_count", "tokenizer_batch", "trace_translation", "train", "train_step", "training_history",
    "whitespace_batch", "worked_example",
    # teaching additions (issue 13)
    "KLCheck", "LectureComparison", "LengthAccuracy", "ModelProjection", "PEBeyond", "kl_check",
    "lecture_comparison", "length_accuracy", "model_projection", "other_share", "pe_beyond", "wavelength_range",
    # speech (issue 25)
    "Audio", "detect_language", "explain_speech", "load_audio", "log_mel",
    # teaching additions (issue 22)
    "HeadLink", "LinkReport", "head_links", "links_from_ranking", "ConfidencePenalty", "PaperRecipe",
    "confidence_penalty", "paper_recipe", "warmup_schedules", "SamplingStep", "sampling_step",
]
