"""Every Hugging Face folder family Attnscope reads, as a tiny random model saved by ``transformers`` (test-only).

:data:`FAMILIES` maps each ``model_type`` to (a builder of the model or its config, its config.json keys of
layers, heads and width); :func:`save_family` saves one folder (config.json and model.safetensors), with a
word-level ``tokenizer.json`` every family's reader accepts when ``tokenizer`` is set.
"""

from __future__ import annotations

from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

#: The specials every family's reader looks for, then words: 40 tokens, the tiny models' vocabulary.
TOKENS = ["<pad>", "</s>", "<s>", "<unk>", "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<mask>",
          *"the cat sat on a mat and dog ran to house green red big small one two three bird sees tree under over "
          "runs fast slow sun moon star sky sea".split()][:40]

_ENC = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=66)
_DEC = dict(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64, bos_token_id=1, eos_token_id=2, pad_token_id=0)
_S2S = dict(vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
            pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
_BERT_KEYS = ("num_hidden_layers", "num_attention_heads", "hidden_size")

#: model_type → (the model, its config.json keys of layers, heads and width).
FAMILIES = {
    "bert": (lambda: transformers.BertModel(transformers.BertConfig(**_ENC)), _BERT_KEYS),
    "roberta": (lambda: transformers.RobertaModel(transformers.RobertaConfig(**_ENC, pad_token_id=1)), _BERT_KEYS),
    "xlm-roberta": (lambda: transformers.XLMRobertaModel(transformers.XLMRobertaConfig(**_ENC, pad_token_id=1)),
                    _BERT_KEYS),
    "electra": (lambda: transformers.ElectraModel(transformers.ElectraConfig(**_ENC, embedding_size=16)), _BERT_KEYS),
    "distilbert": (lambda: transformers.DistilBertModel(transformers.DistilBertConfig(
        vocab_size=40, dim=32, n_layers=2, n_heads=4, hidden_dim=64)), ("n_layers", "n_heads", "dim")),
    "albert": (lambda: transformers.AlbertModel(transformers.AlbertConfig(**_ENC, embedding_size=16)),
               ("num_hidden_groups", "num_attention_heads", "hidden_size")),
    "llama": (lambda: transformers.LlamaConfig(**_DEC, num_key_value_heads=2), _BERT_KEYS),
    "mistral": (lambda: transformers.MistralConfig(**_DEC, num_key_value_heads=2, sliding_window=4), _BERT_KEYS),
    "qwen2": (lambda: transformers.Qwen2Config(**_DEC, num_key_value_heads=2), _BERT_KEYS),
    "qwen3": (lambda: transformers.Qwen3Config(**_DEC, num_key_value_heads=2, head_dim=16), _BERT_KEYS),
    "gemma": (lambda: transformers.GemmaConfig(**_DEC, num_key_value_heads=1, head_dim=16), _BERT_KEYS),
    "gpt2": (lambda: transformers.GPT2Config(vocab_size=40, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                                     bos_token_id=2, eos_token_id=2),
             ("n_layer", "n_head", "n_embd")),
    "gpt_neox": (lambda: transformers.GPTNeoXConfig(**_DEC, rotary_pct=0.5), _BERT_KEYS),
    "opt": (lambda: transformers.OPTConfig(**{k: v for k, v in _DEC.items() if k != "intermediate_size"},
                                           ffn_dim=64, word_embed_proj_dim=32), _BERT_KEYS),
    "phi": (lambda: transformers.PhiConfig(**_DEC, partial_rotary_factor=0.5), _BERT_KEYS),
    "gemma2": (lambda: transformers.Gemma2Config(**_DEC, num_key_value_heads=2, head_dim=8, sliding_window=4),
               _BERT_KEYS),
    "gemma3_text": (lambda: transformers.Gemma3TextConfig(**_DEC, num_key_value_heads=2, head_dim=8, sliding_window=4,
                                                          sliding_window_pattern=2), _BERT_KEYS),
    "phi3": (lambda: transformers.Phi3Config(**_DEC, num_key_value_heads=2, partial_rotary_factor=0.5), _BERT_KEYS),
    "mpnet": (lambda: transformers.MPNetModel(transformers.MPNetConfig(**_ENC)), _BERT_KEYS),
    "deberta-v2": (lambda: transformers.DebertaV2Model(transformers.DebertaV2Config(
        **_ENC, relative_attention=True, position_buckets=8, pos_att_type=["p2c", "c2p"], share_att_key=True,
        norm_rel_ebd="layer_norm", position_biased_input=False)), _BERT_KEYS),
    "modernbert": (lambda: transformers.ModernBertModel(transformers.ModernBertConfig(
        **_ENC, pad_token_id=0, bos_token_id=2, eos_token_id=1, cls_token_id=2, sep_token_id=1, local_attention=4)),
                   _BERT_KEYS),
    "bart": (lambda: transformers.BartForConditionalGeneration(transformers.BartConfig(**_S2S)),
             ("encoder_layers", "encoder_attention_heads", "d_model")),
    "mbart": (lambda: transformers.MBartForConditionalGeneration(transformers.MBartConfig(**_S2S)),
              ("decoder_layers", "decoder_attention_heads", "d_model")),
    "marian": (lambda: transformers.MarianMTModel(transformers.MarianConfig(**_S2S)),
               ("encoder_layers", "encoder_attention_heads", "d_model")),
    "t5": (lambda: transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=40, d_model=16, d_kv=6, d_ff=32, num_layers=2, num_heads=3, relative_attention_num_buckets=8,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)), ("num_decoder_layers", "num_heads", "d_model")),
}



def save_family(family: str, folder: Path, tokenizer: bool = False, seed: int = 0) -> Path:
    """``family``'s tiny random model saved in ``folder`` (with :data:`TOKENS` as a ``tokenizer.json`` when
    ``tokenizer``)."""
    torch.manual_seed(seed)
    made = FAMILIES[family][0]()
    model = transformers.AutoModelForCausalLM.from_config(made) if isinstance(made, transformers.PretrainedConfig) \
        else made
    model.save_pretrained(folder, safe_serialization=True)
    if tokenizer:
        words = Tokenizer(models.WordLevel({t: i for i, t in enumerate(TOKENS)}, unk_token="<unk>"))
        words.pre_tokenizer = pre_tokenizers.Whitespace()
        words.add_special_tokens(TOKENS[:10])
        words.save(str(folder / "tokenizer.json"))
    return folder
