"""Importing PyTorch's nn.Transformer: identical hidden states, clear errors, and safe .pt loading."""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from core.io.checkpoint import load
from core.io.convert import (NNImportOptions, config_for_nn_transformer, from_nn_transformer, import_nn_transformer,
                             load_state_dict_file, nn_transformer_layout, read_layout)
from core.model.transformer import Transformer
from tests.helpers.nn_reference import SRC_VOCAB, TGT_VOCAB, reference
from tests.helpers.tiny import BOS, PAD, MarkerPayload, random_ids

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")


def imported(ref: nn.Transformer) -> Transformer:
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, positional="none")
    return from_nn_transformer(ref, config)


def batch(padded: bool) -> tuple[torch.Tensor, torch.Tensor]:
    src, tgt = random_ids(3, 7, vocab=SRC_VOCAB, seed=1), random_ids(3, 5, vocab=TGT_VOCAB, seed=2)
    tgt[:, 0] = BOS
    if padded:
        src[1, 4:] = PAD
        src[2, 6:] = PAD
        tgt[1, 3:] = PAD
    return src, tgt


def reference_outputs(ref: nn.Transformer, model: Transformer, src: torch.Tensor, tgt: torch.Tensor):
    scale = math.sqrt(model.config.d_model)
    src_x, tgt_x = model.src_embed(src) * scale, model.tgt_embed(tgt) * scale
    causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool).triu(1)  # PyTorch: True = not allowed
    src_ignore, tgt_ignore = src == PAD, tgt == PAD
    memory = ref.encoder(src_x, src_key_padding_mask=src_ignore)
    hidden = ref(src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=src_ignore,
                 tgt_key_padding_mask=tgt_ignore, memory_key_padding_mask=src_ignore)
    return memory, hidden


# ---------------------------------------------------------------- equivalence
def test_config_follows_the_module() -> None:
    for norm_first in (False, True):
        config = config_for_nn_transformer(reference(norm_first), src_vocab_size=SRC_VOCAB,
                                           tgt_vocab_size=TGT_VOCAB, max_len=32, positional="none")
        assert (config.d_model, config.n_heads, config.d_ff) == (16, 4, 32)
        assert (config.n_encoder_layers, config.n_decoder_layers, config.dropout) == (2, 2, 0.0)
        assert config.norm == ("pre" if norm_first else "post") and config.max_len == 32


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
def test_imported_model_reproduces_nn_transformer(norm_first: bool, padded: bool) -> None:
    ref = reference(norm_first)
    model = imported(ref)
    src, tgt = batch(padded)
    with torch.no_grad():
        memory, memory_mask, _ = model.encode(src)
        hidden, _, _ = model.decode(tgt, memory, memory_mask)
    ref_memory, ref_hidden = reference_outputs(ref, model, src, tgt)
    real = src != PAD  # PyTorch may leave padded encoder positions as zeros (its fast path)
    torch.testing.assert_close(memory[real], ref_memory[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(hidden, ref_hidden, atol=1e-5, rtol=0)
    with torch.no_grad():  # and the same through forward, with both attention paths
        fused = model(src, tgt).logits
        explicit = model(src, tgt, return_attention=True).logits
    torch.testing.assert_close(fused, model.lm_head(ref_hidden), atol=1e-5, rtol=0)
    torch.testing.assert_close(explicit, fused, atol=1e-5, rtol=0)


def test_import_from_a_state_dict_equals_import_from_the_module() -> None:
    ref = reference(False, seed=3)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    torch.manual_seed(0)
    a = from_nn_transformer(ref, config)
    torch.manual_seed(0)
    b = from_nn_transformer(ref.state_dict(), config)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert not a.training


def test_embeddings_and_output_projection_can_be_passed_in() -> None:
    ref = reference(True)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    src_table, tgt_table, head = torch.randn(SRC_VOCAB, 16), torch.randn(TGT_VOCAB, 16), torch.randn(TGT_VOCAB, 16)
    model = from_nn_transformer(ref, config, src_embed=src_table, tgt_embed=tgt_table, lm_head=head)
    assert torch.equal(model.src_embed.weight, src_table) and torch.equal(model.tgt_embed.weight, tgt_table)
    assert torch.equal(model.lm_head.weight, head)
    with pytest.raises(ValueError, match="src_embed"):
        from_nn_transformer(ref, config, src_embed=torch.randn(SRC_VOCAB + 1, 16))


# ---------------------------------------------------------------- errors
def test_unexpected_key_is_a_value_error() -> None:
    ref = reference(False)
    state = {**ref.state_dict(), "encoder.layers.0.rotary.weight": torch.zeros(4)}
    with pytest.raises(ValueError, match="rotary"):
        from_nn_transformer(state, config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB))


def test_missing_key_is_a_value_error() -> None:
    ref = reference(False)
    state = dict(ref.state_dict())
    del state["decoder.layers.1.multihead_attn.out_proj.weight"]
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    with pytest.raises(ValueError, match="missing"):
        from_nn_transformer(state, config)


@pytest.mark.parametrize("change", [{"d_ff": 64}, {"d_model": 32}, {"n_encoder_layers": 3}, {"n_decoder_layers": 1}])
def test_config_that_does_not_fit_the_weights_is_a_value_error(change: dict) -> None:
    ref = reference(False)
    config = config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)
    with pytest.raises(ValueError):
        from_nn_transformer(ref, type(config).from_dict({**config.to_dict(), **change}))


