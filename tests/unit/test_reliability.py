"""Issue 15, loader side: budgets before allocation, header checks, one hash per file version,
the behaviour probe, and every fault a CheckpointError.

Where each case of ../shared/reliability.md §6.2–6.3 is tested:
C1 missing / directory / broken link / FIFO / unreadable: test_checkpoint, test_reliability_save
C2 truncated .safetensors and .pt: test_checkpoint (0, 4 bytes, half, −1), test_interop, the fuzz target
C3 random bytes, text, .pt renamed, pickle errors: test_checkpoint, test_interop
C4 flipped byte: test_checkpoint, here (a rewritten file is hashed again)
C5 NaN/Inf weights and snapshots: test_checkpoint, here
C6 pickle payload, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1: test_checkpoint, test_interop
C7 Namespace / dataclass / NumPy RNG in .pt: test_reliability_save
C8 config ≠ weights (d_model, d_ff, max_len, vocab, n_heads, norm, score, positional): test_checkpoint, here
C9 extra / missing keys: test_checkpoint
C10 saved on a GPU, loaded on a CPU: test_reliability_save (the CUDA half runs where there is a GPU)
C11 tokenizer truncated / newer / vocab ≠ embedding / too big: test_tokenizer, test_checkpoint, here;
    ids ≥ vocab_size never reach nn.Embedding: test_model
C12 path traversal, symlinks out of runs/: the app's catalog (test_jobs covers run names)
C13 oversized upload: test_reliability_save (maxUploadSize), the app's own size check
P1 EFBIG (RLIMIT_FSIZE) and ENOSPC: test_reliability_save, test_checkpoint
P2 SIGKILL during save: test_reliability_save
P3 kill -9 mid-run then resume: test_train;  P4 resume with changed settings: test_train
P5 permissions of a replaced checkpoint: test_checkpoint
"""

from __future__ import annotations

import itertools
import json
import tracemalloc
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models

import core.io.checkpoint as checkpoint_module
import core.io.verify as verify_module
from core.config import ARCHITECTURES, POSITIONALS, SCORES, ModelConfig
from core.budget import LOAD_BUDGET, Budget, parameter_count
from core.io.checkpoint import CheckpointError, load, read_info, save
from core.io.identify import identify
from core.text.tokenizer import MAX_VOCAB_SIZE, Tokenizer
from core.model.transformer import Transformer
from tests.helpers.tiny import tiny_model
from tests.helpers.checkpoint_files import read_raw, refused, rewrite

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every model the loader builds (on any device, meta included) and every tensor read."""
    seen: list[str] = []
    for module in (checkpoint_module, verify_module):
        original = module.Transformer
        monkeypatch.setattr(module, "Transformer", lambda config, _o=original: seen.append("model") or _o(config))
    return seen


# ---------------------------------------------------------------- budgets before allocation
@pytest.mark.parametrize(
    ("change", "field"),
    [({"max_len": 1_000_000}, "max_len"), ({"max_len": 40_000_000}, "max_len"), ({"max_len": 4e7}, "max_len"),
     ({"max_len": 4096}, "max_len"), ({"d_ff": 2**22}, "d_ff"), ({"d_model": 2**20, "n_heads": 1}, "d_model"),
     ({"n_encoder_layers": 10_000}, "n_encoder_layers"), ({"n_heads": 4096, "d_model": 4096}, "n_heads"),
     ({"src_vocab_size": 10**9}, "src_vocab_size"), ({"pe_base": float("inf")}, "pe_base"),
     ({"pe_base": 1e400}, "pe_base"), ({"dropout": float("nan")}, "dropout"), ({"n_classes": 10**7}, "n_classes"),
     ({"d_model": "5000 digits"}, "config")],
    ids=lambda v: "-".join(f"{k}={str(x)[:12]}" for k, x in v.items()) if isinstance(v, dict) else v,
)
def test_oversized_config_is_refused_naming_the_field_before_anything_is_built(
    saved: Path, builds: list[str], change: dict, field: str
) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.update(config=_config_json(metadata, change)))
    refused(saved, field)
    assert builds == [], "a model was built from an over-budget config"


def _config_json(metadata: dict, change: dict) -> str:
    """The config with ``change``; ints too long for json.dumps' default limit written by hand."""
    config = {**json.loads(metadata["config"]), **{k: 0 for k in change}}
    text = json.dumps(config, sort_keys=True)
    for key, value in change.items():
        literal = "9" * 5000 if value == "5000 digits" else json.dumps(value)
        text = text.replace(f'"{key}": 0', f'"{key}": {literal}')
    return text


