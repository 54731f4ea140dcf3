"""Unzip an untrusted archive with every byte counted while it inflates, for every compression method.

``zipfile`` bounds a deflate member's output per read, but inflates a bzip2 or LZMA chunk in
one call: a 172 KB zip holding 10 GiB of bzip2 fills memory before any size check runs. Here
each member's raw (compressed) bytes are read and inflated with ``max_length``, so no call
returns more than :data:`CHUNK` bytes, and the total is checked after every chunk, as is the member's own
declared size (a header that lies is refused at its first chunk past it) and its ratio to the compressed
bytes (:data:`MAX_RATIO`). Names are
checked first (relative, no ``..``, no link, not too long, no file that is also a folder), and
before that the central directory's size from the end record: ``zipfile`` builds an object per
entry it lists, so a directory of millions of tiny entries is refused before it is read.
No Streamlit here.
"""

from __future__ import annotations

import bz2
import copy
import io
import lzma
import re
import stat
import struct
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Iterator

from core import CheckpointError

CHUNK = 1 << 20  # the most bytes one inflate call may return
#: A member may inflate to at most this many times its compressed size once past ``RATIO_FLOOR`` bytes: weights
#: compress to about 0.9 of their size and tokenizer files to a third, zeros to a thousandth (a zip bomb).
MAX_RATIO, RATIO_FLOOR = 100, 16 << 20
MAX_MEMBER_NAME_CHARS = 200
ENTRY_BYTES = 1024  # the most central-directory bytes one entry may take (46 + name + extra + comment)


def unzip(data: bytes | Path, target: Path, *, max_bytes: int, max_files: int) -> None:
    """Write the regular files of the zip ``data`` (its bytes, or the file holding them) under ``target``.

    Raises:
        CheckpointError: not a zip, a central directory too large for ``max_files``, empty, too many
            files, an unsafe or clashing name, an encrypted or unknown member, a bad CRC, or more than
            ``max_bytes`` once inflated.
    """
    try:
        source = io.BytesIO(data) if isinstance(data, bytes) else open(data, "rb")
    except OSError as error:
        raise CheckpointError(f"the .zip file cannot be read ({error.strerror})") from None
    with source:
        _check_directory_size(source, max_files)
        try:
            archive = zipfile.ZipFile(source)
            members = [m for m in archive.infolist() if not m.is_dir()]
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
            raise CheckpointError(f"the .zip file cannot be read ({error})") from None
        _unzip_members(archive, members, target, max_bytes, max_files)


def _check_directory_size(source: BinaryIO, max_files: int) -> None:
    """Refuse a central directory larger than ``max_files`` entries can take, read from the end record."""
    try:
        end = zipfile._EndRecData(source)  # as zipfile reads it; zip64 included
    except (OSError, struct.error, ValueError):
        end = None
    if end is None:
        raise CheckpointError("the .zip file cannot be read (no end of central directory)")
    if end[zipfile._ECD_SIZE] > max_files * ENTRY_BYTES:
        raise CheckpointError(f"the .zip file's directory ({end[zipfile._ECD_SIZE]:,} bytes) lists more files "
                              f"than the {max_files} accepted")
    source.seek(0)


def _unzip_members(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], target: Path, max_bytes: int,
                   max_files: int) -> None:
    """Write ``members`` under ``target``, every byte counted while it inflates."""
    if not members:
        raise CheckpointError("the .zip file holds no files")
    if len(members) > max_files:
        raise CheckpointError(f"the .zip file holds {len(members)} files; at most {max_files} are accepted")
    paths = [member_parts(m) for m in members]
    _check_clashes(paths)
    written = 0
    for member, parts in zip(members, paths):
        if member.file_size > max_bytes - written:  # the declared size, before anything is read
            raise _too_big(max_bytes)
        path = target.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        crc = inflated = 0
        with open(path, "wb") as sink:
            for chunk in _inflate(archive, member):
                written, inflated = written + len(chunk), inflated + len(chunk)
                if written > max_bytes:
                    raise _too_big(max_bytes)
                if inflated > member.file_size:  # a lying header: stopped at its first chunk, not at the cap
                    raise CheckpointError(f"the .zip file's {member.filename[:80]!r} inflates past the "
                                          f"{member.file_size:,} bytes its header declares")
                if inflated > max(RATIO_FLOOR, MAX_RATIO * member.compress_size):
                    raise CheckpointError(f"the .zip file's {member.filename[:80]!r} inflates to more than {MAX_RATIO} "
                                          "times its compressed size: refused as a zip bomb")
                crc = zlib.crc32(chunk, crc)
                sink.write(chunk)
        if crc != member.CRC:
            raise CheckpointError(f"the .zip file's {member.filename[:80]!r} is damaged (bad CRC)")


