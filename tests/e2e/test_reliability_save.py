"""Issue 15, saving side: stale temp files of killed saves, real EFBIG and SIGKILL during a save
(reliability.md P1, P2), damaged resume states, odd paths (C1), pickled objects (C7), a GPU-saved
file on the CPU (C10), and the server configuration (C13, no outside requests)."""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

from app.services import uploads
from core.io.atomic import clean_stale_temp_files, process_folder
from core.io.checkpoint import CheckpointError, load, read_info, save
from core.io.convert.nn_transformer import load_state_dict_file
from core.text.tokenizer import Tokenizer
from core.cli import train as train_command
from core.training.state import load_state, resume_state_path, save_state
from tests.helpers.tiny import build_checkpoint, tiny_model
from tests.helpers.checkpoint_files import rewrite

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def age(path: Path, seconds: float = 60.0) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


# ---------------------------------------------------------------- stale temp files
def test_next_save_removes_only_our_stale_temp_files(saved: Path) -> None:
    folder = saved.parent
    ours = [folder / ".model.safetensors.ab_d1234.tmp", folder / ".other.safetensors.zz99zz99.tmp"]
    theirs = [folder / "notes.tmp", folder / ".model.safetensors.short.tmp", folder / "model.safetensors.ab_d1234.tmp"]
    for path in ours + theirs:
        path.write_bytes(b"x" * 100)
        age(path)
    link_target = folder.parent / "outside.txt"
    link_target.write_text("keep me")
    link = folder / ".link.safetensors.abcdefgh.tmp"
    link.symlink_to(link_target)
    ckpt = load(saved)
    save(saved, ckpt.model, dict(ckpt.info.tokenizers))
    assert not any(p.exists() for p in ours)
    assert all(p.exists() for p in theirs) and link.is_symlink() and link_target.read_text() == "keep me"