@pytest.mark.parametrize(
    ("fields", "word"),
    [({"tgt_vocab_size": 200_000, "src_vocab_size": 200_000, "d_model": 256}, "parameters"),
     ({"max_len": 2048, "n_heads": 16, "d_model": 64, "n_encoder_layers": 6, "n_decoder_layers": 6}, "MiB")],
)
def test_config_within_field_bounds_but_over_the_load_budget_is_refused(
    saved: Path, builds: list[str], fields: dict, word: str
) -> None:
    ModelConfig.from_dict({**json.loads(read_raw(saved)[0]["config"]), **fields})  # within LIMITS: budget only
    rewrite(saved, config=fields)
    message = refused(saved, word)
    assert "budget" in message and builds == []


def test_a_larger_budget_can_be_passed_for_trusted_files(saved: Path) -> None:
    small = Budget(max_parameters=1_000)
    with pytest.raises(CheckpointError, match="parameters"):
        load(saved, budget=small)
    assert load(saved, budget=Budget(max_parameters=10**8)).config.d_model == 16


@pytest.mark.parametrize(("architecture", "score", "positional", "tie"),
                         [(a, s, p, t) for a, s, p, t in itertools.product(ARCHITECTURES, SCORES, POSITIONALS, (0, 1))
                          if not (t and a == "encoder")])
def test_parameter_count_matches_the_model(architecture: str, score: str, positional: str, tie: int) -> None:
    config = ModelConfig(architecture=architecture, src_vocab_size=13, tgt_vocab_size=17, n_classes=3, d_model=24,
                         n_heads=3, d_ff=40, max_len=19, n_encoder_layers=2, n_decoder_layers=3, score=score,
                         positional=positional, tie_embeddings=bool(tie))
    with torch.device("meta"):
        model = Transformer(config)
    assert parameter_count(config) == sum(p.numel() for p in model.parameters())


def test_every_shipped_checkpoint_fits_the_load_budget() -> None:
    shipped = sorted((ROOT / "assets" / "checkpoints").glob("*.safetensors"))
    assert shipped
    for path in shipped:
        info = read_info(path)
        assert parameter_count(info.config) <= LOAD_BUDGET.max_parameters
        assert info.config.max_len <= LOAD_BUDGET.max_len


# ---------------------------------------------------------------- header, dtypes, finite values
@pytest.mark.parametrize("dtype", [torch.float16, torch.int64, torch.float64])
def test_weights_that_are_not_float32_are_refused(saved: Path, dtype: torch.dtype) -> None:
    def cast(metadata, tensors):
        name = "encoder_layers.0.ff.linear1.weight"
        tensors[name] = tensors[name].to(dtype)

    rewrite(saved, edit=cast)
    refused(saved, "encoder_layers.0.ff.linear1.weight", "float32")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_snapshot_tensor_is_refused(tmp_path: Path, char_tokenizer: Tokenizer, value: float) -> None:
    snapshot = torch.rand(1, 2, 4, 3, 3)
    snapshot[0, 1, 2, 0, 0] = value
    path = tmp_path / "snap.safetensors"
    save(path, tiny_model(vocab=char_tokenizer.vocab_size), {"source": char_tokenizer, "target": char_tokenizer},
         extra_tensors={"snapshots/encoder/10": snapshot.half()})
    with pytest.raises(CheckpointError, match="extra/snapshots/encoder/10") as caught:
        load(path)
    assert "non-finite" in str(caught.value)


def test_extra_tensor_of_an_unsupported_dtype_is_refused(saved: Path) -> None:
    rewrite(saved, edit=lambda metadata, tensors: tensors.update({"extra/odd": torch.zeros(3, dtype=torch.complex64)}))
    refused(saved, "extra/odd")


def test_vocabulary_size_in_the_config_that_differs_from_the_weights_is_refused(saved: Path) -> None:
    rewrite(saved, config={"src_vocab_size": 45, "tgt_vocab_size": 45})
    refused(saved)


# ---------------------------------------------------------------- fields that do not show in shapes
@pytest.mark.parametrize("heads", [1, 2, 8])
def test_changed_n_heads_with_a_recomputed_checksum_is_refused(saved: Path, heads: int) -> None:
    rewrite(saved, config={"n_heads": heads})  # q/k/v shapes do not depend on n_heads
    with pytest.raises(CheckpointError, match="n_heads") as caught:
        load(saved)
    assert saved.name in str(caught.value)


