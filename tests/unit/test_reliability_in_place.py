"""Files read in place: headers before hashes (M3), links inside a model folder (H6), one-line reader errors (S2).

* A 1 TB sparse file (``truncate``: no disk used) opening with a valid GGUF header is refused from its header in
  under a second, through core and through the app's ``--models DIR``; a valid tiny GGUF padded to 1 TB loads
  reading only its header and tensors; the weight cache's key is a fingerprint (header, size, mtime, inode,
  sampled blocks) that reads a bounded amount whatever the file's size and changes with each of them.
* A ``model.safetensors``, ``config.json`` or ``tokenizer.json`` linked to a file outside its folder is refused
  with its name, in every Hugging Face family; a Hugging Face hub cache snapshot (links into the model's own
  ``blobs/``) opens; a FIFO where a file belongs is refused, not waited on.
* A truncated Marian ``source.spm`` is one ``CheckpointError`` line naming the file.
"""

from __future__ import annotations

import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from core import check_header, CheckpointError, load_pretrained
from core.io import files
from core.io.files import file_fingerprint, model_roots, resolve_inside
from core.io.pretrained import gguf_llama
from tests.helpers.hf_families import FAMILIES, save_family
from tests.helpers.hf_seq2seq_reference import marian
from tests.helpers.pretrained_files import write_tiny_bert, write_tiny_gguf

TERABYTE = 2**40


def _gguf_opening(tensor_elements: int = 1) -> bytes:
    """GGUF v3 with one F32 tensor ``w`` of ``tensor_elements`` values and no metadata keys."""
    name = b"w"
    tensor = struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, tensor_elements, 0, 0)
    return b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + tensor


def _sparse(path: Path, opening: bytes, size: int = TERABYTE) -> Path:
    path.write_bytes(opening)
    os.truncate(path, size)
    assert path.stat().st_size == size and path.stat().st_blocks * 512 < 2**20  # no disk used
    return path


def _read_bytes() -> int:
    """Bytes this process has read so far (``/proc/self/io``'s rchar)."""
    with open("/proc/self/io", encoding="ascii") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.fixture
def no_fingerprint(monkeypatch):
    """Fail if anything fingerprints (a bounded read of) the file: it must be refused from its header first."""
    def refuse(*args, **kwargs):
        raise AssertionError("the file was fingerprinted before its header was checked")
    monkeypatch.setattr(gguf_llama, "file_fingerprint", refuse)


# ----------------------------------------------------------------------------- headers before hashes
@pytest.mark.parametrize("how", ["load_pretrained", "check_header"])
def test_a_terabyte_sparse_gguf_is_refused_from_its_header_within_a_second(how, tmp_path, no_fingerprint):
    path = _sparse(tmp_path / "huge.gguf", _gguf_opening())
    started, read = time.perf_counter(), _read_bytes()
    with pytest.raises(CheckpointError, match=r"^huge.gguf: GGUF architecture None is not supported") as caught:
        (load_pretrained if how == "load_pretrained" else check_header)(path)
    assert time.perf_counter() - started < 1.0 and _read_bytes() - read < 2**20
    assert "\n" not in str(caught.value)


def test_an_over_budget_gguf_is_refused_from_its_header_before_any_read(tmp_path, no_fingerprint, monkeypatch):
    """The probe's 8 GB over-budget GGUF was read in full before it was refused."""
    monkeypatch.setenv("ATTNSCOPE_MEMORY_BYTES", str(6 * 2**30))  # a machine that can give a model 4 GiB
    claimed = 2**31  # 8 GiB of float32: over the 4 GiB pretrained load budget
    path = _sparse(tmp_path / "big.gguf", _gguf_opening(claimed), size=4 * claimed + 4096)
    started, read = time.perf_counter(), _read_bytes()
    with pytest.raises(CheckpointError, match="the load budget for GGUF files"):
        load_pretrained(path)
    assert time.perf_counter() - started < 1.0 and _read_bytes() - read < 2**20


def test_a_valid_gguf_padded_to_a_terabyte_loads_reading_only_its_header_and_tensors(tmp_path):
    path = tmp_path / "padded.gguf"
    write_tiny_gguf(path)
    size = path.stat().st_size
    os.truncate(path, TERABYTE)
    started, read = time.perf_counter(), _read_bytes()
    loaded = load_pretrained(path, use_cache=False)
    assert loaded.family == "llama" and time.perf_counter() - started < 10
    assert _read_bytes() - read < 4 * size + 2**20  # the scan, the tensors and the fingerprint's samples