def _too_big(max_bytes: int) -> CheckpointError:
    return CheckpointError(f"the .zip file unpacks to more than {max_bytes // 2**20} MB")


def member_parts(member: zipfile.ZipInfo) -> tuple[str, ...]:
    """The member's path parts, after refusing absolute, escaping, linked or over-long names."""
    name = member.filename
    path = PurePosixPath(name)
    if len(name) > MAX_MEMBER_NAME_CHARS:
        raise CheckpointError(f"the .zip file holds a name of {len(name)} characters "
                              f"(at most {MAX_MEMBER_NAME_CHARS}): {name[:40]!r}…")
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or "\\" in name or "\0" in name:
        raise CheckpointError(f"the .zip file holds an absolute path: {name[:80]!r}")
    if any(part in ("..", "", ".") for part in path.parts) or not path.parts:
        raise CheckpointError(f"the .zip file holds a path leaving its folder: {name[:80]!r}")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise CheckpointError(f"the .zip file holds a link: {name[:80]!r}")
    if member.flag_bits & 0x1:
        raise CheckpointError(f"the .zip file holds an encrypted file: {name[:80]!r}")
    return path.parts


def _check_clashes(paths: list[tuple[str, ...]]) -> None:
    """Refuse two members of one name, or a file that another member uses as a folder."""
    files = ["/".join(p) for p in paths]
    folders = {"/".join(p[:i]) for p in paths for i in range(1, len(p))}
    twice = {f for f in files if files.count(f) > 1}
    clash = sorted(twice | (set(files) & folders))
    if clash:
        raise CheckpointError(f"the .zip file holds {clash[0][:80]!r} twice (as two files, or as a file and a folder)")


class _Zlib:
    """zlib's raw-deflate decompressor with bz2's ``needs_input`` interface."""

    def __init__(self) -> None:
        self._inner, self._tail = zlib.decompressobj(-15), b""

    @property
    def needs_input(self) -> bool:
        return not self._tail

    @property
    def eof(self) -> bool:
        return self._inner.eof

    def decompress(self, data: bytes, max_length: int) -> bytes:
        out = self._inner.decompress(self._tail + data, max_length)
        self._tail = self._inner.unconsumed_tail
        return out


def _decompressor(raw: BinaryIO, method: int, name: str):
    if method == zipfile.ZIP_DEFLATED:
        return _Zlib()
    if method == zipfile.ZIP_BZIP2:
        return bz2.BZ2Decompressor()
    if method == zipfile.ZIP_LZMA:  # zip's LZMA: version (2 bytes), properties size (2), properties, raw LZMA1
        head = raw.read(4)
        size = struct.unpack("<H", head[2:4])[0] if len(head) == 4 else 0
        try:
            lzma1 = lzma._decode_filter_properties(lzma.FILTER_LZMA1, raw.read(size))  # as zipfile does
            return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1])
        except (lzma.LZMAError, ValueError):
            raise CheckpointError(f"the .zip file's {name[:80]!r} has a damaged LZMA header") from None
    raise CheckpointError(f"the .zip file's {name[:80]!r} uses compression method {method}; "
                          "stored, deflate, bzip2 and LZMA are accepted")


def _inflate(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's bytes, at most :data:`CHUNK` per piece, however well they compress."""
    raw_info = copy.copy(member)
    raw_info.compress_type, raw_info.file_size, raw_info.CRC = zipfile.ZIP_STORED, member.compress_size, None
    try:
        with archive.open(raw_info) as raw:  # the compressed bytes as stored
            if member.compress_type == zipfile.ZIP_STORED:
                while chunk := raw.read(CHUNK):
                    yield chunk
                return
            inflater = _decompressor(raw, member.compress_type, member.filename)
            while not inflater.eof:
                data = raw.read(1 << 16) if inflater.needs_input else b""
                if inflater.needs_input and not data:
                    raise CheckpointError(f"the .zip file's {member.filename[:80]!r} is truncated")
                yield inflater.decompress(data, CHUNK)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, lzma.LZMAError) as error:
        raise CheckpointError(f"the .zip file's {member.filename[:80]!r} cannot be read ({error})") from None
