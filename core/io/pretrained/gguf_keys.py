"""Every GGUF metadata key a Llama-family reader meets is either understood or known to be harmless; any
other key is refused by name, so that a setting the model would silently leave out (a new rotary scaling,
logit soft-capping, an expert count) never gives wrong maps.

* ``{arch}.*``: :data:`ARCH_KEYS` are read (sizes, norms, rotary settings), :data:`ARCH_IGNORED` describe
  the file without changing the computation, and :data:`ARCH_ZERO` must be 0 when present (a Mixtral's
  ``expert_count``).
* ``tokenizer.*``: :data:`TOKENIZER_KEYS` are read, :data:`TOKENIZER_IGNORED` are token ids the explainer
  never inserts, chat templates and embedded copies of the vocabulary; ``tokenizer.ggml.add_eos_token``
  must be false (the reader never appends an end token).
* ``general.*`` (names, licence, base models, ``quantization_version`` …) and ``quantize.imatrix.*``
  (how the file was quantized) are descriptions; ``general.alignment`` and ``general.architecture`` are read.
* ``split.*``: the file is one part of a split GGUF, refused (its tensors are elsewhere).
"""

from __future__ import annotations

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_header import GGUFHeader

#: ``{arch}.`` keys the readers read.
ARCH_KEYS = frozenset({
    "context_length", "embedding_length", "block_count", "feed_forward_length", "vocab_size",
    "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon",
    "attention.key_length", "attention.value_length", "attention.sliding_window",
    "rope.dimension_count", "rope.freq_base", "rope.scaling.type", "rope.scaling.factor",
    "rope.scaling.original_context_length",
})
#: ``{arch}.`` keys that describe the file without changing what the model computes.
ARCH_IGNORED = frozenset({"rope.scaling.finetuned", "tensor_data_layout"})
#: ``{arch}.`` keys accepted only as 0 (what they turn on is not read).
ARCH_ZERO = frozenset({"expert_count", "expert_used_count"})
#: ``tokenizer.`` keys the vocabulary reader reads.
TOKENIZER_KEYS = frozenset({f"ggml.{k}" for k in (
    "model", "pre", "tokens", "token_type", "merges", "scores", "bos_token_id", "eos_token_id", "padding_token_id",
    "add_bos_token", "add_space_prefix", "add_eos_token")})
#: ``tokenizer.`` keys that never change how a text is tokenized or run (ids the explainer does not insert,
#: chat templates, another copy of the vocabulary, settings of tokenizers other than BPE and SentencePiece).
TOKENIZER_IGNORED = frozenset({
    "chat_template", "huggingface.json", "rwkv.world",
    *(f"ggml.{k}_token_id" for k in ("unknown", "seperator", "separator", "cls", "mask", "eot", "eom", "prefix",
                                     "suffix", "middle", "fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep",
                                     "fim_sep")),
    "ggml.remove_extra_whitespaces", "ggml.precompiled_charsmap", "ggml.token_type_count", "ggml.add_sep_token",
})
_DESCRIPTIONS = ("general.", "quantize.imatrix.")


def check_keys(header: GGUFHeader, arch: str, name: str) -> None:
    """Refuse the first metadata key of the file ``name`` that is neither understood nor known to be harmless.

    Raises:
        CheckpointError: one line naming the key (and why, for a split file or a flag that must be off).
    """
    if header.scalars.get("tokenizer.ggml.add_eos_token", (None, False))[1] is True:
        raise CheckpointError(f"{name}: GGUF tokenizer.ggml.add_eos_token is true (an end token after every "
                              "text) and is not supported")
    for key in sorted({*header.scalars, *header.arrays}):
        if key.startswith(_DESCRIPTIONS):
            continue
        if key.startswith("split."):
            raise CheckpointError(f"{name} is one part of a split GGUF ({key}); join the parts first "
                                  "(llama.cpp's gguf-split --merge)")
        if key.startswith(f"{arch}."):
            _check_arch_key(header, key, key[len(arch) + 1:], name)
        elif key.startswith("tokenizer.") and key[len("tokenizer."):] in TOKENIZER_KEYS | TOKENIZER_IGNORED:
            continue
        elif key.startswith("tokenizer.chat_template."):  # named templates (tool use, RAG)
            continue
        else:
            raise CheckpointError(f"{name}: GGUF metadata key {key!r} is not understood by the {arch} reader")


def _check_arch_key(header: GGUFHeader, key: str, suffix: str, name: str) -> None:
    if suffix in ARCH_KEYS or suffix in ARCH_IGNORED:
        return
    if suffix in ARCH_ZERO and header.scalars.get(key, (None, None))[1] == 0:
        return
    raise CheckpointError(f"{name}: GGUF metadata key {key!r} is not understood by the "
                          f"{key.split('.', 1)[0]} reader")
