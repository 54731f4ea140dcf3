"""Character-, word- and BPE-level tokenizers for Attnscope.

A thin layer over Hugging Face ``tokenizers`` (not ``transformers``). Every tokenizer reserves the
ids ``<pad>``=0, ``<bos>``=1, ``<eos>``=2, ``<unk>``=3.

Design rules (see ``tests/unit/test_tokenizer.py``):

* No normalisation: offsets are code-point indices into the *original* text and ``text[s:e]`` is
  the token's text. Unknown characters/words become a visible ``<unk>`` token whose offsets point
  at the original characters; nothing that is not whitespace is ever dropped.
* The special tokens live only in the model vocabulary, never as HF "added tokens", so a user
  typing ``<pad>`` gets plain characters/words, not id 0. The pre-tokenizers also split ``<``/``>``
  from letters, so no learned merge or word can ever spell a special token.
* Kinds:
    - ``char``: every character (whitespace included) is a token; decode concatenates.
    - ``word``: HF ``Whitespace`` pre-tokenizer (``\\w+|[^\\w\\s]+``); decode joins tokens with
      single spaces (original spacing is not recoverable); it may spell unknown words (:mod:`core.text.spelling`).
    - ``bpe``: HF ``BPE`` (not byte-level) over ``Metaspace(prepend_scheme="never")`` + isolated
      punctuation; spaces become ``▁`` inside tokens and decode restores them (a literal ``▁``
      typed by the user decodes as a space).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tokenizers import Regex, decoders, models, pre_tokenizers, trainers
from tokenizers import Tokenizer as _HFTokenizer

from core.config import BOS_ID as OWN_BOS_ID, LIMITS
from core.text.spelling import SPELL_ALPHABET, join_words, spell_unknown, spelling_pieces
from core.text.validation import check_text
from core.text.tokenizer_check import check_tokenizer_spec, native

__all__ = ["SPECIAL_TOKENS", "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID", "KINDS", "Encoding", "Tokenizer"]

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, OWN_BOS_ID, 2, 3
KINDS = ("char", "word", "bpe")
DEFAULT_BPE_VOCAB_SIZE = 1000
_FORMAT = "attnscope-tokenizer"
_VERSION = 1
_METASPACE = "\u2581"  # "▁", the HF Metaspace replacement character
MAX_VOCAB_SIZE = int(LIMITS["tgt_vocab_size"][1])  # no embedding may have more rows (core.config)


@dataclass(frozen=True)
class Encoding:
    """Result of :meth:`Tokenizer.encode`.

    ``tokens[i]`` is the display string of token ``i`` (``"<unk>"`` for unknown
    input, otherwise exactly ``text[offsets[i][0]:offsets[i][1]]``); added
    ``<bos>``/``<eos>`` have offsets ``(0, 0)``.
    """

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]

    def __len__(self) -> int:
        return len(self.ids)


def _pre_tokenizer(kind: str) -> pre_tokenizers.PreTokenizer:
    if kind == "char":  # [\s\S] matches any character, newline included
        return pre_tokenizers.Split(Regex(r"[\s\S]"), "isolated")
    if kind == "word":
        return pre_tokenizers.Whitespace()
    return pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(prepend_scheme="never"), pre_tokenizers.Punctuation("isolated")]
    )


def _count_pieces(kind: str, texts: list[str]) -> Counter[str]:
    pre = _pre_tokenizer(kind)
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(piece for piece, _ in pre.pre_tokenize_str(text))
    return counts


class Tokenizer:
    """A trained tokenizer of kind ``"char"``, ``"word"`` or ``"bpe"``."""

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, kind: str, hf: _HFTokenizer, spell: str = "") -> None:
        """Wrap an HF tokenizer; prefer :meth:`train` or :meth:`from_json`. ``spell``: the alphabet a
        ``word`` tokenizer spells unknown words in (its pieces must be in the vocabulary), or ``""``."""
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r}; expected one of {KINDS}")
        if hf.get_vocab_size() > MAX_VOCAB_SIZE:
            raise ValueError(f"vocabulary of {hf.get_vocab_size():,} tokens exceeds {MAX_VOCAB_SIZE:,}")
        for i, special in enumerate(SPECIAL_TOKENS):
            if hf.token_to_id(special) != i:
                raise ValueError(f"special token {special!r} must have id {i}")
        if hf.get_added_tokens_decoder():
            raise ValueError("HF added tokens are not allowed (they would match user text)")
        expected = models.BPE if kind == "bpe" else models.WordLevel
        if not isinstance(hf.model, expected) or (kind == "bpe" and hf.decoder is None):
            raise ValueError(f"HF tokenizer does not match kind {kind!r}")
        if spell and (kind != "word" or any(hf.token_to_id(p) is None for p in spelling_pieces(spell, ()))):
            raise ValueError("a spelling alphabet needs a word tokenizer holding every spelled piece")
        hf.no_padding()  # padding/truncation would add or silently drop tokens
        hf.no_truncation()
        self.kind, self.spell = kind, spell
        self._hf = hf
        self._id_to_token = [hf.id_to_token(i) for i in range(hf.get_vocab_size())]
        if any(t is None for t in self._id_to_token):
            raise ValueError("tokenizer vocabulary ids are not contiguous")

    @classmethod
    def train(
        cls, kind: str, texts: Iterable[str], *, vocab_size: int | None = None, min_frequency: int = 1,
        spelled: Callable[[str], bool] | None = None,
    ) -> Tokenizer:
        """Train a tokenizer of ``kind`` on ``texts`` (deterministic).

        ``vocab_size`` is only used by ``bpe`` (default 1000; the vocabulary is
        never smaller than specials + alphabet). Pieces seen fewer than
        ``min_frequency`` times are left out (for bpe: merges). Raises
        ``ValueError`` for an unknown kind or a corpus with no non-whitespace text. ``spelled`` (word
        kind): the words kept out of the vocabulary and spelled in ``SPELL_ALPHABET`` (names, numbers).
        """
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r}; expected one of {KINDS}")
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of str, not a single str")
        corpus = [check_text(t, "training text") for t in texts]
        if not any(t.strip() for t in corpus):
            raise ValueError("cannot train a tokenizer on an empty corpus")
        if min_frequency < 1:
            raise ValueError("min_frequency must be >= 1")

        if kind == "bpe":
            size = DEFAULT_BPE_VOCAB_SIZE if vocab_size is None else int(vocab_size)
            if size <= len(SPECIAL_TOKENS):
                raise ValueError(f"vocab_size must be > {len(SPECIAL_TOKENS)}, got {size}")
            hf = _HFTokenizer(models.BPE(unk_token="<unk>"))
            hf.pre_tokenizer = _pre_tokenizer(kind)
            hf.decoder = decoders.Metaspace(prepend_scheme="never")
            trainer = trainers.BpeTrainer(vocab_size=size, min_frequency=min_frequency,
                                          special_tokens=list(SPECIAL_TOKENS), show_progress=False)
            hf.train_from_iterator(corpus, trainer)
            # The trainer registers the specials as HF "added tokens", which
            # HF then matches literally in user input: strip them again.
            spec = json.loads(hf.to_str())
            spec["added_tokens"] = []
            return cls(kind, _HFTokenizer.from_str(json.dumps(spec)))

        counts = _count_pieces(kind, corpus)
        pieces = [p for p, c in counts.items() if c >= min_frequency and p not in SPECIAL_TOKENS
                  and not (spelled and spelled(p))]
        pieces.sort(key=None if kind == "char" else lambda p: (-counts[p], p))
        if not pieces:
            raise ValueError(f"no token reaches min_frequency={min_frequency}")
        return cls.from_vocab(kind, pieces, spell=SPELL_ALPHABET if spelled and kind == "word" else "")

    @classmethod
    def from_vocab(cls, kind: str, pieces: Sequence[str], spell: str = "") -> Tokenizer:
        """A ``char``/``word`` tokenizer: the four specials, then ``pieces`` (``ValueError`` on a repeat),
        then, with a spelling alphabet, its pieces (:func:`core.text.spelling.spelling_pieces`)."""
        if kind not in ("char", "word"):
            raise ValueError(f"a tokenizer from a vocabulary is of kind 'char' or 'word', not {kind!r}")
        pieces = [*pieces, *spelling_pieces(spell, pieces)] if spell else pieces
        vocab = {tok: i for i, tok in enumerate((*SPECIAL_TOKENS, *pieces))}
        if len(vocab) != len(SPECIAL_TOKENS) + len(pieces):
            raise ValueError("the vocabulary lists a token twice")
        hf = _HFTokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        hf.pre_tokenizer = _pre_tokenizer(kind)
        if kind == "char":
            hf.decoder = decoders.Fuse()
        return cls(kind, hf, spell)

    def encode(self, text: str, *, add_bos: bool = False, add_eos: bool = False) -> Encoding:
        """Encode ``text``; empty or whitespace-only text gives an empty Encoding.

        The empty Encoding has no ``<bos>``/``<eos>`` even if requested, so callers
        can reject such input by checking ``len(encoding.ids) == 0``. Raises
        ``ValueError`` for text containing lone surrogates.
        """
        check_text(text)
        if not text.strip():
            return Encoding([], [], [])
        enc = native(lambda: self._hf.encode(text, add_special_tokens=False), "tokenizing")
        ids = list(enc.ids)
        offsets = [(int(s), int(e)) for s, e in enc.offsets]
        if self.spell and UNK_ID in ids:
            ids, offsets = spell_unknown(text, ids, offsets, self.spell, UNK_ID, self._hf.token_to_id)
        tokens = [
            SPECIAL_TOKENS[UNK_ID] if i == UNK_ID else text[s:e] for i, (s, e) in zip(ids, offsets)
        ]
        if add_bos:
            ids, tokens, offsets = [BOS_ID, *ids], [SPECIAL_TOKENS[BOS_ID], *tokens], [(0, 0), *offsets]
        if add_eos:
            ids, tokens, offsets = [*ids, EOS_ID], [*tokens, SPECIAL_TOKENS[EOS_ID]], [*offsets, (0, 0)]
        return Encoding(ids, tokens, offsets)

    def _raw_tokens(self, ids: Sequence[int]) -> list[str]:
        out = []
        for i in ids:
            i = int(i)  # accepts numpy / torch integer scalars
            if not 0 <= i < len(self._id_to_token):
                raise ValueError(f"token id {i} out of range [0, {len(self._id_to_token)})")
            out.append(self._id_to_token[i])
        return out

    def decode(self, ids: Sequence[int], *, skip_special: bool = True) -> str:
        """Turn ids back into text.

        ``skip_special`` drops ``<pad>``/``<bos>``/``<eos>``; ``<unk>`` is always
        kept (shown as ``"<unk>"``) so unknown input stays visible. char: tokens
        concatenated; word: joined with single spaces; bpe: HF Metaspace decoder.
        """
        if skip_special:
            ids = [i for i in ids if int(i) not in (PAD_ID, BOS_ID, EOS_ID)]
        tokens = self._raw_tokens(ids)
        if self.kind == "char":
            return "".join(tokens)
        if self.kind == "word":
            return join_words(tokens) if self.spell else " ".join(tokens)
        return self._hf.decoder.decode(tokens) if tokens else ""

    def token_strings(self, ids: Sequence[int]) -> list[str]:
        """Display strings for ``ids`` (bpe ``▁`` shown as a space), for labelling output."""
        tokens = self._raw_tokens(ids)
        if self.kind == "bpe":
            tokens = [t if t in SPECIAL_TOKENS else t.replace(_METASPACE, " ") for t in tokens]
        return tokens

    @property
    def vocab_size(self) -> int:
        """Number of ids, specials included."""
        return len(self._id_to_token)

    def truncated(self, text: str) -> bool:
        """Whether :meth:`encode` cut ``text``: never (the caller truncates to the model's limit)."""
        return False

    def to_json(self) -> str:
        """Self-describing JSON: format tag, version, kind and the HF tokenizer JSON."""
        spell = {"spell": self.spell} if self.spell else {}
        return json.dumps(
            {"format": _FORMAT, "version": _VERSION, "kind": self.kind, **spell, "hf": json.loads(self._hf.to_str())},
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, s: str) -> Tokenizer:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on any malformed input."""
        if isinstance(s, (bytes, bytearray)):
            s = s.decode("utf-8", errors="strict")
        if not isinstance(s, str):
            raise ValueError(f"tokenizer JSON must be str, got {type(s).__name__}")
        try:
            data = json.loads(s)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge ints, nesting
            raise ValueError(f"tokenizer JSON is malformed or truncated: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"not an Attnscope tokenizer (expected format {_FORMAT!r})")
        if data.get("version") != _VERSION:
            raise ValueError(f"unsupported tokenizer version {data.get('version')!r}")
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown tokenizer kind {kind!r}; expected one of {KINDS}")
        if not isinstance(data.get("hf"), dict):
            raise ValueError("tokenizer JSON lacks the 'hf' tokenizer object")
        check_tokenizer_spec(data["hf"])  # a checkpoint's tokenizer may come from an upload: untrusted
        hf = native(lambda: _HFTokenizer.from_str(json.dumps(data["hf"])), "reading the tokenizer spec")
        try:
            return cls(kind, hf, str(data.get("spell", "")))
        except ValueError as exc:
            raise ValueError(f"invalid tokenizer: {exc}") from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Read a tokenizer written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Tokenizer(kind={self.kind!r}, vocab_size={self.vocab_size})"
