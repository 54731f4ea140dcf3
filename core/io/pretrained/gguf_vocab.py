"""The tokenizer a GGUF file's metadata describes, built with Hugging Face ``tokenizers``.

* ``tokenizer.ggml.model == "gpt2"``: byte-level BPE (:meth:`PretrainedTokenizer.from_gguf`).
* ``tokenizer.ggml.model == "llama"``: a SentencePiece vocabulary (Llama 2, TinyLlama, Mistral), tokenized as
  llama.cpp's SPM tokenizer does: a space put before the text (``tokenizer.ggml.add_space_prefix``, default on)
  and after every special token, spaces written ``▁``, then adjacent pieces merged, the pair whose merged
  piece has the highest score (``tokenizer.ggml.scores``) first; a character no piece covers becomes its
  UTF-8 bytes as ``<0xXX>`` tokens (byte fallback), else the unknown token; ``<s>`` first unless
  ``tokenizer.ggml.add_bos_token`` is false. In ``tokenizers`` terms: a BPE model whose merges are every
  split of a normal piece into two pieces, ranked by the merged piece's score.
"""

from __future__ import annotations

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers

from core.io.checkpoint import CheckpointError
from core.io.pretrained.gguf_data import GGUFMetadata
from core.model.families.llama import LlamaConfig
from core.text.pretrained_tokenizer import GGUFVocab, PretrainedTokenizer
from core.text.tokenizer_check import native

_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _BYTE = 1, 2, 3, 4, 6  # llama.cpp token types (5: unused)
MAX_SPLIT_WORK = 64_000_000  # characters hashed while listing merges (Σ len² over pieces; Llama 2: ~2 M)


def _flag(meta: GGUFMetadata, key: str, default: bool, name: str) -> bool:
    value = meta.get(key, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"{name}: GGUF {key} must be a boolean, got {str(value)[:40]!r}")
    return value


def gguf_tokenizer(meta: GGUFMetadata, config: LlamaConfig, name: str) -> PretrainedTokenizer:
    """The tokenizer a GGUF file's metadata describes (item types and counts were checked by the header scan).

    Raises:
        CheckpointError: malformed merges, an unsupported pre-tokenizer, or a vocabulary the library refuses.
    """
    model = meta.get("tokenizer.ggml.model")
    tokens = list(meta.get("tokenizer.ggml.tokens"))
    types = list(meta.get("tokenizer.ggml.token_type", [])) or [_NORMAL] * len(tokens)
    add_bos, space = (_flag(meta, f"tokenizer.ggml.{key}", model == "llama", name)
                      for key in ("add_bos_token", "add_space_prefix"))
    bos_id = config.bos_id if add_bos else None
    try:
        if model == "llama":
            scores = list(meta.get("tokenizer.ggml.scores", [])) or [0.0] * len(tokens)
            return spm_tokenizer(tokens, scores, types, space, bos_id, config.max_len, name)
        return PretrainedTokenizer.from_gguf(_bpe_vocab(meta, tokens, types, config, name, add_bos), config.max_len)
    except CheckpointError:
        raise
    except Exception as error:  # HF tokenizers raises bare Exceptions (a merge of unknown tokens)
        raise CheckpointError(f"{name}: {error}") from None


def _bpe_vocab(meta: GGUFMetadata, tokens: list[str], types: list[int], config: LlamaConfig, name: str,
               add_bos: bool) -> GGUFVocab:
    pre = meta.get("tokenizer.ggml.pre", "default")
    merges = list(meta.get("tokenizer.ggml.merges", []))
    if not isinstance(pre, str):
        raise CheckpointError(f"{name}: GGUF tokenizer.ggml.pre must be a string")
    bad = next((m for m in merges if m.count(" ") != 1 or m.startswith(" ") or m.endswith(" ")), None)
    if bad is not None:
        raise CheckpointError(f"{name}: GGUF merge {bad[:40]!r} is not two tokens separated by one space")
    return GGUFVocab(model="gpt2", pre=pre, tokens=tokens, merges=merges, token_types=types,
                     bos_id=config.bos_id, eos_id=config.eos_id, add_bos=add_bos)


def spm_merges(tokens: list[str], scores: list[float], types: list[int], name: str) -> list[tuple[str, str]]:
    """Every (left, right) pair of pieces that joins into a normal or user-defined piece, the merged
    piece with the highest score first (ties: the lower id), then the shorter left part.

    Raises:
        CheckpointError: pieces so long that listing their splits passes :data:`MAX_SPLIT_WORK`.
    """
    work = sum(len(t) ** 2 for t in tokens)
    if work > MAX_SPLIT_WORK:
        raise CheckpointError(f"{name}: its SentencePiece pieces are too long to list their merges "
                              f"({work:,} characters to hash, at most {MAX_SPLIT_WORK:,})")
    mergeable = {t for t, kind in zip(tokens, types) if kind in (_NORMAL, _USER_DEFINED)}
    ranked = []
    for i, (piece, score, kind) in enumerate(zip(tokens, scores, types)):
        if kind not in (_NORMAL, _USER_DEFINED):
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in mergeable and right in mergeable:
                ranked.append((-score, i, cut, left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def spm_tokenizer(tokens: list[str], scores: list[float], types: list[int], space_prefix: bool,
                  bos_id: int | None, max_len: int, name: str) -> PretrainedTokenizer:
    """A llama.cpp SPM tokenizer (see the module docstring) over ``tokens`` with their ids."""
    ids = {}
    for i, token in enumerate(tokens):
        ids.setdefault(token, i)  # a repeated piece keeps its first id, as llama.cpp's token_to_id
    unknown = next((t for t, kind in zip(tokens, types) if kind == _UNKNOWN), None)
    bpe = models.BPE(ids, spm_merges(tokens, scores, types, name), unk_token=unknown, fuse_unk=True,
                     byte_fallback=any(kind == _BYTE for kind in types), ignore_merges=False)
    hf = native(lambda: Tokenizer(bpe), "building the SentencePiece vocabulary")
    steps = [normalizers.Prepend("▁")] if space_prefix else []
    hf.normalizer = normalizers.Sequence([*steps, normalizers.Replace(" ", "▁")])
    ends = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    hf.decoder = decoders.Sequence([*ends, decoders.Strip(content=" ", left=1)] if space_prefix else ends)
    hf.add_special_tokens([AddedToken(t, normalized=False, special=True)
                           for t, kind in zip(tokens, types) if kind == _CONTROL])
    hf.add_tokens([AddedToken(t, normalized=False, special=False)
                   for t, kind in zip(tokens, types) if kind == _USER_DEFINED])
    return PretrainedTokenizer(hf, kind="sentencepiece", max_len=max_len, bos_id=bos_id)
