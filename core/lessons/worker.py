"""The teaching pages' model maths for an untrusted model, in its worker process.

An uploaded model (or one from the models folder) never runs in the server: Explore's explanations run in
its :class:`~core.inspect.worker.ExplainWorker`. :class:`LessonWorker` is that worker with a small, explicit
set of further calls (:data:`CALLS`): the Lesson's trace, what Positional, the Playground and Self-attention
compute with the model, the Masks page's batch cut by the model's tokenizer, a sentence encoder's similarity, the
Checkpoints page's attention timeline, the Research page's logit lens, head sweep and induction probe, a
Whisper model's explanation of a piece of speech (the audio file's bytes as base64 text), and the Lesson's
greedy, beam and sampled outputs, and the Architecture page's weight tying. Each is a pure function of (the loaded model,
JSON arguments) whose result is made of the frozen dataclasses in :data:`RECORDS`, NumPy arrays and JSON
values, so it crosses back as JSON and a safetensors blob (:func:`core.inspect.wire.pack`), never a pickle,
under the worker's deadline and memory cap; the result is the in-process one bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.inspect.head_types import induction_probe, InductionProbe
from core.inspect.lens import logit_lens, LogitLens
from core.inspect.records import Explanation, Prediction
from core.inspect.sentences import sentence_similarity
from core.inspect.speech import explain_speech_encoded
from core.inspect.sweep import head_sweep, Sweep
from core.inspect.worker import ExplainWorker
from core.inspect.worker import serve_child as _serve
from core.lessons.decoding import compare_decoding, Decoded, DecodingComparison
from core.lessons.beyond import length_accuracy, LengthAccuracy, pe_beyond, PEBeyond
from core.lessons.masks import checkpoint_batch, TokenBatch
from core.lessons.positional import model_encoding, ModelEncoding
from core.lessons.projections import model_projection, ModelProjection
from core.lessons.self_attention import permutation_demo, PermutationDemo
from core.lessons.torch_mha import torch_mha, TorchMHA
from core.lessons.walkthrough import HeadTrace, LessonTrace
from core.lessons.walkthrough_seq2seq import trace_sentence
from core.lessons.weight_tying import weight_tying, WeightTying
from core.training.snapshots import timeline_parts, TimelineParts

#: The calls a lesson worker answers, by name: each takes the loaded model first.
CALLS: dict[str, Callable[..., Any]] = {fn.__name__: fn for fn in (
    trace_sentence, model_encoding, model_projection, torch_mha, permutation_demo, length_accuracy, pe_beyond,
    checkpoint_batch, sentence_similarity, timeline_parts, logit_lens, head_sweep, induction_probe,
    explain_speech_encoded, compare_decoding, weight_tying)}
#: The dataclasses their results may hold.
RECORDS: dict[str, type] = {cls.__name__: cls for cls in (
    LessonTrace, HeadTrace, ModelEncoding, ModelProjection, TorchMHA, PermutationDemo, LengthAccuracy, PEBeyond,
    TokenBatch, TimelineParts, LogitLens, Sweep, InductionProbe, Explanation, Prediction, DecodingComparison,
    Decoded, WeightTying)}


class LessonWorker(ExplainWorker):
    """An :class:`~core.inspect.worker.ExplainWorker` (the model loaded once in a child process; explanations,
    deadline, memory cap and one-line failures as there) that also runs the calls of :data:`CALLS`."""

    child_module = __name__
    records = RECORDS

    def lesson(self, fn: Callable[..., Any] | str, *args: Any, deadline_s: float | None = None, **kwargs: Any) -> Any:
        """``fn(model, *args, **kwargs)`` run in the child, for ``fn`` one of :data:`CALLS` (or its name).

        Raises:
            ValueError: ``fn`` is not one of them, what it raises, or the run passed its deadline, or the
                child died or failed: always one line.
        """
        name = fn if isinstance(fn, str) else getattr(fn, "__name__", "")
        if name not in CALLS or not isinstance(fn, str) and CALLS[name] is not fn:
            raise ValueError(f"{name or fn!r} is not a lesson the worker runs; it runs {', '.join(sorted(CALLS))}")
        return self.call(name, *args, deadline_s=deadline_s, **kwargs)


def serve_child() -> None:
    """The child process's main loop (``python -I -c`` code of :class:`LessonWorker`)."""
    _serve(CALLS, RECORDS)
