"""Reference checks of the decoder families against Hugging Face ``transformers`` (test-only dependency).

Each test builds a tiny random model of a family with ``transformers``, redraws its weights so the
maps are far from uniform, saves it as a folder (config.json + model.safetensors + a byte-level
BPE tokenizer.json built with ``tokenizers``) and compares what ``core.load_pretrained`` opens
with the reference's eager forward (``output_attentions=True``): token ids, every layer's maps,
the logits and a greedy continuation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from core import load_pretrained
from core.generate.decode import greedy

transformers = pytest.importorskip("transformers")

SPECIALS = ["<pad>", "<s>", "</s>"]  # ids 0, 1, 2
PAD, BOS, EOS = 0, 1, 2
VOCAB = 320
CORPUS = ["the animal didn't cross the street because it was too tired",
          "attention is all you need, said the paper in 2017",
          "a head that looks back at the previous token is an induction head"] * 4
TEXT = "the animal didn't cross the street because it was tired"


def byte_bpe(add_bos: bool) -> Tokenizer:
    """A byte-level BPE tokenizer trained on :data:`CORPUS` (at most :data:`VOCAB` tokens); ``<s>`` first if asked."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    if add_bos:
        tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", BOS)])
    return tokenizer


def reference_model(config, seed: int = 0, std: float = 0.15):
    """The causal LM of ``config`` with eager attention, weights redrawn from N(0, std²) (norm gains
    around 1) so that every head attends somewhere in particular."""
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            noise = torch.randn(param.shape, generator=generator) * std
            is_gain = param.dim() == 1 and name.endswith("weight") and ("norm" in name or ".ln_" in name)
            param.copy_(noise + (0.0 if is_gain and config.model_type.startswith("gemma") else 1.0) if is_gain else noise)
    return model.eval()


def save_folder(model, folder: Path, add_bos: bool, max_shard_size: str = "5GB") -> Path:
    """``model`` saved as a Hugging Face folder with safetensors weights (sharded past ``max_shard_size``)
    and a tokenizer.json."""
    model.save_pretrained(folder, max_shard_size=max_shard_size)
    byte_bpe(add_bos).save(str(folder / "tokenizer.json"))
    return folder


@dataclass
class Comparison:
    """The largest differences between our model and the reference on :data:`TEXT`."""

    ids_equal: bool
    map_error: float
    logit_error: float
    logit_scale: float
    ours_continuation: list[int]
    reference_continuation: list[int]


def compare(folder: Path, reference, text: str = TEXT, steps: int = 8) -> Comparison:
    """Open ``folder`` with :func:`core.load_pretrained` and compare it with ``reference`` on ``text``."""
    loaded = load_pretrained(folder)
    hf_tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    ids = loaded.tokenizer.encode(text).ids
    reference_ids = hf_tokenizer(text)["input_ids"]
    tgt = torch.tensor([reference_ids])  # (1, T)
    with torch.no_grad():
        ours = loaded.model(None, tgt, return_attention=True)
        theirs = reference(tgt, output_attentions=True)
    maps = ours.attention["decoder"]  # (L, 1, H, T, T)
    assert maps.shape[0] == len(theirs.attentions)
    map_error = max(float((maps[i] - a).abs().max()) for i, a in enumerate(theirs.attentions))
    logit_error = float((ours.logits - theirs.logits).abs().max())
    eos = loaded.model.config.eos_id
    ours_gen = greedy(loaded.model, None, tgt, eos_id=eos, max_new_tokens=steps).ids[0].tolist()
    with torch.no_grad():
        theirs_gen = reference.generate(tgt, attention_mask=torch.ones_like(tgt), do_sample=False,
                                        max_new_tokens=steps, eos_token_id=eos, pad_token_id=PAD)[0].tolist()
    return Comparison(ids == reference_ids, map_error, logit_error, float(theirs.logits.abs().max()),
                      ours_gen, theirs_gen)
