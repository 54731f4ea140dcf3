"""The numbers behind the Learn pages: positional encodings, toy attention, masks and norms.

Pure functions (numpy/torch in, numpy/pandas out), no Streamlit, so every number a page
shows can be tested directly. Everything random takes an explicit seed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from core import (
    attention,
    attention_weights,
    combine_masks,
    padding_mask,
    sinusoidal_encoding,
    subsequent_mask,
)

# The worked example of the lecture notes: "I like to code", d_model 4, base 100.
WORKED_X = np.array([[0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.5], [0.3, 0.4, 0.5, 0.6], [0.4, 0.5, 0.6, 0.7]])
WORKED_WORDS = ("I", "like", "to", "code")
PAD = "<pad>"


def bounded(low: float, high: float, cast=int):
    """A share-link parser: ``cast(text)`` if it lies in [low, high], else ValueError (the link is ignored)."""
    def parse(text: str):
        try:
            value = cast(float(text))
        except OverflowError:  # int(float("inf"))
            raise ValueError(text) from None
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(text)
        return value
    return parse


def clipped_text(limit: int):
    """A share-link parser for text: at most ``limit`` characters, as the text widget allows."""
    return lambda text: str(text)[:limit]


def dim_names(d_model: int) -> list[str]:
    """Column names that say which dimensions are sines and which cosines: ``"0 (sin)"``."""
    return [f"{j} ({'sin' if j % 2 == 0 else 'cos'})" for j in range(d_model)]


# ----------------------------------------------------------------------------- positional encoding
def pe_table(length: int, d_model: int, base: float) -> np.ndarray:
    """``core.sinusoidal_encoding`` as float64 numpy (length, d_model)."""
    return sinusoidal_encoding(length, d_model, base).double().numpy()


def pe_frame(length: int, d_model: int, base: float) -> pd.DataFrame:
    """The encoding as a table: one row per position, one column per dimension."""
    return pd.DataFrame(pe_table(length, d_model, base), columns=dim_names(d_model),
                        index=pd.Index([f"pos {p}" for p in range(length)], name="position"))


def frequency(i: int, d_model: int, base: float) -> float:
    """ω_i = 1 / base^(2i/d_model), the angular speed of the pair (2i, 2i+1)."""
    return 1.0 / base ** (2 * i / d_model)


def pe_curves(d_model: int, base: float, dims: list[int], length: int, samples_per_pos: int = 8) -> pd.DataFrame:
    """Each chosen dimension as a smooth curve over (fractional) positions, plus the integer samples.

    Columns: position, dimension (label), value, at_token (True at integer positions).
    """
    pos = np.linspace(0, max(length - 1, 1), max(length - 1, 1) * samples_per_pos + 1)
    frames = []
    for j in dims:
        omega = frequency(j // 2, d_model, base)
        value = np.sin(pos * omega) if j % 2 == 0 else np.cos(pos * omega)
        frames.append(pd.DataFrame({
            "position": pos, "dimension": dim_names(d_model)[j], "value": value,
            "at_token": np.isclose(pos, np.round(pos)),
        }))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["position", "dimension", "value", "at_token"])


def rotation_matrix(k: int, i: int, d_model: int, base: float) -> np.ndarray:
    """The 2×2 matrix R_k that moves the pair (sin ω_i pos, cos ω_i pos) to position pos + k.

    sin(ω(p+k)) = cos(ωk)·sin(ωp) + sin(ωk)·cos(ωp)
    cos(ω(p+k)) = −sin(ωk)·sin(ωp) + cos(ωk)·cos(ωp)
    """
    angle = frequency(i, d_model, base) * k
    return np.array([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]])


def rotation_check(length: int, d_model: int, base: float, k: int, i: int) -> pd.DataFrame:
    """For every pos < length: the pair of PE(pos), R_k applied to it, and the pair of PE(pos + k)."""
    if not 0 <= 2 * i + 1 < d_model:
        raise ValueError(f"pair {i} needs dimensions {2 * i} and {2 * i + 1}, but d_model is {d_model}")
    pe = pe_table(length + k, d_model, base)
    pair = pe[:length, 2 * i: 2 * i + 2]  # (T, 2)
    rotated = pair @ rotation_matrix(k, i, d_model, base).T  # (T, 2): R · PE(pos) for every pos
    target = pe[k: k + length, 2 * i: 2 * i + 2]
    return pd.DataFrame({
        "pos": np.arange(length),
        f"PE(pos)[{2 * i}]": pair[:, 0], f"PE(pos)[{2 * i + 1}]": pair[:, 1],
        f"R·PE(pos)[{2 * i}]": rotated[:, 0], f"R·PE(pos)[{2 * i + 1}]": rotated[:, 1],
        f"PE(pos+{k})[{2 * i}]": target[:, 0], f"PE(pos+{k})[{2 * i + 1}]": target[:, 1],
        "max |difference|": np.abs(rotated - target).max(axis=1),
    })


def worked_example() -> dict[str, pd.DataFrame]:
    """The notes' 4 × 4 example with base 100: PE, the word embeddings x, and x + PE."""
    pe = pe_table(4, 4, 100.0)
    index = pd.Index([f"pos {p}: {w}" for p, w in enumerate(WORKED_WORDS)], name="token")
    cols = dim_names(4)
    return {
        "pe": pd.DataFrame(pe, columns=cols, index=index),
        "x": pd.DataFrame(WORKED_X, columns=[f"dim {j}" for j in range(4)], index=index),
        "x_plus_pe": pd.DataFrame(WORKED_X + pe, columns=cols, index=index),
    }


