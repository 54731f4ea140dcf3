"""Tiny random Whisper models saved by ``transformers`` as Hugging Face folders, with a Whisper-shaped tokenizer.

The tokenizer is a byte-level BPE trained on a few sentences, then Whisper's special tokens in Whisper's
order (``<|endoftext|>``, ``<|startoftranscript|>``, the language tokens, ``<|translate|>``,
``<|transcribe|>``, … ``<|notimestamps|>``); an English-only model has the same tokens, as Whisper's
``.en`` tokenizer does. ``generation_config.json`` says what openai's folders say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

transformers = pytest.importorskip("transformers")

LANGUAGES = ("en", "es", "fr")
SPECIALS = ("<|endoftext|>", "<|startoftranscript|>", *(f"<|{code}|>" for code in LANGUAGES), "<|translate|>",
            "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>")
CORPUS = ["the black cat sleeps", "i have two cats", "yo tengo gatos en mi casa", "hola"] * 4


def whisper_tokenizer(base: int = 256 + 40, specials: bool = True) -> Tokenizer:
    """Byte-level BPE of ``base`` tokens, then (unless ``specials`` is False) :data:`SPECIALS` (ids base,
    base + 1, …)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=base, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    assert tokenizer.get_vocab_size() == base
    if specials:
        tokenizer.add_special_tokens(list(SPECIALS))
    return tokenizer


def special_id(name: str, base: int = 256 + 40) -> int:
    return base + SPECIALS.index(name)


def reference_whisper(vocab: int, seed: int = 0, std: float = 0.15, **sizes):
    """``WhisperForConditionalGeneration`` (eager) of a tiny config, its weights redrawn (norm gains around 1)."""
    settings = dict(d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_source_positions=1500,
                    max_target_positions=32, num_mel_bins=80)
    settings.update(sizes)
    eot, sot = special_id("<|endoftext|>"), special_id("<|startoftranscript|>")
    config = transformers.WhisperConfig(vocab_size=vocab, pad_token_id=eot, bos_token_id=eot, eos_token_id=eot,
                                        decoder_start_token_id=sot, **settings)
    torch.manual_seed(seed)
    model = transformers.WhisperForConditionalGeneration(config)
    model.config._attn_implementation = "eager"
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator) * std
            param.copy_(noise + 1.0 if "layer_norm.weight" in name else noise)
    return model.eval()


def save_whisper(model, folder: Path, multilingual: bool | None, alignment: list[list[int]] | None = None,
                 suppress: list[int] | None = None) -> Path:
    """``model`` as a folder: config.json, model.safetensors, tokenizer.json and (unless ``multilingual`` is None)
    a generation_config.json as openai's say it."""
    model.save_pretrained(folder)
    whisper_tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "generation_config.json").unlink(missing_ok=True)
    if multilingual is not None:
        generation = {"is_multilingual": multilingual, "suppress_tokens": suppress or [],
                      "decoder_start_token_id": special_id("<|startoftranscript|>")}
        if alignment is not None:
            generation["alignment_heads"] = alignment
        if multilingual:
            generation["lang_to_id"] = {f"<|{code}|>": special_id(f"<|{code}|>") for code in LANGUAGES}
        (folder / "generation_config.json").write_text(json.dumps(generation))
    return folder
