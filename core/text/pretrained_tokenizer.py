"""Tokenizers of pretrained models: a ``tokenizer.json`` (BERT's WordPiece) or a GGUF vocabulary.

Both wrap Hugging Face ``tokenizers`` and reproduce the original model's ids exactly:

* WordPiece from ``tokenizer.json``: its normaliser (lower-casing), pre-tokenizer and
  ``[CLS] … [SEP]`` template; padding off; truncation at the model's limit.
* Byte-level BPE from a GGUF file's metadata (``tokenizer.ggml.tokens`` / ``merges`` /
  ``token_type``), split into words the way llama.cpp's named pre-tokenizer does
  (``tokenizer.ggml.pre``). Control tokens such as ``<|im_start|>`` match whole, as in
  the original tokenizer.

Unlike :class:`~core.text.tokenizer.Tokenizer` the ids are the model's own (no reserved
``<pad>``/``<bos>``/``<eos>``/``<unk>`` ids) and the special tokens are the model's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as _HFTokenizer

from core.text.tokenizer import Encoding
from core.text.validation import check_text
from core.text.tokenizer_check import check_tokenizer_spec, native, read_capped

#: The most bytes of a ``tokenizer.json`` read (Gemma's, with 256,000 entries, takes 17 MB).
TOKENIZER_FILE_BYTES = 32 * 2**20
# llama.cpp's word-splitting regexes (llama-vocab.cpp), by ``tokenizer.ggml.pre``.
_GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = _LLAMA3_SPLIT.replace(r"\p{N}{1,3}", r"\p{N}")  # every digit alone
_DIGITS_THEN_GPT2 = ("smollm", "starcoder", "refact", "codeshell")
_GPT2 = ("gpt2", "default", "olmo", "mpt")
_LLAMA3 = ("llama-bpe", "llama3", "llama-v3", "smaug-bpe")
_QWEN2 = ("qwen2",)
SUPPORTED_GGUF_PRE = _DIGITS_THEN_GPT2 + _GPT2 + _LLAMA3 + _QWEN2
_CONTROL, _USER_DEFINED = 3, 4  # llama.cpp token types


def _gguf_pre_tokenizer(pre: str) -> pre_tokenizers.PreTokenizer:
    # trim_offsets=False: a token's offsets include its leading space, as its bytes do.
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    if pre in _DIGITS_THEN_GPT2:  # every digit alone, then GPT-2's split (HF: Digits + ByteLevel)
        split = [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Split(Regex(_GPT2_SPLIT), "isolated")]
    elif pre in _GPT2:
        split = [pre_tokenizers.Split(Regex(_GPT2_SPLIT), "isolated")]
    elif pre in _LLAMA3:
        split = [pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), "isolated")]
    elif pre in _QWEN2:
        split = [pre_tokenizers.Split(Regex(_QWEN2_SPLIT), "isolated")]
    else:
        raise ValueError(f"GGUF pre-tokenizer {pre!r} is not supported; supported: {', '.join(SUPPORTED_GGUF_PRE)}")
    return pre_tokenizers.Sequence([*split, byte_level])


def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte-level alphabet: the printable character standing for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(256 + extra)] = byte
            extra += 1
    return chars


_BYTE_OF_CHAR = _byte_of_char()


def _readable(token: str) -> str:
    """A byte-level BPE token as text (``Ġthe`` → `` the``); invalid UTF-8 as ``<0x..>`` bytes."""
    raw = bytes(_BYTE_OF_CHAR[c] for c in token if c in _BYTE_OF_CHAR)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if b < 0x80 else f"<0x{b:02X}>" for b in raw)


@dataclass(frozen=True)
class GGUFVocab:
    """The tokenizer a GGUF file describes (``tokenizer.ggml.*`` metadata)."""

    model: str  # tokenizer.ggml.model: only "gpt2" (byte-level BPE) is supported
    pre: str  # tokenizer.ggml.pre
    tokens: list[str]
    token_types: list[int]
    merges: list[str]
    bos_id: int | None = None
    eos_id: int | None = None
    add_bos: bool = False


class PretrainedTokenizer:
    """A pretrained model's tokenizer with :class:`~core.text.tokenizer.Tokenizer`'s interface.

    ``encode`` adds the specials the model expects (BERT's ``[CLS]``/``[SEP]``; a GGUF
    model's ``<bos>`` when the file says so). ``tokens`` are the model's own token strings
    made readable: byte-level BPE tokens decoded to text (a space stays a space), WordPiece
    tokens as in the vocabulary (``##`` marks a word continued).
    """

    def __init__(self, hf: _HFTokenizer, *, kind: str, max_len: int, bos_id: int | None = None) -> None:
        hf.no_padding()
        hf.enable_truncation(max_len)
        self._hf, self.kind, self.max_len, self.bos_id = hf, kind, max_len, bos_id
        self._specials = {t.content for t in hf.get_added_tokens_decoder().values() if t.special}
        self._special_ids = {i for i, t in hf.get_added_tokens_decoder().items() if t.special}

    @classmethod
    def from_file(cls, path: str | Path, max_len: int, kind: str = "wordpiece") -> PretrainedTokenizer:
        """Any ``tokenizer.json`` (WordPiece, BPE, Unigram), padding off and truncation at ``max_len``;
        ``kind="bpe"`` for a byte-level BPE (GPT-2 style, e.g. Whisper's): its tokens are shown as text.

        The file is untrusted: :func:`~core.text.tokenizer_check.check_tokenizer_spec` runs first.

        Raises:
            ValueError: not JSON, refused by the check, or refused by the tokenizers library (one line).
        """
        text = read_capped(path, TOKENIZER_FILE_BYTES).decode("utf-8")
        check_tokenizer_spec(json.loads(text))
        return cls(native(lambda: _HFTokenizer.from_str(text), "reading tokenizer.json"), kind=kind, max_len=max_len)

    @classmethod
    def from_gguf(cls, vocab: GGUFVocab, max_len: int) -> PretrainedTokenizer:
        """Byte-level BPE from a GGUF vocabulary.

        Raises:
            ValueError: a tokenizer model or pre-tokenizer that is not supported.
        """
        if vocab.model != "gpt2":
            raise ValueError(f"GGUF tokenizer model {vocab.model!r} is not supported; "
                             "supported: 'gpt2' (byte-level BPE)")
        ids = {token: i for i, token in enumerate(vocab.tokens)}
        merges = [tuple(m.split(" ", 1)) for m in vocab.merges]
        hf = _HFTokenizer(models.BPE(ids, merges, ignore_merges=False))
        hf.pre_tokenizer = _gguf_pre_tokenizer(vocab.pre)
        hf.decoder = decoders.ByteLevel()
        types = vocab.token_types or [0] * len(vocab.tokens)
        hf.add_special_tokens([AddedToken(t, normalized=False, special=True)
                               for t, kind in zip(vocab.tokens, types) if kind == _CONTROL])
        hf.add_tokens([AddedToken(t, normalized=False, special=False)
                       for t, kind in zip(vocab.tokens, types) if kind == _USER_DEFINED])
        return cls(hf, kind="gguf-bpe", max_len=max_len, bos_id=vocab.bos_id if vocab.add_bos else None)

    # ------------------------------------------------------------------ encode / decode
    def encode(self, text: str) -> Encoding:
        """Encode ``text`` as the original tokenizer does (empty text → empty Encoding)."""
        check_text(text)
        if not text.strip():
            return Encoding([], [], [])
        enc = native(lambda: self._hf.encode(text), "tokenizing")
        ids, offsets = list(enc.ids), [(int(s), int(e)) for s, e in enc.offsets]
        if self.bos_id is not None:
            ids, offsets = [self.bos_id, *ids][: self.max_len], [(0, 0), *offsets][: self.max_len]
        return Encoding(ids, self.token_strings(ids), offsets)

    def truncated(self, text: str) -> bool:
        """Whether :meth:`encode` cut ``text`` at ``max_len``."""
        return bool(native(lambda: self._hf.encode(text), "tokenizing").overflowing) if text.strip() else False

    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str:
        """Text of ``ids`` (special tokens dropped when ``skip_special``)."""
        return self._hf.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """One display string per id: the token's text, or ``<0xF0><0x9F>``-style bytes for a piece
        of a character that byte-level BPE split across tokens."""
        out = []
        for i in ids:
            token = self._hf.id_to_token(int(i))
            if token is None:
                raise ValueError(f"token id {int(i)} out of range [0, {self.vocab_size})")
            if self.kind in ("gguf-bpe", "bpe") and token not in self._specials:
                token = _readable(token)
            out.append(token)
        return out

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids of the special (control) tokens."""
        return frozenset(self._special_ids)

    def token_id(self, token: str) -> int | None:
        """The id of ``token`` (e.g. ``"[PAD]"``), or None."""
        return self._hf.token_to_id(token)

    @property
    def unk_id(self) -> int | None:
        """The id unknown pieces become (the tokenizer model's unknown token), or None (byte-level BPE has none)."""
        token = getattr(self._hf.model, "unk_token", None)
        return self.token_id(token) if isinstance(token, str) else None

    def first_id(self, *tokens: str) -> int | None:
        """The id of the first of ``tokens`` the vocabulary has (``"[MASK]"``, ``"<mask>"``, …), or None."""
        return next((i for t in tokens if (i := self.token_id(t)) is not None), None)

    @property
    def vocab_size(self) -> int:
        return self._hf.get_vocab_size()

    # ------------------------------------------------------------------ serialisation
    def to_json(self) -> str:
        """JSON for a cache file: the HF tokenizer plus this wrapper's settings."""
        return json.dumps({"kind": self.kind, "max_len": self.max_len, "bos_id": self.bos_id,
                           "hf": json.loads(self._hf.to_str())}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> PretrainedTokenizer:
        """The tokenizer :meth:`to_json` wrote (checked as untrusted: it comes from a cache file).

        Raises:
            ValueError: malformed, refused by the check or by the tokenizers library (one line).
        """
        data = json.loads(text)
        check_tokenizer_spec(data["hf"])
        hf = native(lambda: _HFTokenizer.from_str(json.dumps(data["hf"])), "reading a cached tokenizer")
        return cls(hf, kind=data["kind"], max_len=int(data["max_len"]), bos_id=data["bos_id"])

    def __repr__(self) -> str:
        return f"PretrainedTokenizer(kind={self.kind!r}, vocab_size={self.vocab_size})"