@dataclass(frozen=True)
class ModelEncoding:
    """What one checkpoint feeds its first layer for a short text."""

    tokens: list[str]
    embeddings: np.ndarray  # (T, D): embedding rows × √d_model
    positional: np.ndarray  # (T, D): what the positional module adds
    kind: str  # "sinusoidal" | "learned" | "none"
    table: str  # which embedding table was used
    notes: tuple[str, ...]

    @property
    def total(self) -> np.ndarray:
        return self.embeddings + self.positional


def model_encoding(checkpoint, text: str) -> ModelEncoding:
    """Token embeddings (√d_model-scaled), positional encodings and their sum for ``text``.

    Uses only the checkpoint's public parts: config, tokenizers and ``model.state_dict()``.

    Raises:
        ValueError: empty text or no recognisable tokens.
    """
    config = checkpoint.config
    if not text.strip():
        raise ValueError("type a short text first")
    if config.has_encoder:
        tokenizer, table = checkpoint.source_tokenizer, "src_embed.weight"
    else:
        tokenizer, table = checkpoint.target_tokenizer, "tgt_embed.weight"
    encoding = tokenizer.encode(text, add_bos=not config.has_encoder)  # a decoder starts from <bos>
    if not encoding.ids:
        raise ValueError("the text has no recognisable tokens")
    ids, tokens, notes = encoding.ids, list(encoding.tokens), []
    if len(ids) > config.max_len:
        notes.append(f"Only the first {config.max_len} tokens are shown (the model's max_len).")
        ids, tokens = ids[: config.max_len], tokens[: config.max_len]
    state = checkpoint.model.state_dict()
    weight = state[table].detach().float().cpu()
    embeddings = (weight[torch.tensor(ids)] * math.sqrt(config.d_model)).double().numpy()
    n = len(ids)
    if config.positional == "sinusoidal":
        positional = pe_table(n, config.d_model, config.pe_base)
    elif config.positional == "learned":
        positional = state["positional.table.weight"][:n].detach().double().cpu().numpy()
    else:
        positional = np.zeros_like(embeddings)
        notes.append("This model has no positional encoding: it adds nothing, so it sees the tokens as a set.")
    unknown = sum(t == "<unk>" for t in tokens)
    if unknown:
        notes.append(f"{unknown} token(s) are unknown to this model's tokenizer and shown as <unk>.")
    return ModelEncoding(tokens, embeddings, positional, config.positional, table, tuple(notes))