@pytest.mark.parametrize("change", [{"norm": "pre"}, {"score": "dot"}, {"positional": "none"}, {"pe_base": 7.0}])
def test_other_fields_that_do_not_show_in_shapes_are_refused(
    tmp_path: Path, char_tokenizer: Tokenizer, change: dict
) -> None:
    model = tiny_model(vocab=char_tokenizer.vocab_size)
    with torch.no_grad():  # a trained-looking model: far from the symmetric initialisation
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.5)
    path = tmp_path / "trained.safetensors"
    save(path, model, {"source": char_tokenizer, "target": char_tokenizer})
    rewrite(path, config=change)
    with pytest.raises(CheckpointError, match="config"):
        load(path)


def test_file_saved_before_probes_existed_still_loads(saved: Path) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.pop("probe"))
    assert load(saved).config.n_heads == 4


def test_damaged_probe_record_is_refused(saved: Path) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.update(probe='{"logits": 3}'))
    with pytest.raises(CheckpointError, match="probe"):
        load(saved)


def test_saving_runs_the_probe_without_touching_the_rng_or_the_mode(saved: Path) -> None:
    ckpt = load(saved)
    model = ckpt.model.train()
    torch.manual_seed(5)
    before = torch.get_rng_state()
    save(saved, model, dict(ckpt.info.tokenizers))
    assert torch.equal(before, torch.get_rng_state()) and model.training


# ---------------------------------------------------------------- every fault a CheckpointError
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("entry", ["config", "tokenizers", "task", "metrics", "extra", "probe"])
@pytest.mark.parametrize("depth", [50, 5_000, 200_000])
def test_deeply_nested_json_in_any_metadata_entry_is_a_checkpoint_error(saved: Path, entry: str, depth: int) -> None:
    rewrite(saved, edit=lambda metadata, tensors: metadata.update({entry: nested(depth)}))
    if entry == "probe":  # only load runs the probe
        with pytest.raises(CheckpointError, match=saved.name):
            load(saved)
    else:
        refused(saved)


def test_a_header_over_its_cap_is_refused_unparsed_by_the_loader_and_by_identify(saved: Path) -> None:
    """Issue 28: 90 MB of metadata (a list of ones in ``extra``) took 10 s and 730 MB to load, and was accepted."""
    junk = "[" + ",".join(["1"] * (verify_module.MAX_HEADER_BYTES // 2)) + "]"
    rewrite(saved, edit=lambda metadata, tensors: metadata.update({"extra": junk}))
    tracemalloc.start()
    try:
        message = refused(saved, "MiB is read")
        with pytest.raises(CheckpointError, match=f"{saved.name} has a header of 32 MiB"):
            identify(saved)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in message and peak < 8 * 2**20  # the header was never read


@pytest.mark.parametrize("error", [MemoryError, OverflowError, RecursionError, RuntimeError, KeyError, ValueError])
def test_unexpected_exceptions_inside_the_loader_become_checkpoint_errors(
    saved: Path, monkeypatch: pytest.MonkeyPatch, error: type
) -> None:
    def explode(*args, **kwargs):
        raise error("boom")

    monkeypatch.setattr(checkpoint_module.ModelConfig, "from_json", explode)
    refused(saved)


def test_tokenizer_over_the_vocabulary_limit_is_refused_before_its_table_is_built() -> None:
    vocab = {f"w{i}": i for i in range(MAX_VOCAB_SIZE + 1)}
    with pytest.raises(ValueError, match="exceeds"):
        Tokenizer("word", HFTokenizer(models.WordLevel(vocab, unk_token="w3")))


@pytest.mark.parametrize("text", ["", "{", '{"format": "attnscope-tokenizer", "version": 1e999}', nested(100_000),
                                  '{"format": "attnscope-tokenizer", "version": 99}'])
def test_malformed_tokenizer_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        Tokenizer.from_json(text)


# ---------------------------------------------------------------- hashed once per version of a file
@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = checkpoint_module.digest
    monkeypatch.setattr(checkpoint_module, "digest", lambda *a: calls.append(1) or original(*a))
    checkpoint_module._VERIFIED.clear()
    return calls


def test_read_info_then_load_hashes_the_file_once(saved: Path, hashes: list[int]) -> None:
    read_info(saved)
    load(saved)
    read_info(saved)
    assert len(hashes) == 1


def test_a_rewritten_file_is_hashed_again_and_a_flipped_byte_caught(saved: Path, hashes: list[int]) -> None:
    load(saved)
    data = bytearray(saved.read_bytes())
    data[-3] ^= 0x10
    replacement = saved.with_name("replacement.safetensors")
    replacement.write_bytes(bytes(data))
    replacement.replace(saved)  # same path, new inode
    with pytest.raises(CheckpointError, match="checksum"):
        load(saved)
    assert len(hashes) == 2