@pytest.mark.parametrize("kwargs", [{"activation": "gelu"}, {"layer_norm_eps": 1e-6}, {"bias": False}])
def test_features_we_cannot_reproduce_are_refused(kwargs: dict) -> None:
    ref = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32,
                         batch_first=True, **kwargs)
    with pytest.raises(ValueError):
        config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB)


# ---------------------------------------------------------------- .pt files
def test_plain_torch_save_state_dict_loads_and_imports(tmp_path: Path) -> None:
    ref = reference(True, seed=4)
    path = tmp_path / "nn_transformer.pt"
    torch.save(ref.state_dict(), path)
    state = load_state_dict_file(path)
    assert state.keys() == ref.state_dict().keys()
    assert all(torch.equal(state[k], v) for k, v in ref.state_dict().items())
    model = from_nn_transformer(state, config_for_nn_transformer(ref, src_vocab_size=SRC_VOCAB,
                                                                 tgt_vocab_size=TGT_VOCAB, positional="none"))
    src, tgt = batch(padded=True)
    with torch.no_grad():
        memory, memory_mask, _ = model.encode(src)
        hidden, _, _ = model.decode(tgt, memory, memory_mask)
    torch.testing.assert_close(hidden, reference_outputs(ref, model, src, tgt)[1], atol=1e-5, rtol=0)


@pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")
@pytest.mark.parametrize("force_unsafe", [False, True], ids=["default-env", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"])
@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_pickle_payload_is_refused_and_never_runs(
    tmp_path: Path, marker_payload, monkeypatch: pytest.MonkeyPatch, force_unsafe: bool, writer: str
) -> None:
    payload, marker = marker_payload
    path = tmp_path / "evil.pt"
    if writer == "pickle":
        path.write_bytes(payload)
    else:
        torch.save({"weight": MarkerPayload(marker)}, path)
    if force_unsafe:
        monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(ValueError, match="evil.pt"):
        load_state_dict_file(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [([torch.zeros(2)], "state dict"), ({"w": torch.zeros(2), "step": 3}, "state dict"), (None, "cannot read")],
)
def test_files_that_are_not_state_dicts_are_refused(tmp_path: Path, content, fragment: str) -> None:
    path = tmp_path / "odd.pt"
    if content is None:
        torch.save({"w": torch.zeros(100)}, path)
        path.write_bytes(path.read_bytes()[:-30])  # truncated
    else:
        torch.save(content, path)
    with pytest.raises(ValueError, match=fragment):
        load_state_dict_file(path)


def test_missing_pt_file_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absent.pt"):
        load_state_dict_file(tmp_path / "absent.pt")


# ---------------------------------------------------------------- the README's worked example (issue 16 item 8)
ROOT = Path(__file__).resolve().parents[2]
CORE_ENV = {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def readme_import_example() -> tuple[str, list[str]]:
    """The README's "Import a PyTorch nn.Transformer" section: its Python snippet and its commands."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("### Import a PyTorch `nn.Transformer`")[1]
    section = section.split("\n## ", 1)[0]
    [code] = re.findall(r"```py\n(.*?)```", section, flags=re.S)
    [commands] = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return code, commands.strip().splitlines()


def run_command(line: str, cwd: Path) -> subprocess.CompletedProcess:
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "core"]
    return subprocess.run([sys.executable, *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **CORE_ENV})


def test_the_readme_example_imports_a_model_whose_logits_equal_pytorch(tmp_path, monkeypatch) -> None:
    code, commands = readme_import_example()
    monkeypatch.chdir(tmp_path)
    torch.manual_seed(0)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # the snippet exactly as printed
    user_model = namespace["model"]
    done = [run_command(line, tmp_path) for line in commands]
    assert all(d.returncode == 0 for d in done), [d.stderr[-2000:] for d in done]
    assert "wrote my_translator_attnscope.safetensors" in done[0].stdout
    ckpt = load(tmp_path / "my_translator_attnscope.safetensors")
    assert ckpt.config.n_heads == 4 and ckpt.source_tokenizer.encode("the cat").tokens == ["the", "cat"]
    assert done[1].stdout.strip()  # explain printed its summary
    src, tgt = torch.tensor([[4, 5, 7, 8, 9, 2]]), torch.tensor([[1, 4, 6, 7, 3]])  # the vocabulary's ids (no <pad>)
    with torch.no_grad():
        expected = user_model(src, tgt)
        ours = ckpt.model(src, tgt, return_attention=True)
    torch.testing.assert_close(ours.logits, expected, atol=1e-5, rtol=0)
    assert set(ours.attention) == {"encoder", "decoder", "cross"}


# ---------------------------------------------------------------- python -m core import: errors and options
def write_user_model(folder: Path, *, bias: bool = False, vocab: list[str] | None = None) -> tuple[nn.Module, Path]:
    """A wrapped nn.Transformer (pre-norm, no embedding scale, no positional encoding) and its vocab file."""
    words = vocab or ["<?>", "<blank>", "<s>", "</s>", "a", "b", "c", "d"]  # torchtext's order: unk, pad, bos, eos
    torch.manual_seed(5)
    user = nn.Module()
    user.embedding = nn.Embedding(len(words), 16)  # one table for both sides
    user.core = reference(True, seed=6)
    user.out = nn.Linear(16, len(words), bias=bias)
    save_file({k: v.contiguous() for k, v in user.state_dict().items()}, folder / "user.safetensors")
    (folder / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    return user, folder / "vocab.txt"


def import_cli(folder: Path, *flags: str) -> subprocess.CompletedProcess:
    line = ("python -m core import user.safetensors --out out.safetensors --heads 4 --src-vocab vocab.txt "
            "--tgt-vocab vocab.txt --norm-first --positional none --specials '<blank>' '<s>' '</s>' '<?>' "
            + " ".join(shlex.quote(f) for f in flags))
    return run_command(line, folder)


@pytest.mark.parametrize("bias", [False, True])
def test_cli_options_reproduce_a_pre_norm_model_with_renamed_specials(tmp_path, bias: bool) -> None:
    user, _ = write_user_model(tmp_path, bias=bias)  # with a bias, as nn.Linear's default (PyTorch's tutorials)
    done = import_cli(tmp_path, "--lm-head", "out")
    assert done.returncode == 0, done.stderr
    ckpt = load(tmp_path / "out.safetensors")
    assert ckpt.config.output_bias is bias
    assert ckpt.config.norm == "pre" and ckpt.target_tokenizer.token_strings([0, 1, 2, 3, 4]) == [
        "<pad>", "<bos>", "<eos>", "<unk>", "a"]
    their_ids, ours_ids = torch.tensor([[2, 4, 5, 0, 6, 3]]), torch.tensor([[1, 4, 5, 3, 6, 2]])  # bos a b unk c eos
    order = [1, 2, 3, 0, 4, 5, 6, 7]  # our id j is their id order[j]
    with torch.no_grad():
        table, causal = user.embedding.weight, nn.Transformer.generate_square_subsequent_mask(6)
        hidden = user.core(table[their_ids], table[their_ids], tgt_mask=causal)  # (1, 6, 16)
        theirs = user.out(hidden)[..., order]  # (1, 6, V) in our id order
        torch.testing.assert_close(ckpt.model(ours_ids, ours_ids).logits, theirs, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("flags", "vocab", "bias", "fragment"), [
    ((), None, False, "cannot tell which tensor is the source embedding: name it with --src-embed KEY"),
    (("--lm-head", "nothing"), None, False, "'nothing' is not a tensor of shape (rows, 16)"),
    (("--lm-head", "out", "--heads", "3"), None, False, "divisible by n_heads (3)"),
    (("--lm-head", "out"), ["<blank>", "<s>", "</s>", "<?>", "a", "b", "c"] + ["a"], False, "lists 'a' more than once"),
    (("--lm-head", "out"), ["<blank>", "<s>", "</s>", "x", "a", "b", "c", "d"], False, "has no line '<?>'"),
    (("--lm-head", "out", "--max-len", "100000"), None, False, "max_len"),
    (("--lm-head", "out", "--prefix", "model."), None, False, "not an nn.Transformer"),
])
def test_cli_errors_are_one_line_with_exit_status_2(tmp_path, flags, vocab, bias, fragment) -> None:
    write_user_model(tmp_path, bias=bias, vocab=vocab)
    done = import_cli(tmp_path, *flags)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert fragment in done.stderr and not (tmp_path / "out.safetensors").exists()


def test_cli_reads_a_pt_file_safely_and_refuses_a_pickle(tmp_path, marker_payload) -> None:
    user, _ = write_user_model(tmp_path)
    torch.save(user.state_dict(), tmp_path / "user.pt")
    done = run_command("python -m core import user.pt --out out.safetensors --heads 4 --src-vocab vocab.txt "
                       "--tgt-vocab vocab.txt --specials '<blank>' '<s>' '</s>' '<?>' --lm-head out", tmp_path)
    assert done.returncode == 0, done.stderr
    payload, marker = marker_payload
    (tmp_path / "evil.pt").write_bytes(payload)
    done = run_command("python -m core import evil.pt --out evil.safetensors --heads 4 --src-vocab vocab.txt "
                       "--tgt-vocab vocab.txt", tmp_path)
    assert done.returncode == 2 and "evil.pt" in done.stderr and not marker.exists()


@pytest.mark.parametrize("command", ["import", "explain", "evaluate", "train"])
def test_every_cli_flag_is_described(command: str) -> None:
    done = run_command(f"python -m core {command} --help", ROOT)
    listing = done.stdout.split("\n\n", 2)[2]  # after the usage and the description: the arguments
    entries = re.findall(r"^  (\S.*?)(?=\n  \S|\n\n|\Z)", listing, flags=re.S | re.M)
    assert done.returncode == 0 and len(entries) >= 2
    for entry in entries:  # "--flag METAVAR   description (default: …)": words beyond the flag and its metavar
        words = entry.split()
        assert len([w for w in words[1:] if not w.isupper() and not w.startswith("{")]) >= 3, entry


def test_a_bare_state_dict_imports_and_its_layout_is_read_from_the_shapes(tmp_path) -> None:
    ref = reference(False, seed=8)
    torch.manual_seed(9)
    tables = {"src_tokens.weight": torch.randn(SRC_VOCAB, 16), "tgt_tokens.weight": torch.randn(TGT_VOCAB, 16),
              "head.weight": torch.randn(TGT_VOCAB, 16)}
    save_file({**ref.state_dict(), **tables}, tmp_path / "bare.safetensors")
    layout = nn_transformer_layout(tmp_path / "bare.safetensors")
    assert (layout.prefix, layout.d_model, layout.n_encoder_layers, layout.n_decoder_layers, layout.d_ff) == (
        "", 16, 2, 2, 32)
    assert (layout.src_embed, layout.tgt_embed, layout.lm_head) == ("src_tokens.weight", "tgt_tokens.weight",
                                                                    "head.weight")
    words = lambda n: ["<pad>", "<bos>", "<eos>", "<unk>", *(f"w{i}" for i in range(n - 4))]  # noqa: E731
    options = NNImportOptions(n_heads=4, src_vocab=tuple(words(SRC_VOCAB)), tgt_vocab=tuple(words(TGT_VOCAB)),
                              scale_embeddings=True, positional="none")
    ckpt = import_nn_transformer(tmp_path / "bare.safetensors", tmp_path / "out.safetensors", options)
    assert ckpt.info.extra["imported_from"]["keys"] == {"src_embed": "src_tokens.weight",
                                                        "tgt_embed": "tgt_tokens.weight", "lm_head": "head.weight"}
    assert torch.equal(ckpt.model.src_embed.weight, tables["src_tokens.weight"])  # scaled as ours: kept as is
    src, tgt = batch(padded=False)
    with torch.no_grad():
        logits = ckpt.model(src, tgt).logits
        _, hidden = reference_outputs(ref, ckpt.model, src, tgt)
    torch.testing.assert_close(logits, hidden @ tables["head.weight"].T, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("keys", "message"), [
    ({"weight": (4, 4)}, "not an nn.Transformer state dict"),
    ({"a.encoder.layers.0.linear1.weight": (8, 4), "b.encoder.layers.0.linear1.weight": (8, 4)}, "several encoders"),
    ({"encoder.layers.0.self_attn.in_proj_weight": (12, 4), "encoder.layers.0.linear1.weight": (8, 4)},
     "no decoder.layers"),
])
def test_layouts_that_are_not_one_nn_transformer_are_refused(keys: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        read_layout(keys)