# ----------------------------------------------------------------------------- attention playground
def random_vectors(n: int, d: int, seed: int) -> np.ndarray:
    """(n, d) standard-normal vectors, rounded to 2 decimals so they are easy to read and edit."""
    return np.round(np.random.default_rng(seed).normal(size=(n, d)), 2)


def playground_weights(scores: np.ndarray, beta: float, hard: bool) -> np.ndarray:
    """Attention weights of one query's scores (Tk,), exactly as ``core.attention_weights``."""
    scores_t = torch.as_tensor(np.asarray(scores, dtype=np.float64)).float()[None, :]  # (1, Tk)
    return attention_weights(scores_t, temperature=beta, hard=hard)[0].double().numpy()


def saturation(dims: list[int], seed: int, n_keys: int = 8, trials: int = 256) -> pd.DataFrame:
    """How q·k and the softmax behave as d grows, for standard-normal q and k.

    For each d: the std of q·k (≈ √d), the std of q·k/√d (≈ 1), and the mean largest softmax
    weight over ``n_keys`` keys without and with the 1/√d scale.
    """
    return _saturation(tuple(int(d) for d in dims), int(seed), n_keys, trials).copy()


@functools.lru_cache(maxsize=32)  # the same few ranges come back on every rerun of the page
def _saturation(dims: tuple[int, ...], seed: int, n_keys: int, trials: int) -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(seed)
    for d in dims:
        q = rng.normal(size=(trials, 1, d))
        k = rng.normal(size=(trials, n_keys, d))
        scores = torch.as_tensor((q * k).sum(-1)).float()  # (trials, n_keys)
        unscaled = attention_weights(scores).max(dim=-1).values.mean().item()
        scaled = attention_weights(scores, temperature=1.0 / math.sqrt(d)).max(dim=-1).values.mean().item()
        rows.append({
            "d": d, "std of q·k": float(scores.std()), "√d": math.sqrt(d),
            "std of q·k/√d": float(scores.std()) / math.sqrt(d),
            "max weight, unscaled": unscaled, "max weight, scaled": scaled,
        })
    return pd.DataFrame(rows)


SCORE_FORMULAS = {
    "additive": (r"\mathrm{score}(q, k) = v^\top \tanh(W_q q + W_k k)", "additive: vᵀ tanh(W_q q + W_k k)"),
    "general": (r"\mathrm{score}(q, k) = q^\top W k", "general: qᵀ W k"),
    "dot": (r"\mathrm{score}(q, k) = q^\top k", "dot: qᵀ k"),
    "scaled dot": (r"\mathrm{score}(q, k) = \dfrac{q^\top k}{\sqrt{d}}", "scaled dot: qᵀ k / √d"),
}


def score_functions(query: np.ndarray, keys: np.ndarray, seed: int) -> dict[str, dict]:
    """The four score functions on the same query (d,) and keys (n, d), with seeded small W's.

    Returns name → {"scores": (n,), "weights": (n,) softmax via core, "params": {name: array}}.
    """
    d = query.shape[0]
    rng = np.random.default_rng(seed + 1)
    w_q, w_k = rng.normal(size=(d, d)) / math.sqrt(d), rng.normal(size=(d, d)) / math.sqrt(d)
    v = rng.normal(size=d) / math.sqrt(d)
    w = rng.normal(size=(d, d)) / math.sqrt(d)
    scores = {
        "additive": np.tanh(query @ w_q.T + keys @ w_k.T) @ v,  # (n,)
        "general": keys @ (w.T @ query),  # qᵀ W k for each key
        "dot": keys @ query,
        "scaled dot": keys @ query / math.sqrt(d),
    }
    params = {"additive": {"W_q": w_q, "W_k": w_k, "v": v}, "general": {"W": w}, "dot": {}, "scaled dot": {}}
    return {name: {"scores": s, "weights": playground_weights(s, 1.0, False), "params": params[name]}
            for name, s in scores.items()}


