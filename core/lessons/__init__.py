"""The maths behind the teaching pages, one module per topic, as functions returning numpy arrays
and small frozen dataclasses (the app only draws them):

- ``positional``: the sinusoid table, frequencies, the relative-position rotation, the worked
  example, and what a loaded model adds to its embeddings;
- ``attention``: the attention playground (β, hard attention, 1/√d saturation, score functions,
  the key-value store, Q/K/V projections);
- ``masks``: look-ahead, padding and combined masks, the masked softmax;
- ``norms``: LayerNorm vs BatchNorm, the FFN as a 1×1 convolution;
- ``schedule``: the Noam learning-rate curve and label smoothing;
- ``parameters``: parameter counts per block against the formulas;
- ``self_attention``: permutation equivariance, the paper's Table 1, the cost of attention;
- ``walkthrough``: one sentence through the translation model, stage by stage (``walkthrough_seq2seq``: the
  same for a pretrained Marian, BART/mBART or T5 model; ``walkthrough_speech``: one clip through Whisper); ``model_map``: the Lesson's map of the model, the
  size of every array it draws, and what a family changes on each stage;
- ``cross_reading``: what each decoder step's cross-attention output resembles among the encoder outputs;
- ``sampling``: one decoder step's distribution under temperature, top-k and top-p, and tokens drawn from it;
- ``decoding``: one sentence decoded greedily, by beam search and by seeded sampling;
- ``questions``: the Lesson's questions, each answered by the model's own numbers;
- ``learning_step``: one training step of a translation model on one batch (teacher forcing, the masks, the
  smoothed loss as CE and KL, one Adam step at the Noam rate, the loss before and after);
- ``recipe``: Adam's settings, warm-up schedules side by side, label smoothing's confidence penalty;
- ``coreference``: which heads of a real encoder link one word to another, and their measured ranks;
- ``torch_mha``: PyTorch's ``nn.MultiheadAttention`` loaded with a model's stacked W_qkv and W^O, against
  the model's own layer-0 encoder self-attention;
- ``whisper_parameters``: a real encoder-decoder's (Whisper's) parameters part by part, beside the paper's;
- ``weight_tying``: whether a model's embedding is its output layer, measured on one pass (the paper's §3.4);
- ``implementations``: the project's own code of each step the Lesson teaches, under the Annotated Transformer's
  names;
- ``worker``: :class:`LessonWorker`, the functions above that run a model, for an untrusted model in its worker process.
"""

from core.lessons.attention import (attention_row, kv_lookup, KVLookup, qkv_projection, QKVProjection,
                                    random_vectors, Saturation, saturation, score_functions, ScoreFunction)
from core.lessons.beyond import length_accuracy, LengthAccuracy, pe_beyond, PEBeyond
from core.lessons.coreference import head_links, HeadLink, LinkReport, links_from_ranking
from core.lessons.cross_reading import cross_reading
from core.lessons.implementations import implementation, Implementation, STEPS as CODE_STEPS
from core.lessons.learning_step import learning_step, LearningStep, training_pairs
from core.lessons.masks import (batch_masks, BatchMasks, checkpoint_batch, look_ahead_mask, masked_softmax_demo, MaskedSoftmax,
                                pad_sentences, TokenBatch, tokenizer_batch, whitespace_batch)
from core.lessons.norms import ffn_as_convolution, FFNDemo, norm_demo, norm_stats, NormDemo, NormStats
from core.lessons.parameters import BlockCount, expected_parameter_counts, parameter_table
from core.lessons.positional import (lecture_comparison, LectureComparison, model_encoding, ModelEncoding,
                                     pe_curves, pe_frequency, pe_table, PECurves, rotation_check, rotation_matrix,
                                     RotationCheck, wavelength_range, worked_example, WorkedExample)
from core.lessons.projections import model_projection, ModelProjection
from core.lessons.recipe import (confidence_penalty, ConfidencePenalty, paper_recipe, PaperRecipe, SCHEDULES,
                                 warmup_schedules)
from core.lessons import questions
from core.lessons.questions import Question
from core.lessons.decoding import compare_decoding, Decoded, DecodingComparison
from core.lessons.sampling import draw_tokens, Draws, sampling_step, SamplingStep
from core.lessons.schedule import (kl_check, KLCheck, noam_curve, NoamCurve, other_share, smoothing_example,
                                   SmoothingExample)
from core.lessons.self_attention import (attention_cost, AttentionCost, path_comparison, PathComparison,
                                         permutation_demo, PermutationDemo)
from core.lessons.model_map import array_sizes, ArraySize, MapBlock, model_map, ModelMap, stage_notes
from core.lessons.walkthrough import HeadTrace, LessonTrace, trace_translation
from core.lessons.torch_mha import as_torch_mha, compare_torch_mha, torch_mha, TorchMHA
from core.lessons.whisper_parameters import PAPER_REPORTED, PartCount, whisper_parameters, WhisperParameters
from core.lessons.walkthrough_seq2seq import lesson_follows, trace_sentence, trace_seq2seq
from core.lessons.walkthrough_speech import MAX_NEW_TOKENS as SPEECH_MAX_NEW_TOKENS, SpeechTrace, trace_speech
from core.lessons.weight_tying import weight_tying, WeightTying
from core.lessons.worker import LessonWorker

__all__ = [
    "CODE_STEPS", "implementation", "Implementation",
    "ArraySize", "AttentionCost", "BatchMasks", "BlockCount", "ConfidencePenalty", "FFNDemo", "HeadLink",
    "HeadTrace", "KLCheck", "KVLookup", "LearningStep", "WeightTying", "LectureComparison", "LengthAccuracy", "LessonTrace", "LessonWorker", "LinkReport",
    "MapBlock", "MaskedSoftmax", "ModelEncoding", "ModelMap", "ModelProjection", "NoamCurve", "NormDemo",
    "NormStats", "PaperRecipe", "PathComparison", "PEBeyond", "PECurves", "PermutationDemo", "QKVProjection",
    "Question", "questions", "compare_decoding", "Decoded", "DecodingComparison", "draw_tokens", "Draws",
    "RotationCheck", "SamplingStep", "Saturation", "ScoreFunction", "SmoothingExample", "TokenBatch",
    "WorkedExample", "array_sizes", "attention_cost", "attention_row", "batch_masks", "checkpoint_batch",
    "confidence_penalty",
    "cross_reading",
    "expected_parameter_counts", "ffn_as_convolution", "head_links", "kl_check", "kv_lookup", "learning_step", "lesson_follows",
    "lecture_comparison", "length_accuracy", "links_from_ranking", "training_pairs", "weight_tying", "look_ahead_mask", "masked_softmax_demo",
    "model_encoding", "model_map", "model_projection", "noam_curve", "norm_demo", "norm_stats", "other_share",
    "pad_sentences", "paper_recipe", "parameter_table", "path_comparison", "pe_beyond", "pe_curves",
    "pe_frequency", "pe_table", "permutation_demo", "qkv_projection", "random_vectors", "rotation_check",
    "rotation_matrix", "sampling_step", "saturation", "score_functions", "smoothing_example", "stage_notes",
    "tokenizer_batch", "TorchMHA", "as_torch_mha", "compare_torch_mha", "torch_mha",
    "trace_sentence", "trace_seq2seq", "SPEECH_MAX_NEW_TOKENS", "SpeechTrace", "trace_speech", "trace_translation",
    "warmup_schedules", "wavelength_range", "whitespace_batch", "worked_example", "PAPER_REPORTED", "SCHEDULES",
    "PartCount", "whisper_parameters", "WhisperParameters",
]
