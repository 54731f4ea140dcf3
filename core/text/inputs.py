"""The user's text on its way to tokens: checked, cut to a size limit, normalised as the model's
task expects (with a note saying so), tokenized and truncated to the model's length, and unknown
words reported with the nearest words the model knows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.text.pretrained_tokenizer import PretrainedTokenizer
from core.text.tokenizer import SPECIAL_TOKENS, Encoding, Tokenizer
from core.tasks import TASKS, out_of_range
from core.tasks.base import nearest_known
from core.text.sequences import truncate
from core.text.spelling import CONTINUE

MAX_TEXT_CHARS = 100_000  # about 25,000 tokens: past the longest input any model is explained with
AnyTokenizer = Tokenizer | PretrainedTokenizer


@dataclass
class TextInput:
    """One input text as it is prepared: what was typed, what is tokenized, and notes for the user."""

    text: str  # as received
    work: str  # what is tokenized (at most MAX_TEXT_CHARS)
    notes: list[str]
    encoding: Encoding | None = None
    truncated: bool = False
    unknown: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (word, nearest known words)


def prepare(text: str) -> TextInput:
    """Check ``text`` and cut it to :data:`MAX_TEXT_CHARS`.

    Raises:
        ValueError: not a string, or empty / whitespace only.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("Type some text: the input is empty.")
    if len(text) > MAX_TEXT_CHARS:
        return TextInput(text, text[:MAX_TEXT_CHARS],
                      [f"Only the first {MAX_TEXT_CHARS:,} of {len(text):,} characters were read."], truncated=True)
    return TextInput(text, text, [])


#: The note of a lower-cased input (the app shows it in the reader's language where it knows this note).
LOWER_CASED = "The input was lower-cased: the model was trained on lower-case text."


def normalized(item: TextInput, task: str | None) -> TextInput:
    """Apply the task's input convention (e.g. lower case) and say so; offsets stay valid."""
    if task in TASKS:
        item.work, changed = TASKS[task].normalize_input(item.work)
        if changed:
            item.notes.append(LOWER_CASED)
    return item


HINT_VOCABULARY = 5_000  # nearest-word hints only for vocabularies this small (ours are word lists)


def _unknown_words(item: TextInput, tokenizer: AnyTokenizer) -> list[tuple[str, tuple[str, ...]]]:
    """The words the model reads as its unknown token, each with the nearest words it knows (for small,
    word-list vocabularies; none for a large subword vocabulary)."""
    unknown = tokenizer.unk_id
    words = sorted({item.work[s:e] for i, (s, e) in zip(item.encoding.ids, item.encoding.offsets) if i == unknown})
    if tokenizer.vocab_size > HINT_VOCABULARY:
        return [(word, ()) for word in words]
    vocabulary = [t for t in tokenizer.token_strings(range(tokenizer.vocab_size)) if t not in SPECIAL_TOKENS]
    return [(word, tuple(nearest_known(word, vocabulary)) if i < 5 else ()) for i, word in enumerate(words)]


def _unknown_note(item: TextInput, tokenizer: AnyTokenizer) -> str:
    """Which words the model does not know, with the nearest words it does know."""
    shown = tokenizer.token_strings([tokenizer.unk_id])[0]
    hints = [f"'{word}'" + (f" (did you mean {', '.join(repr(w) for w in near)}?)" if near else "")
             for word, near in item.unknown[:5]]
    more = f" and {len(item.unknown) - 5} more" if len(item.unknown) > 5 else ""
    return f"{len(item.unknown)} token(s) unknown to the model are shown as {shown}: {'; '.join(hints)}{more}."


def tokenize(item: TextInput, tokenizer: AnyTokenizer, limit: int, why: str = "the most this model is explained with"
             ) -> None:
    """Encode ``item`` with ``tokenizer`` (ours or a pretrained model's), truncated to ``limit`` tokens,
    noting what happened (``why``: what sets the limit, for the note).

    Raises:
        ValueError: the text has no tokens at all.
    """
    item.encoding, cut = truncate(tokenizer.encode(item.work), limit)
    cut = cut or tokenizer.truncated(item.work)
    item.truncated = item.truncated or cut
    if not item.encoding.ids:
        raise ValueError("The text has no recognisable tokens.")
    if cut:
        item.notes.append(f"The input was truncated to {limit} tokens, {why}.")
    if tokenizer.unk_id is not None and tokenizer.unk_id in item.encoding.ids:
        item.unknown = _unknown_words(item, tokenizer)
        item.notes.append(_unknown_note(item, tokenizer))
    spelled = spelled_words(item.work, item.encoding, tokenizer)
    if spelled:
        shown = ", ".join(f"'{word}'" for word in spelled[:5]) + (f" and {len(spelled) - 5} more" if len(spelled) > 5 else "")
        item.notes.append(f"Not in the model's vocabulary, read letter by letter and copied through as it was trained "
                          f"to copy names: {shown}. If that is not a name, the translation around it may be wrong.")


def spelled_words(text: str, encoding: Encoding, tokenizer: AnyTokenizer) -> list[str]:
    """The words of ``text`` (not numbers) that a spelling tokenizer read letter by letter ("maria")."""
    if not getattr(tokenizer, "spell", ""):
        return []
    strings = tokenizer.token_strings(encoding.ids)
    words: list[str] = []
    for i, (start, _) in enumerate(encoding.offsets):
        if strings[i].startswith(CONTINUE) or i + 1 == len(strings) or not strings[i + 1].startswith(CONTINUE):
            continue
        end = i + 1
        while end < len(strings) and strings[end].startswith(CONTINUE):
            end += 1
        word = text[start:encoding.offsets[end - 1][1]]
        if not word.isdigit():
            words.append(word)
    return words


def input_vocabulary(tokenizer: Tokenizer) -> tuple[str, ...]:
    """The tokens ``tokenizer`` knows, specials left out, in id order (what a user may type)."""
    return tuple(t for t in tokenizer.token_strings(range(tokenizer.vocab_size)) if t not in SPECIAL_TOKENS)


def _trained_lengths(task: str | None) -> tuple[int, int, str] | None:
    """(shortest, longest, unit) of the inputs the task's model was trained on, None when it does not vary."""
    lengths = TASKS[task].trained_lengths if task in TASKS else None
    if not lengths:
        return None
    return (*lengths, {"char": "characters", "word": "words"}.get(TASKS[task].tokenizer_kind, "tokens"))


def trained_lengths_note(task: str | None) -> str | None:
    """What the task's model was trained on, for a caption by the input (``None`` when the task does
    not vary its input length): ``trained_lengths_note("reverse")`` -> ``"Trained on inputs of 1–24
    characters."``."""
    trained = _trained_lengths(task)
    return None if trained is None else f"Trained on inputs of {trained[0]}–{trained[1]} {trained[2]}."


def length_note(item: TextInput, task: str | None) -> None:
    """Say so when an input is longer or shorter than anything the task's model was trained on."""
    trained = _trained_lengths(task)
    if trained and not trained[0] <= len(item.encoding.ids) <= trained[1]:
        item.notes.append(f"The model was trained on inputs of {trained[0]}–{trained[1]} {trained[2]}; this one "
                          f"has {len(item.encoding.ids)}, so expect mistakes (its positions were never trained).")


def range_note(item: TextInput, task: str | None) -> None:
    """Say so when an input lies outside the task's input domain (a date before 1900, an operand over 999)."""
    reason = out_of_range(task, item.work)
    if reason:
        item.notes.append(reason)
