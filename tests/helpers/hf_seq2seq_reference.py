"""Tiny random Marian, BART/mBART and T5 folders saved by Hugging Face ``transformers`` (test-only).

Each builder returns (folder, reference model in eager attention, reference tokenizer). Weights are
redrawn wider than the library's init so that attention is far from uniform, and the final logits
bias is random so that it is tested. Tokenizers are built with ``tokenizers`` (word level, a
``tokenizer.json``), or Marian's real layout: ``source.spm``/``target.spm`` trained with
``sentencepiece`` and one ``vocab.json``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, processors

WORDS = ("the cat sat on a mat and dog ran to house green red big small one two three "
         "bird sees tree under over runs fast slow").split()
CORPUS = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] + [
    "the quick cat jumps over the lazy dog", "a small bird sings in the green tree"]


def word_tokenizer(specials: list[str], eos: str, prefix: str | None) -> Tokenizer:
    """Word-level tokenizer: ``specials`` first, then :data:`WORDS`; ``[prefix] $A eos`` template."""
    vocab = {t: i for i, t in enumerate([*specials, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    single = f"{prefix} $A {eos}" if prefix else f"$A {eos}"
    specials_used = [(t, vocab[t]) for t in (prefix, eos) if t]
    tok.post_processor = processors.TemplateProcessing(single=single, special_tokens=specials_used)
    tok.add_special_tokens(specials)
    return tok


def randomize(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Redraw every weight N(0, 0.3²), biases and norms near their init, in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:  # Marian's fixed sinusoid table
                continue
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(noise * 0.3 if p.dim() > 1 else p + noise * 0.1)
        for name, b in model.named_buffers():
            if "final_logits_bias" in name:
                b.copy_(torch.randn(b.shape, generator=gen) * 0.5)
    return model.eval()


def _save(model, tokenizer: Tokenizer | None, folder: Path) -> Path:
    model.save_pretrained(folder, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save(str(folder / "tokenizer.json"))
    return folder


SIZES = dict(d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)


def bart(folder: Path, kind: str = "bart", seed: int = 0):
    """A BART (post-norm) or mBART (pre-norm) folder; mBART forces ``<s>`` as the first output token."""
    tok = word_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], "</s>", "<s>")
    cls = {"bart": (transformers.BartConfig, transformers.BartForConditionalGeneration),
           "mbart": (transformers.MBartConfig, transformers.MBartForConditionalGeneration)}[kind]
    forced = {"forced_bos_token_id": 0} if kind == "mbart" else {}
    config = cls[0](vocab_size=tok.get_vocab_size(), pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2,
                    scale_embedding=kind == "mbart", attn_implementation="eager", **forced, **SIZES)
    torch.manual_seed(seed)
    model = randomize(cls[1](config), seed)
    model.generation_config.forced_bos_token_id = forced.get("forced_bos_token_id")
    return _save(model, tok, folder), model, tok


def t5(folder: Path, gated: bool = False, seed: int = 0, unused_rows: int = 0):
    """A T5 folder: t5-small's ReLU (tied head, scaled by D^-0.5) or v1.1's gated GELU; ``unused_rows``
    embedding rows past the tokenizer's vocabulary, as real T5 checkpoints have."""
    tok = word_tokenizer(["<pad>", "</s>", "<unk>"], "</s>", None)
    config = transformers.T5Config(vocab_size=tok.get_vocab_size() + unused_rows, d_model=16, d_kv=6, d_ff=32, num_layers=2, num_decoder_layers=2,
                                   num_heads=3, relative_attention_num_buckets=8, relative_attention_max_distance=20,
                                   feed_forward_proj="gated-gelu" if gated else "relu", pad_token_id=0,
                                   eos_token_id=1, decoder_start_token_id=0, attn_implementation="eager")
    torch.manual_seed(seed)
    model = randomize(transformers.T5ForConditionalGeneration(config), seed)
    return _save(model, tok, folder), model, tok


def _spm(sentences: list[str], vocab_size: int) -> bytes:
    import sentencepiece as spm
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=out, vocab_size=vocab_size,
                                   model_type="unigram", minloglevel=2, hard_vocab_limit=False)
    return out.getvalue()


def marian(folder: Path, spm_files: bool = True, seed: int = 0, languages: tuple[str, ...] = ()):
    """A Marian folder (pad = decoder start, banned via ``bad_words_ids``, scaled embeddings, ``</s>`` forced
    when the budget runs out); tokenizer: ``source.spm`` + ``target.spm`` + ``vocab.json`` as opus-mt ships
    them (with the ``>>lang<<`` target-language tokens of a multilingual model, e.g. ``>>fra<<``), or a
    ``tokenizer.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    if spm_files:
        import sentencepiece as spm
        source, target = _spm(CORPUS, 40), _spm([s.upper() for s in CORPUS], 40)
        (folder / "source.spm").write_bytes(source)
        (folder / "target.spm").write_bytes(target)
        pieces = []
        for blob in (source, target):
            proc = spm.SentencePieceProcessor(model_proto=blob)
            pieces += [proc.id_to_piece(i) for i in range(proc.get_piece_size())]
        ordered = ["</s>", "<unk>", *languages] + sorted({p for p in pieces if p not in ("</s>", "<unk>", "<s>")})
        vocab = {p: i for i, p in enumerate(ordered + ["<pad>"])}
        (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        tok, size = None, len(vocab)
    else:
        tok = word_tokenizer(["</s>", "<unk>", "<pad>"], "</s>", None)
        vocab, size = tok.get_vocab(), tok.get_vocab_size()
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(vocab_size=size, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
                                       forced_eos_token_id=0, bad_words_ids=[[pad]], scale_embedding=True,
                                       attn_implementation="eager", **SIZES)
    torch.manual_seed(seed)
    model = randomize(transformers.MarianMTModel(config), seed)
    model.generation_config.bad_words_ids = [[pad]]  # transformers 5 keeps it only in the generation config
    model.generation_config.forced_eos_token_id = 0
    _save(model, tok, folder)
    if spm_files:
        reference = transformers.MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"),
                                                 str(folder / "vocab.json"))
        return folder, model, reference
    return folder, model, tok
