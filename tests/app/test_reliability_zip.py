"""Issue 28, zips (../shared/reliability.md §6.5 Z1–Z2): every compression method inflated under a
byte cap while streaming, and every unsafe or malformed archive one CheckpointError line."""

from __future__ import annotations

import io
import json
import struct
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from app.services.uploads import MAX_ZIP_FILES
from app.services.unzip import unzip
from core import CheckpointError, load_pretrained
from tests.helpers.pretrained_files import write_tiny_bert

METHODS = [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]


def zipped(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def lie_about_sizes(data: bytes, size: int) -> bytes:
    """Patch every local and central header's uncompressed size to ``size``."""
    out = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = out.find(signature)
        while start >= 0:
            out[start + offset:start + offset + 4] = struct.pack("<I", size)
            start = out.find(signature, start + 4)
    return bytes(out)


def refused(data: bytes, target: Path, match: str, **caps) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=match) as caught:
            unzip(data, target, **{"max_bytes": 1 << 20, "max_files": 16, **caps})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10 and peak < 32 * 2**20, peak
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("method", METHODS)
def test_z1_a_member_over_the_cap_is_refused_while_streaming_for_every_method(method: int, tmp_path: Path) -> None:
    bomb = zipped({"config.json": b"\0" * (24 << 20)}, method)
    refused(bomb, tmp_path, "unpacks to more than 1 MB")  # the declared size
    liar = lie_about_sizes(bomb, 10)
    assert zipfile.ZipFile(io.BytesIO(liar)).infolist()[0].file_size == 10
    refused(liar, tmp_path / "liar", "inflates past the 10 bytes its header declares")  # counted while inflating
    assert (tmp_path / "liar" / "config.json").stat().st_size <= 10


@pytest.mark.parametrize("method", METHODS[1:])
def test_a_member_that_inflates_a_hundredfold_is_refused_long_before_the_cap(method: int, tmp_path: Path) -> None:
    """Honest headers, under the cap, but 64 MiB of zeros in a few KB: stopped at 16 MiB, not inflated to the end."""
    bomb = zipped({"model.safetensors": b"\0" * (64 << 20)}, method)
    refused(bomb, tmp_path, "more than 100 times its compressed size", max_bytes=600 << 20)
    assert (tmp_path / "model.safetensors").stat().st_size <= 16 << 20


@pytest.mark.parametrize("method", METHODS)
def test_every_method_unzips_an_honest_archive_byte_for_byte(method: int, tmp_path: Path) -> None:
    payload = bytes(range(256)) * 4000
    unzip(zipped({"a/b.bin": payload, "c.txt": b"hi"}, method), tmp_path, max_bytes=2 << 20, max_files=4)
    assert (tmp_path / "a" / "b.bin").read_bytes() == payload and (tmp_path / "c.txt").read_bytes() == b"hi"


def test_a_flipped_byte_in_a_stored_member_is_a_crc_error(tmp_path: Path) -> None:
    data = bytearray(zipped({"x.bin": b"abcdef" * 100}, zipfile.ZIP_STORED))
    data[data.find(b"abcdef") + 3] ^= 0xFF
    refused(bytes(data), tmp_path, "bad CRC")


@pytest.mark.parametrize("files, match", [
    ({}, "holds no files"),
    ({"a" * 300: b"x"}, "name of 300 characters"),
    ({"model": b"x", "model/config.json": b"{}"}, "as a file and a folder"),
    ({"../outside.json": b"{}"}, "leaving its folder"),
])
def test_z2_malformed_archives_are_one_line(files: dict[str, bytes], match: str, tmp_path: Path) -> None:
    refused(zipped(files), tmp_path, match)


def test_z2_the_same_name_twice_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning):
        archive.writestr("config.json", b"{}")
        archive.writestr("config.json", b"[]")
    refused(buffer.getvalue(), tmp_path, "twice")