def test_the_fingerprint_reads_a_bounded_amount_and_changes_with_the_file(tmp_path):
    huge = _sparse(tmp_path / "huge.bin", b"header")
    started, read = time.perf_counter(), _read_bytes()
    key = file_fingerprint(huge)
    assert time.perf_counter() - started < 1.0 and _read_bytes() - read < 2**20
    assert file_fingerprint(huge) == key
    small = tmp_path / "small.bin"
    small.write_bytes(b"A" * 100_000)
    before = file_fingerprint(small, header_bytes=16)
    data = bytearray(small.read_bytes())
    data[3] = ord("B")  # a header byte, the size and the times kept
    stat = small.stat()
    small.write_bytes(bytes(data))
    os.utime(small, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_fingerprint(small, header_bytes=16) != before
    edited = file_fingerprint(small, header_bytes=16)
    os.utime(small, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))  # only touched
    assert file_fingerprint(small, header_bytes=16) != edited
    copy = shutil.copy2(small, tmp_path / "copy.bin")  # the same bytes and times, another inode
    assert file_fingerprint(copy, header_bytes=16) != file_fingerprint(small, header_bytes=16)


def test_the_models_folder_lists_a_terabyte_gguf_as_refused_within_a_second(tmp_path, monkeypatch, no_fingerprint):
    """The app's ``--models DIR`` path: the catalog checks each model's header; it is never offered."""
    from app.services import catalog

    folder = tmp_path / "models"
    folder.mkdir()
    _sparse(folder / "huge.gguf", _gguf_opening())
    monkeypatch.setenv("ATTNSCOPE_RUNS", str(tmp_path / "runs"))
    catalog.list_entries(None)  # the shipped checkpoints' headers, verified once per process
    monkeypatch.setenv("ATTNSCOPE_MODELS", str(folder))
    started = time.perf_counter()
    entries, problems = catalog.list_entries(None)
    assert time.perf_counter() - started < 1.0
    assert not [e for e in entries if e.source == "models"]
    assert any(p.startswith("huge.gguf: GGUF architecture None is not supported") for p in problems), problems


# ----------------------------------------------------------------------------- links inside a model folder
@pytest.fixture(scope="module")
def family_folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {name: save_family(name, root / name, tokenizer=True) for name in FAMILIES}


def _linked_out(folder: Path, name: str, outside: Path) -> None:
    """Move ``folder/name`` outside the folder and leave a link to it in its place."""
    outside.mkdir(exist_ok=True)
    target = outside / name
    shutil.move(folder / name, target)
    (folder / name).symlink_to(target)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_model_safetensors_linked_outside_its_folder_is_refused_in_every_family(family, family_folders, tmp_path):
    folder = shutil.copytree(family_folders[family], tmp_path / family, symlinks=True)
    _linked_out(folder, "model.safetensors", tmp_path / "elsewhere")
    for read in (load_pretrained, check_header):
        with pytest.raises(CheckpointError, match=rf"^{family}: model.safetensors points outside the folder"):
            read(folder)


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json"])
def test_a_description_or_tokenizer_linked_outside_is_refused(name, family_folders, tmp_path):
    folder = shutil.copytree(family_folders["bert"], tmp_path / "bert", symlinks=True)
    _linked_out(folder, name, tmp_path / "elsewhere")
    with pytest.raises(CheckpointError, match=rf"^bert: {name} points outside the folder"):
        load_pretrained(folder)


def test_a_fifo_where_the_weights_belong_is_refused_not_waited_on(family_folders, tmp_path):
    folder = shutil.copytree(family_folders["bert"], tmp_path / "bert")
    (folder / "model.safetensors").unlink()
    os.mkfifo(folder / "model.safetensors")
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"^bert: model.safetensors is not a regular file"):
        load_pretrained(folder)
    assert time.perf_counter() - started < 5