def kv_lookup(query: np.ndarray, keys: np.ndarray, values: np.ndarray, beta: float) -> dict[str, np.ndarray]:
    """A soft key-value store: weights over keys, the weighted mix of values, and the hard lookup."""
    scores = keys @ query
    weights = playground_weights(scores, beta, False)
    best = int(np.argmax(scores))
    return {"scores": scores, "weights": weights, "retrieved": weights @ values, "hard": values[best],
            "best": np.array(best)}


@dataclass(frozen=True)
class Projection:
    """Q, K, V as learned projections, and what ``core.attention`` makes of them."""

    x: np.ndarray  # (Tq, D) the input the queries come from
    source: np.ndarray  # (Tk, D) the input keys and values come from (x itself, or y)
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    q: np.ndarray  # (Tq, dk)
    k: np.ndarray  # (Tk, dk)
    v: np.ndarray  # (Tk, dv)
    weights: np.ndarray  # (Tq, Tk) from core.attention
    output: np.ndarray  # (Tq, dv) from core.attention
    max_error: float  # |core − softmax(QKᵀ/√dk)V computed by hand|


def project(x: np.ndarray, y: np.ndarray, cross: bool, seed: int, d_k: int = 3) -> Projection:
    """Q = X W_q, and K = S W_k, V = S W_v with S = X (self-attention) or S = Y (cross-attention)."""
    d_model = x.shape[1]
    rng = np.random.default_rng(seed + 2)
    w_q, w_k, w_v = (rng.normal(size=(d_model, d_k)) for _ in range(3))  # unit scale: visibly peaked maps
    source = y if cross else x
    q, k, v = x @ w_q, source @ w_k, source @ w_v
    out_t, weights_t = attention(*(torch.as_tensor(m, dtype=torch.float64) for m in (q, k, v)))
    out, weights = out_t.numpy(), weights_t.double().numpy()
    logits = q @ k.T / math.sqrt(d_k)
    by_hand = np.exp(logits - logits.max(axis=1, keepdims=True))
    by_hand /= by_hand.sum(axis=1, keepdims=True)
    error = max(np.abs(by_hand - weights).max(), np.abs(by_hand @ v - out).max())
    return Projection(x, source, w_q, w_k, w_v, q, k, v, weights, out, float(error))


# ----------------------------------------------------------------------------- masks
def split_sentences(text: str, max_sentences: int = 8) -> list[str]:
    """Non-empty lines of ``text`` (at most ``max_sentences``)."""
    return [line.strip() for line in text.splitlines() if line.strip()][:max_sentences]


def whitespace_batch(sentences: list[str], max_tokens: int = 24) -> tuple[torch.Tensor, list[list[str]]]:
    """Split on whitespace, give each new word an id (from 4, after the specials), pad with id 0."""
    vocab: dict[str, int] = {}
    rows = [s.split()[:max_tokens] for s in sentences]
    ids = [[vocab.setdefault(w, len(vocab) + 4) for w in row] for row in rows]
    return pad_batch(ids, rows)


def tokenizer_batch(tokenizer, sentences: list[str], max_tokens: int = 24) -> tuple[torch.Tensor, list[list[str]]]:
    """Encode each sentence with a checkpoint's tokenizer and pad with id 0."""
    encodings = [tokenizer.encode(s) for s in sentences]
    return pad_batch([e.ids[:max_tokens] for e in encodings], [list(e.tokens[:max_tokens]) for e in encodings])


def pad_batch(ids: list[list[int]], tokens: list[list[str]], pad_id: int = 0) -> tuple[torch.Tensor, list[list[str]]]:
    """(B, T) int64 ids padded with ``pad_id`` and the matching token strings padded with ``<pad>``."""
    width = max((len(row) for row in ids), default=0)
    if width == 0:
        raise ValueError("type at least one sentence with a word in it")
    padded = torch.tensor([row + [pad_id] * (width - len(row)) for row in ids], dtype=torch.long)
    return padded, [row + [PAD] * (width - len(row)) for row in tokens]