def test_an_unknown_compression_method_is_refused(tmp_path: Path) -> None:
    data = bytearray(zipped({"x.bin": b"abc"}, zipfile.ZIP_STORED))
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
        at = data.find(signature)
        data[at + offset:at + offset + 2] = struct.pack("<H", 99)
    refused(bytes(data), tmp_path, "compression method 99|cannot be read")


def bert_with_modules(tmp_path: Path, modules: object) -> Path:
    folder = tmp_path / "bert"
    write_tiny_bert(folder)
    (folder / "modules.json").write_text(json.dumps(modules))
    return folder


@pytest.mark.parametrize("modules, match", [
    (7, "must be a list of objects"),
    ({"path": "1_Pooling"}, "must be a list of objects"),
    ([3], "must be a list of objects"),
    ([{"path": 3, "type": "sentence_transformers.models.Pooling"}], "not text"),
    ([{"path": "../../../../etc", "type": "sentence_transformers.models.Pooling"}], "outside the folder"),
])
def test_z2_a_modules_json_of_the_wrong_type_or_leaving_the_folder_is_one_line(
        modules: object, match: str, tmp_path: Path) -> None:
    """Core's BERT reader checks sentence-transformers' modules.json (for a folder from anywhere, an upload too)."""
    with pytest.raises(CheckpointError, match=match) as caught:
        load_pretrained(bert_with_modules(tmp_path, modules))
    assert "\n" not in str(caught.value)


def test_a_modules_json_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    folder = bert_with_modules(tmp_path, [])
    (folder / "modules.json").write_text("[{")
    with pytest.raises(CheckpointError, match="modules.json is not valid JSON"):
        load_pretrained(folder)


def test_a_good_modules_json_sets_the_pooling(tmp_path: Path) -> None:
    folder = bert_with_modules(tmp_path, [{"path": "", "type": "sentence_transformers.models.Transformer"},
                                          {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert load_pretrained(folder).pooling == {"mode": "cls", "normalize": False}
    (folder / "modules.json").write_text(json.dumps([{"path": "2_Normalize", "type": "x.models.Normalize"}]))
    assert load_pretrained(folder).pooling == {"mode": "mean", "normalize": True}


def test_a_directory_of_many_tiny_entries_is_refused_from_its_end_record(tmp_path: Path) -> None:
    """zipfile builds an object per listed entry: a 500 MB zip of empty members would list millions."""
    many = zipped({f"f{i:06d}": b"" for i in range(3000)}, zipfile.ZIP_STORED)
    refused(many, tmp_path, "lists more files than the 16 accepted")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("member", "match"), [("../evil.txt", "leaving its folder"),
                                               ("/etc/evil.txt", "absolute path"),
                                               ("a/../../evil.txt", "leaving its folder"),
                                               ("C:/evil.txt", "absolute path")])
def test_unsafe_zip_members_are_refused(tmp_path, member, match):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, "x")
    with pytest.raises(CheckpointError, match=match):
        unzip(buffer.getvalue(), tmp_path / "out", max_bytes=1 << 20, max_files=MAX_ZIP_FILES)
    assert not (tmp_path / "evil.txt").exists()


def test_zip_links_counts_and_sizes_are_bounded(tmp_path):
    caps = {"max_bytes": 1000, "max_files": MAX_ZIP_FILES}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("config.json")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(CheckpointError, match="link"):
        unzip(buffer.getvalue(), tmp_path / "a", **caps)
    many = io.BytesIO()
    with zipfile.ZipFile(many, "w") as archive:
        for i in range(MAX_ZIP_FILES + 1):
            archive.writestr(f"f{i}", "x")
    with pytest.raises(CheckpointError, match="at most"):
        unzip(many.getvalue(), tmp_path / "b", **caps)
    big = io.BytesIO()
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", "0" * 5000)  # compresses to a few bytes: a zip bomb in miniature
    with pytest.raises(CheckpointError, match="unpacks to more than"):
        unzip(big.getvalue(), tmp_path / "c", **caps)
    with pytest.raises(CheckpointError, match="cannot be read"):
        unzip(b"PK not a zip", tmp_path / "d", **caps)