def test_a_hub_cache_snapshot_linking_into_its_own_blobs_opens(tmp_path):
    """``models--org--name/snapshots/<rev>/<file>`` → ``../../blobs/<hash>``, as huggingface_hub stores them."""
    plain = tmp_path / "plain"
    write_tiny_bert(plain)
    repo = tmp_path / "hub" / "models--org--tiny"
    snapshot, blobs = repo / "snapshots" / "0123abc", repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for index, path in enumerate(sorted(plain.iterdir())):
        shutil.copy(path, blobs / f"blob{index}")
        (snapshot / path.name).symlink_to(Path("..", "..", "blobs", f"blob{index}"))
    assert model_roots(snapshot) == [snapshot, blobs]
    assert load_pretrained(snapshot).family == "bert" and check_header(snapshot).kind == "pretrained"
    other = tmp_path / "hub" / "models--org--other" / "blobs"  # another model's blobs are outside
    other.mkdir(parents=True)
    shutil.move(blobs / "blob0", other / "blob0")
    first = sorted(plain.iterdir())[0].name
    (snapshot / first).unlink()
    (snapshot / first).symlink_to(other / "blob0")
    with pytest.raises(CheckpointError, match=rf"{first} points outside the folder"):
        load_pretrained(snapshot)


def test_resolve_inside_follows_links_and_refuses_what_leaves_every_root(tmp_path):
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "real").write_text("x")
    (root / "in").symlink_to(root / "real")
    (root / "out").symlink_to(elsewhere / "secret")
    (root / "loop").symlink_to(root / "loop")
    assert resolve_inside(root / "in", [root]) == (root / "real").resolve()
    assert resolve_inside(root / "out", [root, elsewhere]) == (elsewhere / "secret").resolve()
    with pytest.raises(CheckpointError, match="^out points outside the folder"):
        resolve_inside(root / "out", [root])
    with pytest.raises(CheckpointError, match="^root: loop: its links cannot be followed"):
        files.model_file(root / "loop", root)


# ----------------------------------------------------------------------------- one-line reader errors
@pytest.mark.parametrize("name", ["source.spm", "target.spm"])
def test_a_truncated_marian_spm_is_one_line_naming_the_file(name, tmp_path):
    """The probe's S2: core raised a bare ``Exception`` ("Cannot parse precompiled_charsmap")."""
    folder, _, _ = marian(tmp_path / "marian")
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match=rf"^marian/{name} is not a (usable )?SentencePiece model") as caught:
        load_pretrained(folder)
    assert "\n" not in str(caught.value)


def test_any_other_fault_a_reader_raises_is_one_line_naming_the_file(tmp_path, monkeypatch):
    """The boundary of ``load_pretrained``: a bare ``Exception`` or ``RuntimeError`` from a native library."""
    from core.io.pretrained import hf_folder

    write_tiny_bert(tmp_path / "bert")
    for fault in (Exception("Cannot parse\nprecompiled_charsmap"), RuntimeError("native"), struct.error("bad")):
        monkeypatch.setitem(hf_folder.READERS, "bert", lambda folder, fault=fault: (_ for _ in ()).throw(fault))
        with pytest.raises(CheckpointError, match=rf"^bert cannot be read \({type(fault).__name__}: ") as caught:
            load_pretrained(tmp_path / "bert")
        assert "\n" not in str(caught.value)


def test_a_checkpoint_whose_extra_tensors_claim_gigabytes_is_refused_from_its_header(saved, tmp_path):
    """Any other format too: the extra tensors (snapshots) are budgeted from the header before the checksum reads
    them, so a sparse file claiming 2 GiB of them is refused in milliseconds."""
    import json

    from core import read_info

    raw = saved.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header, data = json.loads(raw[8:8 + size]), raw[8 + size:]
    header["extra/huge"] = {"dtype": "F32", "shape": [2**29], "data_offsets": [len(data), len(data) + 2**31]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = tmp_path / "huge.safetensors"
    path.write_bytes(len(text).to_bytes(8, "little") + text + data)
    os.truncate(path, 8 + len(text) + len(data) + 2**31)
    started, read = time.perf_counter(), _read_bytes()
    for verify in (True, False):
        with pytest.raises(CheckpointError, match=r"^huge.safetensors: its extra tensors hold 2,048 MiB, over the "
                                                  r"1,024 MiB"):
            read_info(path, verify=verify)
    assert time.perf_counter() - started < 1.0 and _read_bytes() - read < 8 * 2**20


def test_a_ctranslate2_folder_is_checked_from_its_header_and_its_model_bin_may_not_leave(tmp_path):
    from tests.helpers.ct2_craft import model_bin

    folder = tmp_path / "whisper"
    folder.mkdir()
    (folder / "model.bin").write_bytes(model_bin())
    (folder / "config.json").write_text("{}")
    assert check_header(folder).kind == "pretrained"
    _linked_out(folder, "model.bin", tmp_path / "elsewhere")
    with pytest.raises(CheckpointError, match=r"^whisper: model.bin points outside the folder"):
        check_header(folder)