def test_a_temp_file_held_by_a_live_save_or_just_created_is_kept(tmp_path: Path) -> None:
    locked, fresh, stale = (tmp_path / f".m{i}.safetensors.abcdefgh.tmp" for i in range(3))
    for path in (locked, fresh, stale):
        path.write_bytes(b"partial")
    age(locked)
    age(stale)
    with open(locked, "rb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # as write_atomic holds it while writing
        assert clean_stale_temp_files(tmp_path) == [stale.name]
    assert locked.exists() and fresh.exists() and not stale.exists()


_KILLED_MID_SAVE = """
import os, signal, sys
from core.io.checkpoint import load, save
path = sys.argv[1]
ckpt = load(path)
os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)  # die with the temp file written, not replaced
save(path, ckpt.model, dict(ckpt.info.tokenizers), task="never written")
"""


def test_sigkill_during_save_keeps_the_previous_file_and_the_next_save_cleans_up(saved: Path) -> None:
    before = saved.read_bytes()
    done = subprocess.run([sys.executable, "-c", _KILLED_MID_SAVE, str(saved)], cwd=ROOT, env=ENV, timeout=300)
    assert done.returncode == -signal.SIGKILL
    leftovers = [p for p in saved.parent.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size > 0
    assert saved.read_bytes() == before and load(saved).info.task == "reverse"
    age(leftovers[0])
    ckpt = load(saved)
    save(saved, ckpt.model, dict(ckpt.info.tokenizers), task="again")
    assert sorted(p.name for p in saved.parent.iterdir()) == [saved.name]
    assert read_info(saved).task == "again"


def test_a_worker_folder_left_by_a_killed_server_is_removed_by_the_next_one() -> None:
    """A server killed with SIGKILL cannot remove its explain workers' folders; the next worker folder made
    removes every folder of a process that no longer runs, and keeps a live process's."""
    sleeper = subprocess.Popen([sys.executable, "-c", _WORKER_FOLDER + "import time; time.sleep(60)"],
                               cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        live = Path(sleeper.stdout.readline().strip())
        killed = subprocess.Popen([sys.executable, "-c", _WORKER_FOLDER + "import os; os.kill(os.getpid(), 9)"],
                                  cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
        left = Path(killed.stdout.readline().strip())
        assert killed.wait(timeout=60) == -signal.SIGKILL and left.is_dir() and live.is_dir()
        mine = Path(process_folder("attnscope-test-"))
        assert not left.exists() and live.is_dir() and mine.is_dir()
        assert mine.stat().st_mode & 0o777 == 0o700 and f"-{os.getpid()}-" in mine.name
    finally:
        sleeper.kill()
        sleeper.wait()
        for folder in Path(tempfile.gettempdir()).glob("attnscope-test-*"):
            shutil.rmtree(folder, ignore_errors=True)


_WORKER_FOLDER = """
from core.io.atomic import process_folder
print(process_folder("attnscope-test-"), flush=True)
"""

_FILE_TOO_LARGE = """
import resource, signal, sys
from core.io.checkpoint import CheckpointError, load, save
path, limit = sys.argv[1], int(sys.argv[2])
ckpt = load(path)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of killing us
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    save(path, ckpt.model, dict(ckpt.info.tokenizers), task="never written")
except CheckpointError as error:
    print(error)
    sys.exit(3)
"""


def test_file_size_limit_during_save_raises_and_keeps_the_previous_file(saved: Path) -> None:
    before = saved.read_bytes()
    done = subprocess.run([sys.executable, "-c", _FILE_TOO_LARGE, str(saved), str(len(before) // 2)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr[-2000:]
    assert saved.name in done.stdout and "too large" in done.stdout.lower()
    assert saved.read_bytes() == before and load(saved).info.task == "reverse"
    assert sorted(p.name for p in saved.parent.iterdir()) == [saved.name]


# ---------------------------------------------------------------- damaged resume states
def write_state(path: Path, tokenizer: Tokenizer) -> Path:
    model = tiny_model(vocab=tokenizer.vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(src=torch.tensor([[4, 5]]), tgt=torch.tensor([[1, 4]]), targets=torch.tensor([[4, 2]])).loss.backward()
    optimizer.step()
    save_state(path, model, {"source": tokenizer, "target": tokenizer}, optimizer, task="copy", step=7,
               run={"train": {"steps": 10}}, extra_tensors={})
    return path


def test_a_good_resume_state_loads(tmp_path: Path, char_tokenizer: Tokenizer) -> None:
    path = write_state(resume_state_path(tmp_path / "run.safetensors"), char_tokenizer)
    state = load_state(path, torch.device("cpu"))
    assert state.step == 7 and state.run == {"train": {"steps": 10}} and state.optimizer["state"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "plain-checkpoint", "bad-rng", "bad-step"])
def test_a_damaged_resume_state_is_a_clear_checkpoint_error_and_the_rng_is_untouched(
    tmp_path: Path, char_tokenizer: Tokenizer, damage: str
) -> None:
    path = write_state(resume_state_path(tmp_path / "run.safetensors"), char_tokenizer)
    if damage == "garbage":
        path.write_bytes(os.urandom(5000))
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "plain-checkpoint":
        build_checkpoint(path, "encoder-decoder", char_tokenizer)
    elif damage == "bad-rng":
        rewrite(path, edit=lambda metadata, tensors: tensors.update({"extra/rng/torch": torch.zeros(3)}))
    else:
        rewrite(path, edit=lambda metadata, tensors: metadata.update(
            extra=metadata["extra"].replace('"step": 7', '"step": "seven"')))
    torch.manual_seed(11)
    rng = torch.get_rng_state()
    with pytest.raises(CheckpointError) as caught:
        load_state(path, torch.device("cpu"))
    assert path.name in str(caught.value) and "\n" not in str(caught.value)
    assert torch.equal(rng, torch.get_rng_state())


def test_train_resume_with_a_damaged_state_prints_one_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "run.safetensors"
    resume_state_path(out).write_bytes(b"not a resume state")
    flags = ["--task=copy", "--preset=tiny", "--train_size=100", "--steps=5", "--device=cpu", "--progress=false"]
    assert train_command.main([*flags, f"--out={out}", "--resume"]) == 2
    assert resume_state_path(out).name in caplog.text and "Traceback" not in caplog.text


# ---------------------------------------------------------------- C1 and C7: odd paths, pickled objects
def test_a_broken_link_a_fifo_and_an_unreadable_file_are_refused_naming_them(tmp_path: Path, saved: Path) -> None:
    link = tmp_path / "dangling.safetensors"
    link.symlink_to(tmp_path / "gone.safetensors")
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)  # opening it would block for ever: it must be refused without opening
    for path, words in ((link, "not found"), (fifo, "not a file")):
        with pytest.raises(CheckpointError, match=words) as caught:
            load(path)
        assert path.name in str(caught.value)
    if os.geteuid() != 0:  # root reads anything
        saved.chmod(0)
        with pytest.raises(CheckpointError, match=saved.name):
            load(saved)


@dataclasses.dataclass
class RunSettings:
    lr: float = 0.1


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("content", [argparse.Namespace(lr=0.1), RunSettings(), np.random.get_state(),
                                     {"w": torch.zeros(2), "args": argparse.Namespace(lr=0.1)}],
                         ids=["Namespace", "dataclass", "numpy-legacy-rng", "dict-with-Namespace"])
def test_pt_files_holding_objects_are_refused_under_weights_only(tmp_path: Path, content) -> None:
    path = tmp_path / "objects.pt"
    torch.save(content, path)
    with pytest.raises(ValueError, match="objects.pt"):
        load_state_dict_file(path)


# ---------------------------------------------------------------- C10: saved on a GPU, loaded on a CPU
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device to save from")
def test_a_checkpoint_saved_from_a_gpu_model_loads_on_the_cpu(tmp_path: Path, char_tokenizer: Tokenizer) -> None:
    model = tiny_model(vocab=char_tokenizer.vocab_size).cuda()
    path = tmp_path / "gpu.safetensors"
    save(path, model, {"source": char_tokenizer, "target": char_tokenizer})
    ckpt = load(path, "cpu")
    assert next(ckpt.model.parameters()).device.type == "cpu"
    assert all(torch.equal(a.cpu(), b) for a, b in zip(model.state_dict().values(), ckpt.model.state_dict().values()))


def test_the_file_records_no_device_so_it_loads_anywhere(saved: Path) -> None:
    from safetensors import safe_open

    with safe_open(str(saved), framework="pt") as handle:
        assert "cuda" not in str(handle.metadata()) and all(handle.get_tensor(k).device.type == "cpu"
                                                            for k in handle.keys())


# ---------------------------------------------------------------- server configuration
def test_streamlit_config_is_safe_by_default() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server, client = config["server"], config["client"]
    assert server["address"] == "127.0.0.1" and set(server["allowedHosts"]) <= {"localhost", "127.0.0.1"}
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True
    assert server.get("enableStaticServing", False) is False
    assert 1 <= server["maxUploadSize"] <= 600  # MB (GPT-2 small fits) (C13: Streamlit answers 413 above it)
    assert uploads.max_upload_bytes() == server["maxUploadSize"] * 2**20  # the app's cap is Streamlit's
    assert client["showErrorDetails"] == "none" and client["showErrorLinks"] is False
    assert config["browser"]["gatherUsageStats"] is False


def test_the_favicon_is_not_fetched_from_a_font_cdn() -> None:
    source = (ROOT / "app" / "streamlit_app.py").read_text()
    call = source[source.index("set_page_config("):].split(")", 1)[0]
    assert "page_icon" in call, "without page_icon every st.Page icon becomes the favicon"
    assert ":material/" not in call and "http" not in call
