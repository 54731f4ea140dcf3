"""The reference library in the tests: tiny random ``transformers`` models saved as Hugging Face folders.

``transformers`` is a test-only dependency (requirements-dev.txt). These helpers build a folder the
way a researcher's would look (``save_pretrained(safe_serialization=True)`` plus a ``tokenizer.json``
built with ``tokenizers``), run the reference's eager forward with ``output_attentions=True``, and
compare it with ours: token ids exactly, every layer's maps to 1e-5, logits to 1e-4 × their scale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from core import load_pretrained
from core.io.pretrained.load import PretrainedModel

REF_WORDS = ["the", "animal", "street", "it", "was", "tired", "cross", "because", "didn", "'", "t", ".", "##s",
             "a", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", ","]
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # pad 0, cls 2, sep 3
ROBERTA_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # pad 1, as RoBERTa's vocabulary has it
REF_TEXTS = ("The animal didn't cross the street because it was tired.", "a cat sat on the mat")


def ref_wordpiece(specials: Sequence[str] = BERT_SPECIALS, words: Sequence[str] = REF_WORDS) -> Tokenizer:
    """A lower-casing WordPiece tokenizer: ``specials`` first (pad, unk, cls, sep, mask in BERT's
    order, or RoBERTa's ``<s> <pad> </s> <unk> <mask>``), then ``words``; template ``CLS $A SEP``."""
    vocab = {token: i for i, token in enumerate([*specials, *words])}
    unk = next(s for s in specials if "unk" in s.lower())
    cls, sep = (("[CLS]", "[SEP]") if "[CLS]" in specials else ("<s>", "</s>"))
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token=unk))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    tokenizer.add_special_tokens(list(specials))
    return tokenizer


def randomize(model: torch.nn.Module, seed: int = 0, std: float = 0.3) -> torch.nn.Module:
    """Every parameter drawn from N(0, std²) (LayerNorm scales around 1), so maps are far from uniform."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator) * std
            param.copy_(1.0 + noise / 3 if "LayerNorm.weight" in name or "layer_norm.weight" in name
                        or "norm.weight" in name else noise)
    return model.eval()


def save_ref_folder(model, folder: Path, tokenizer: Tokenizer, **save_options) -> Path:
    """``model.save_pretrained`` (safetensors) plus ``tokenizer.json`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True, **save_options)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


def ref_batch(pretrained: PretrainedModel, folder: Path, texts: Sequence[str] = REF_TEXTS
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Our ids (B, T), right-padded with the model's pad id, and the real-token mask (B, T).

    Asserts that every row's ids equal the reference tokenizer's (``PreTrainedTokenizerFast``).
    """
    from transformers import PreTrainedTokenizerFast

    reference = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    rows = [pretrained.tokenizer.encode(t).ids for t in texts]
    for text, row in zip(texts, rows):
        assert row == reference(text)["input_ids"], text
    width, pad = max(map(len, rows)), pretrained.config.pad_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])  # (B, T)
    return ids, ids != pad


def ref_forward(model, ids: torch.Tensor, real: torch.Tensor):
    """The reference's eager forward with every map (``output_attentions=True``)."""
    model.set_attn_implementation("eager")
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=real.long(), output_attentions=True)


def assert_close_scaled(ours: torch.Tensor, theirs: torch.Tensor, tolerance: float = 1e-4) -> None:
    """``|ours - theirs| ≤ tolerance × max(1, max |theirs|)`` everywhere, shapes equal."""
    assert ours.shape == theirs.shape, (tuple(ours.shape), tuple(theirs.shape))
    scale = max(1.0, float(theirs.abs().max()))
    worst = float((ours.float() - theirs.float()).abs().max())
    assert worst <= tolerance * scale, f"max difference {worst:.3g} over {tolerance * scale:.3g}"


def assert_maps_equal(ours: torch.Tensor, theirs: Sequence[torch.Tensor], tolerance: float = 1e-5) -> None:
    """Our maps (L, B, H, T, T) equal the reference's per-layer tuple of (B, H, T, T) to ``tolerance``."""
    reference = torch.stack(list(theirs))  # (L, B, H, T, T)
    assert ours.shape == reference.shape, (tuple(ours.shape), tuple(reference.shape))
    worst = float((ours - reference).abs().max())
    assert worst <= tolerance, f"maps differ by {worst:.3g}"


def open_and_compare(model, folder: Path, tokenizer: Tokenizer, reference_logits: str = "logits") -> PretrainedModel:
    """Save ``model`` to ``folder``, open it with :func:`core.load_pretrained`, and assert ids, every
    map and the logits (``reference_logits``: the reference output's field to compare) agree."""
    save_ref_folder(model, folder, tokenizer)
    pretrained = load_pretrained(folder)
    ids, real = ref_batch(pretrained, folder)
    theirs = ref_forward(model, ids, real)
    with torch.no_grad():
        ours = pretrained.model(ids, return_attention=True, key_mask=real)
    assert_maps_equal(ours.attention["encoder"], theirs.attentions)
    expected = getattr(theirs, reference_logits)
    logits = ours.logits.squeeze(-1) if ours.logits.dim() == expected.dim() + 1 else ours.logits  # (B, T, 1) → (B, T)
    assert_close_scaled(logits, expected)
    return pretrained