def look_ahead_mask(n: int) -> np.ndarray:
    """``core.subsequent_mask(n)`` as a numpy bool array (n, n)."""
    return subsequent_mask(n).numpy()


def batch_masks(ids: torch.Tensor, pad_id: int = 0) -> dict[str, np.ndarray]:
    """core's masks for a padded batch: padding (B, T), look-ahead (T, T), combined (B, T, T)."""
    pad = padding_mask(ids, pad_id)  # (B, 1, T)
    look_ahead = subsequent_mask(ids.size(1))  # (T, T)
    return {"padding": pad[:, 0].numpy(), "subsequent": look_ahead.numpy(),
            "combined": combine_masks(look_ahead, pad).numpy()}


def masked_softmax_demo(mask: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Random scores (seeded) and their weights without and with ``mask``, via core.attention_weights."""
    scores = torch.as_tensor(np.round(np.random.default_rng(seed).normal(size=mask.shape), 2)).float()
    return {"scores": scores.numpy(), "unmasked": attention_weights(scores).numpy(),
            "masked": attention_weights(scores, torch.as_tensor(mask)).numpy()}


# ----------------------------------------------------------------------------- norms and FFN
def norm_demo(batch: int, tokens: int, features: int, seed: int, eps: float = 1e-5) -> dict[str, np.ndarray]:
    """LayerNorm vs BatchNorm on one seeded (batch, tokens, features) tensor.

    LayerNorm: statistics per token over its features. BatchNorm: statistics per feature over
    every token of every sentence (B·T values). Both with torch.nn.functional and by the formulas.
    """
    gen = torch.Generator().manual_seed(seed)
    # Features with different offsets and scales, so both normalisations visibly do something.
    x = torch.randn(batch, tokens, features, generator=gen, dtype=torch.float64)
    x = x * torch.linspace(0.5, 3.0, features, dtype=torch.float64) + torch.linspace(-2, 2, features,
                                                                                      dtype=torch.float64)
    layer = F.layer_norm(x, (features,), eps=eps)
    flat = x.reshape(-1, features)  # (B·T, F): BatchNorm sees every position as one sample
    batch_out = F.batch_norm(flat, None, None, training=True, eps=eps).reshape_as(x)
    mu_row, var_row = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    mu_col, var_col = flat.mean(0), flat.var(0, unbiased=False)
    layer_formula = (x - mu_row) / torch.sqrt(var_row + eps)
    batch_formula = ((flat - mu_col) / torch.sqrt(var_col + eps)).reshape_as(x)
    return {
        "x": x.numpy(), "layer": layer.numpy(), "batch": batch_out.numpy(),
        "layer_error": np.array(float((layer - layer_formula).abs().max())),
        "batch_error": np.array(float((batch_out - batch_formula).abs().max())),
    }


def row_labels(batch: int, tokens: int) -> list[str]:
    """``"s0·t1"`` labels for the rows of a (batch·tokens, features) view."""
    return [f"s{b}·t{t}" for b in range(batch) for t in range(tokens)]


def norm_stats(demo: dict[str, np.ndarray]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-token (row) mean/std after LayerNorm, per-feature (column) mean/std after BatchNorm."""
    b, t, f = demo["x"].shape
    layer = demo["layer"].reshape(-1, f)
    batch = demo["batch"].reshape(-1, f)
    rows = pd.DataFrame({"token": row_labels(b, t), "mean (LayerNorm)": layer.mean(1),
                         "std (LayerNorm)": layer.std(1), "mean (BatchNorm)": batch.mean(1),
                         "std (BatchNorm)": batch.std(1)})
    cols = pd.DataFrame({"feature": [f"f{j}" for j in range(f)], "mean (BatchNorm)": batch.mean(0),
                         "std (BatchNorm)": batch.std(0), "mean (LayerNorm)": layer.mean(0),
                         "std (LayerNorm)": layer.std(0)})
    return rows, cols


def ffn_as_convolution(tokens: int, d_model: int, d_ff: int, seed: int) -> dict[str, np.ndarray]:
    """The position-wise FFN applied token by token equals a 1×1 convolution over the sequence."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, d_model, generator=gen, dtype=torch.float64)
    w1, b1 = torch.randn(d_ff, d_model, generator=gen, dtype=torch.float64), torch.randn(d_ff, generator=gen,
                                                                                         dtype=torch.float64)
    w2, b2 = torch.randn(d_model, d_ff, generator=gen, dtype=torch.float64), torch.randn(d_model, generator=gen,
                                                                                         dtype=torch.float64)
    per_token = torch.stack([torch.relu(x[t] @ w1.T + b1) @ w2.T + b2 for t in range(tokens)])  # (T, D)
    seq = x.T.unsqueeze(0)  # (1, D, T): channels = features, length = tokens
    conv = F.conv1d(torch.relu(F.conv1d(seq, w1.unsqueeze(-1), b1)), w2.unsqueeze(-1), b2)[0].T  # (T, D)
    return {"x": x.numpy(), "per_token": per_token.numpy(), "conv": conv.numpy(),
            "max_error": np.array(float((per_token - conv).abs().max()))}


# ----------------------------------------------------------------------------- parameter counts
def expected_parameter_counts(config) -> pd.DataFrame:
    """Parameters per top-level block from the config alone, with the formula that gives them.

    Matches ``Transformer.parameter_counts()`` (tied weights counted once, in ``tgt_embed``).
    """
    c = config
    d, f, h, dk = c.d_model, c.d_ff, c.n_heads, c.head_dim
    score_extra = {"scaled_dot": (0, ""), "dot": (0, ""), "general": (h * dk * dk, " + h·d_k²"),
                   "additive": (2 * h * dk * dk + h * dk, " + 2h·d_k² + h·d_k")}[c.score]
    attn = 4 * d * d + 4 * d + score_extra[0]
    attn_text = "(4·D² + 4·D" + score_extra[1] + ")"
    ffn = 2 * d * f + f + d
    rows = []
    if c.positional == "learned":
        rows.append(("positional", "max_len · D", c.max_len * d))
    if c.has_encoder:
        rows.append(("src_embed", "V_src · D", c.src_vocab_size * d))
        layer = attn + ffn + 4 * d
        rows.append(("encoder_layers", f"N_enc · [{attn_text} + (2·D·d_ff + d_ff + D) + 2·2D]",
                     c.n_encoder_layers * layer))
        rows.append(("encoder_norm", "2 · D", 2 * d))
    if c.has_decoder:
        cross = c.architecture == "encoder-decoder"
        rows.append(("tgt_embed", "V_tgt · D", c.tgt_vocab_size * d))
        layer = attn * (2 if cross else 1) + ffn + (6 if cross else 4) * d
        attn_part = f"2·{attn_text}" if cross else attn_text
        norms = "3·2D" if cross else "2·2D"
        rows.append(("decoder_layers", f"N_dec · [{attn_part} + (2·D·d_ff + d_ff + D) + {norms}]",
                     c.n_decoder_layers * layer))
        rows.append(("decoder_norm", "2 · D", 2 * d))
        if not c.tie_embeddings:
            rows.append(("lm_head", "D · V_tgt (no bias)", d * c.tgt_vocab_size))
    else:
        rows.append(("classifier", "D · C + C", d * c.n_classes + c.n_classes))
    return pd.DataFrame(rows, columns=["block", "formula", "from the formula"])


def parameter_table(counts: dict[str, int], config) -> pd.DataFrame:
    """The model's own counts next to the formula's, one row per block, plus a total row."""
    expected = expected_parameter_counts(config).set_index("block")
    table = pd.DataFrame({"block": list(counts), "parameters": [int(v) for v in counts.values()]})
    table["formula"] = [expected["formula"].get(b, "") for b in table["block"]]
    table["from the formula"] = [int(expected["from the formula"].get(b, -1)) for b in table["block"]]
    table["share"] = table["parameters"] / max(int(table["parameters"].sum()), 1)
    return table
