"""Read Hugging Face Marian folders (Helsinki-NLP opus-mt): the model and its two vocabularies.

The tensors follow BART's layout (:mod:`core.io.pretrained.hf_bart`); positions are Marian's fixed
sinusoids (not read from the file), post-norm, no embedding norm. Tokenizers: a ``tokenizer.json``
when the folder has one, else Marian's real layout — ``source.spm`` and ``target.spm``
(SentencePiece models) with one ``vocab.json`` mapping pieces to the model's ids — rebuilt with HF
``tokenizers`` as SentencePiece segments (normaliser, dummy prefix, Unigram pieces and scores) and
ended with ``</s>``. A multilingual model's target-language tokens (``>>fra<<``, in ``vocab.json`` but not
in the SentencePiece model) are matched whole, so ``>>fra<< text`` starts with that one token, as in
``MarianTokenizer`` (which, unlike this, splits a code that does not start the text into pieces, and turns a
leading code missing from the vocabulary into ``<unk>``). The SentencePiece files are protobuf; the few fields needed are read here.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from core.io.checkpoint import CheckpointError
from core.io.pretrained.hf_bart import bart_claims, bart_name, bart_style_config, load_seq2seq, shown_only
from core.io.pretrained.hf_claims import check_folder
from core.io.pretrained.hf_files import (VOCAB_BYTES, VOCAB_ENTRIES, FolderRead, folder_config, read_capped_file,
                                         read_json, read_tokenizer)
from core.text.child import first_line
from core.text.pretrained_tokenizer import PretrainedTokenizer

_NORMAL, _USER_DEFINED = 1, 4  # SentencePiece piece types
_UNUSED_SCORE = -1e4  # vocabulary entries SentencePiece never emits from text
SPM_PIECES = 2**17  # the most pieces of a SentencePiece model (Marian's have about 60,000)
_LANGUAGE = re.compile(r">>[^\s<>]{1,40}<<")  # a multilingual model's target-language token, e.g. >>fra<<


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value) of a protobuf message, in order: ints for varints, bytes for the rest."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, i = data[i : i + width], i + width
        else:
            raise ValueError(f"protobuf wire type {wire} is not supported")
        yield number, value


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def read_spm(path: Path) -> tuple[dict[str, tuple[float, int]], dict[int, Any]]:
    """A SentencePiece model file: piece → (score, type), and its normaliser spec fields.

    Raises:
        CheckpointError: an unreadable file or a model that is not Unigram.
    """
    data = read_capped_file(path, path.parent, VOCAB_BYTES)
    try:
        pieces: dict[str, tuple[float, int]] = {}
        trainer: dict[int, Any] = {}
        spec: dict[int, Any] = {}
        count = 0
        for number, value in _fields(data):
            if number == 1:
                count += 1
                if count > SPM_PIECES:  # counted as read: a crafted file stops here
                    raise ValueError(f"more than {SPM_PIECES:,} pieces")
                piece = dict(_fields(value))
                score = struct.unpack("<f", piece[2])[0] if 2 in piece else 0.0
                pieces[piece[1].decode("utf-8")] = (score, int(piece.get(3, _NORMAL)))
            elif number == 2:
                trainer = dict(_fields(value))
            elif number == 3:
                spec = dict(_fields(value))
    except (OSError, ValueError, IndexError, KeyError, struct.error, UnicodeDecodeError) as error:
        raise CheckpointError(f"{path.parent.name}/{path.name} is not a SentencePiece model ({error})") from None
    if trainer.get(3, 1) != 1:
        raise CheckpointError(f"{path.parent.name}/{path.name}: only Unigram SentencePiece models are supported")
    return pieces, spec


def spm_tokenizer(spm: Path, vocab: dict[str, int], max_len: int) -> PretrainedTokenizer:
    """SentencePiece segmentation of ``spm`` with the ids of ``vocab`` (Marian's vocab.json), ending in ``</s>``.

    Raises:
        CheckpointError: an unreadable model, ids that are not 0 … n-1, or a normaliser the tokenizers library
            refuses (a cut ``precompiled_charsmap``): one line naming the file.
    """
    pieces, spec = read_spm(spm)
    order = sorted(vocab, key=vocab.get)
    if [vocab[t] for t in order] != list(range(len(order))):
        raise CheckpointError(f"{spm.parent.name}/vocab.json ids are not 0 … {len(order) - 1}")
    try:
        hf = _unigram(pieces, spec, vocab, order)
    except Exception as error:  # the tokenizers library raises bare Exceptions for a malformed charsmap
        raise CheckpointError(f"{spm.parent.name}/{spm.name} is not a usable SentencePiece model "
                              f"({first_line(error)})") from None
    return PretrainedTokenizer(hf, kind="sentencepiece", max_len=max_len)


def _unigram(pieces: dict[str, tuple[float, int]], spec: dict[int, Any], vocab: dict[str, int],
             order: list[str]) -> Tokenizer:
    """The Hugging Face tokenizer a SentencePiece Unigram model and its normaliser spec describe."""
    scores = [(t, pieces[t][0] if t in pieces and pieces[t][1] in (_NORMAL, _USER_DEFINED) else _UNUSED_SCORE)
              for t in order]
    unk = vocab.get("<unk>", 0)
    hf = Tokenizer(models.Unigram(scores, unk_id=unk, byte_fallback=False))
    steps = [normalizers.Precompiled(spec[2])] if spec.get(2) else []
    if spec.get(4, 1):  # remove_extra_whitespaces
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.get(5, 1):  # escape_whitespaces
        steps.append(normalizers.Replace(" ", "▁"))
    dummy = bool(spec.get(3, 1))
    if dummy:
        steps.append(normalizers.Replace(Regex(r"\A▁"), "▁▁"))
        hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    hf.normalizer = normalizers.Sequence(steps)
    ends = [decoders.Replace("▁", " ")] + ([decoders.Fuse(), decoders.Strip(content=" ", left=1)] if dummy else [])
    hf.decoder = decoders.Sequence(ends)
    specials = [t for t in ("</s>", "<unk>", "<pad>") if t in vocab]
    hf.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    hf.add_tokens([AddedToken(t, normalized=False, special=False) for t in order if _LANGUAGE.fullmatch(t)])
    if "</s>" in vocab:
        hf.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", vocab["</s>"])])
    return hf


def marian_tokenizers(folder: Path, max_len: int) -> tuple[PretrainedTokenizer, PretrainedTokenizer]:
    """(source, target) tokenizers: ``tokenizer.json`` for both, else ``source.spm``/``target.spm`` + ``vocab.json``."""
    if (folder / "tokenizer.json").is_file():
        tokenizer = read_tokenizer(folder, max_len, kind="sentencepiece")
        return tokenizer, tokenizer
    names = ("source.spm", "target.spm", "vocab.json")
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise CheckpointError(f"{folder.name} has neither tokenizer.json nor Marian's {', '.join(missing)}")
    vocab = read_json(folder / "vocab.json", folder, VOCAB_BYTES)
    if len(vocab) > VOCAB_ENTRIES or not all(isinstance(v, int) for v in vocab.values()):
        raise CheckpointError(f"{folder.name}: vocab.json is not a piece → id map of at most {VOCAB_ENTRIES:,} "
                              "pieces")
    return spm_tokenizer(folder / "source.spm", vocab, max_len), spm_tokenizer(folder / "target.spm", vocab, max_len)


def marian_name(name: str) -> str | None:
    """A stored Marian tensor → ours; the sinusoid tables are computed, not read."""
    return None if name.endswith("embed_positions.weight") else bart_name(name)


def read_marian(folder: Path) -> FolderRead:
    """Load a Marian folder: the model in eval mode, source and target tokenizers, the decoder start id.

    Raises:
        CheckpointError: missing files, separate decoder vocabularies, tensors that do not match config.json.
    """
    folder = Path(folder)
    raw = folder_config(folder)
    if int(raw.get("decoder_vocab_size") or raw.get("vocab_size", 0)) != int(raw.get("vocab_size", 0)) or \
            raw.get("share_encoder_decoder_embeddings", True) is False:
        raise CheckpointError(f"{folder.name}: Marian models with separate decoder vocabularies are not supported")
    check_folder(folder, marian_name, bart_claims(raw, folder, learned=False))  # sinusoids: computed, not stored
    config = bart_style_config(folder, raw, "marian", positions="sinusoidal")
    source, target = marian_tokenizers(folder, config.max_len)
    config = shown_only(config, target.vocab_size)
    return FolderRead(load_seq2seq(folder, config, marian_name), source, "marian", "text",
                      target_tokenizer=target, decoder_start_id=config.decoder_start_id)
