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

Every model also returns its trace, the named intermediates of one pass (``TRACE_NAMES``)::

    out = model(src, tgt, record=["encoder.*.q", "*.resid_out"])
    out.trace["encoder.0.q"]  # (B, H, S, dk)

Command line: ``python -m core {train,evaluate,report,explain,import}`` (see ``core/cli/``).
"""

from core.config import ModelConfig
from core.tasks import get_task, TASKS
from core.text.deadline import TokenizerWorker
from core.text.inputs import LOWER_CASED, input_vocabulary, trained_lengths_note
from core.text.tokenizer import SPECIAL_TOKENS, Tokenizer
from core.model.attention import attention
from core.model.contract import AttentionControls
from core.model.masks import subsequent_mask
from core.model.positional import sinusoidal_encoding
from core.model.rotary import rotary_frequencies, rotary_relative_scores
from core.model.trace import TRACE_NAMES
from core.model.transformer import Transformer
from core.io.checkpoint import (Checkpoint, CheckpointError, CheckpointInfo, load as load_checkpoint, read_info,
                                save as save_checkpoint)
from core.io.identify import find_models, identify, model_version, ModelFile
from core.io.hf_cache import cached_models, CachedModel, hub_cache, is_hub_cache
from core.io.pretrained.progress import loading_progress
from core.io.headers import check_header
from core.io.pretrained.load import (is_pretrained, load_pretrained, pretrained_models, PretrainedEntry,
                                     PretrainedModel)
from core.generate.decode import beam_search, greedy, sample
from core.inspect.explainer import MAP_RECORD, explain, explain_batch
from core.inspect.head_types import induction_probe
from core.inspect.lens import logit_lens
from core.inspect.sweep import head_sweep, merged as merge_sweeps
from core.inspect.maps import OnDemandMaps
from core.inspect.records import Explanation, KIND_LABELS
from core.inspect.coverage import COVERAGE_THRESHOLD, untranslated, word_coverage, WordCoverage
from core.inspect.sentences import sentence_similarity
from core.inspect.speech import explain_speech
from core.inspect.facts import ModelFacts
from core.inspect.worker import ExplainWorker

# Namespaces for the rest of the flow: ``device.set_threads``, ``convert.import_nn_transformer``,
# ``analysis.head_finder``, ``head_types.sink_share``, ``training.train`` and the teaching maths ``lessons``.
from core import device
from core.io import convert
from core.inspect import analysis, head_types
from core import training
from core import lessons

__all__ = [
    "analysis", "attention", "AttentionControls", "beam_search", "cached_models", "CachedModel", "check_header",
    "Checkpoint", "CheckpointError", "CheckpointInfo", "convert", "COVERAGE_THRESHOLD", "device", "explain", "explain_batch",
    "explain_speech", "Explanation", "ExplainWorker", "find_models", "get_task", "greedy", "head_sweep", "head_types",
    "hub_cache", "identify", "induction_probe", "input_vocabulary", "LOWER_CASED", "is_hub_cache", "is_pretrained", "KIND_LABELS",
    "lessons", "load_checkpoint", "load_pretrained", "loading_progress", "logit_lens", "MAP_RECORD", "merge_sweeps",
    "model_version", "ModelConfig", "OnDemandMaps", "TRACE_NAMES", "ModelFacts", "ModelFile", "pretrained_models",
    "PretrainedEntry",
    "PretrainedModel", "read_info", "rotary_frequencies", "rotary_relative_scores", "sample", "save_checkpoint",
    "sentence_similarity", "sinusoidal_encoding", "SPECIAL_TOKENS", "subsequent_mask", "TASKS", "Tokenizer",
    "TokenizerWorker", "trained_lengths_note", "training", "Transformer", "untranslated", "word_coverage",
    "WordCoverage",
]
