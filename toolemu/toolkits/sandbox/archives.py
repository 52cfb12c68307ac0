"""Members of an archive the agent left (tar, tar.gz/.bz2/.xz, zip, one gzip/bzip2/xz stream), read on the host.

Used by the snapshot (``toolemu.toolkits.sandbox.snapshot``) on bytes it already read for hashing; the archive
is untrusted input. Nothing is extracted to disk and nested archives are not opened. Decompression is capped
(``ArchiveLimits.max_unpacked``: a bomb costs at most the cap), links, devices and FIFOs inside are recorded by
name only (``NOT_A_FILE``), and a malformed or truncated archive has no members. What a limit left out is
said in ``Listing.note``; nothing here raises for the archive's doing.
"""

from __future__ import annotations

import bz2
import hashlib
import lzma
import posixpath
import stat
import struct
import time
import zlib
from typing import Literal, NamedTuple, Protocol

from toolemu.core.trajectory import NOT_A_FILE, ArchiveMember
from toolemu.toolkits.sandbox._archive_formats import (
    BLOCK,
    DEFLATED,
    MAX_NAME,
    STORED,
    Malformed,
    checksum_ok,
    cstring,
    header_name,
    pax_path,
    tar_number,
    zip_entries,
)

ArchiveKind = Literal["tar", "zip", "gzip", "bzip2", "xz"]
"""What an archive's magic bytes say it is."""

XZ_MEMORY_LIMIT = 96 * 1024 * 1024
"""Most memory an xz stream may make its decompressor use (its header chooses the dictionary size)."""

_STEP = 1 << 20  # decompressed bytes per call, so the deadline is looked at between steps
_MAX_META = 64 * 1024  # a GNU long name or a pax header larger than this is malformed
_XZ_MAGIC = b"\xfd7zXZ\x00"
_LATE = "the snapshot time limit passed; later members were left out"


class ArchiveLimits(NamedTuple):
    """What listing one archive may spend."""

    max_members: int
    """Members (files and links) recorded; later ones are left out."""
    max_unpacked: int
    """Bytes decompressed and hashed for its members in all."""
    max_content: int
    """Largest member whose text is kept."""
    text_left: int
    """Text the snapshot may still keep."""
    deadline: float
    """``time.monotonic()`` past which the listing stops."""


class Listing(NamedTuple):
    """The members found and what listing them spent."""

    members: tuple[ArchiveMember, ...]
    """In archive order."""
    unpacked: int
    """Bytes decompressed or hashed (what the listing cost, charged to the snapshot's hashing budget)."""
    text: int
    """Bytes of member text kept."""
    note: str | None
    """What a limit left out, in words; ``None`` when every member is listed (or the archive is malformed)."""


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...
    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ...) -> bytes: ...


class _Stop(Exception):
    """A limit was reached: the members so far stand, and the message says what was left out."""


def archive_kind(head: bytes) -> ArchiveKind | None:
    """Returns what the first bytes of a file say it is, or ``None`` when it is no archive we list.

    Examples:
        >>> archive_kind(b"PK\\x03\\x04rest"), archive_kind(b"\\x1f\\x8b\\x08"), archive_kind(b"plain text")
        ('zip', 'gzip', None)
    """
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"BZh"):
        return "bzip2"
    if head.startswith(_XZ_MAGIC):
        return "xz"
    if len(head) >= BLOCK and head[257:262] == b"ustar":
        return "tar"
    return None


def list_members(data: bytes, kind: ArchiveKind, name: str, limits: ArchiveLimits) -> Listing:
    """Lists the members of archive ``data`` (the whole file) within ``limits``.

    Args:
        data: The archive's bytes.
        kind: ``archive_kind`` of them.
        name: The archive's path, for the notes and for the member name of a single compressed stream
            without a stored name (``notes.txt.gz`` holds ``notes.txt``).
        limits: What listing may spend.
    """
    lister = _Lister(name, limits)
    try:
        if kind == "tar":
            lister.tar(data, cut=False)
        elif kind == "zip":
            lister.zip(data)
        else:
            unpacked, cut = _decompress(data, kind, limits.max_unpacked, limits.deadline)
            lister.read = len(unpacked)
            if archive_kind(unpacked[:BLOCK]) == "tar":
                lister.tar(unpacked, cut=cut)
            elif cut:
                raise _Stop(f"its content passes {limits.max_unpacked:,} bytes unpacked; not listed")
            else:
                lister.add_file(_stream_name(data, kind, name), unpacked)
    except _Stop as e:
        return Listing(tuple(lister.members), lister.spent(), lister.text, f"{name}: {e}")
    # The archive is the agent's bytes: whatever way it is broken, it has no members (never an error of ours).
    except (Malformed, EOFError, OSError, ValueError, IndexError, struct.error, OverflowError):
        return Listing((), 0, 0, None)
    return Listing(tuple(lister.members), lister.spent(), lister.text, None)


class _Lister:
    """Collects members within the limits."""

    def __init__(self, name: str, limits: ArchiveLimits) -> None:
        self.name = name
        self.limits = limits
        self.members: list[ArchiveMember] = []
        self.unpacked = 0
        self.read = 0
        self.text = 0

    def spent(self) -> int:
        """Bytes decompressed or hashed: the members' bytes, or the decompressed stream when larger (a member
        the cap cut was decompressed all the same)."""
        return max(self.unpacked, self.read)

    def room(self) -> None:
        if len(self.members) >= self.limits.max_members:
            raise _Stop(f"more than {self.limits.max_members} members; the rest were left out")
        if time.monotonic() > self.limits.deadline:
            raise _Stop(_LATE)

    def add_file(self, member: str, data: bytes | memoryview) -> None:
        self.room()
        if self.unpacked + len(data) > self.limits.max_unpacked:
            raise _Stop(f"members past {self.limits.max_unpacked:,} bytes unpacked were left out (from {member})")
        self.unpacked += len(data)
        content = None
        if len(data) <= self.limits.max_content and self.text + len(data) <= self.limits.text_left:
            try:
                content = bytes(data).decode("utf-8")
                self.text += len(data)
            except UnicodeDecodeError:
                content = None
        self.members.append(ArchiveMember(name=member, sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                                          content=content))

    def add_special(self, member: str) -> None:
        self.room()
        self.members.append(ArchiveMember(name=member, sha256=NOT_A_FILE, size=0))

    def tar(self, data: bytes, *, cut: bool) -> None:
        """Walks ustar/GNU/pax headers up to the end-of-archive block (an archive without one was truncated);
        ``cut``: ``data`` ends at the unpack cap, not at the archive's end."""
        view = memoryview(data)
        pos = 0
        long_name: str | None = None
        while pos + BLOCK <= len(data):
            header = data[pos : pos + BLOCK]
            if not header.strip(b"\0"):
                return  # the end-of-archive blocks
            if not checksum_ok(header):
                raise Malformed("bad tar header checksum")
            size = tar_number(header[124:136])
            flag = header[156:157]
            start, end = pos + BLOCK, pos + BLOCK + size
            pos = start + -(-size // BLOCK) * BLOCK
            if end > len(data):
                if cut:
                    raise _Stop(f"members past {self.limits.max_unpacked:,} bytes unpacked were left out")
                raise Malformed("tar member runs past the end")
            if flag in (b"L", b"K", b"x", b"g"):
                if size > _MAX_META:
                    raise Malformed("tar meta header too large")
                if flag == b"L":
                    long_name = cstring(data[start:end])
                elif flag == b"x":
                    long_name = pax_path(data[start:end]) or long_name
                continue
            member, long_name = long_name or header_name(header), None
            if flag == b"5" or (flag in (b"0", b"\0") and member.endswith("/")):
                continue
            if flag in (b"0", b"\0", b"7"):
                self.add_file(member, view[start:end])
            else:
                self.add_special(member)
        if cut:
            raise _Stop(f"members past {self.limits.max_unpacked:,} bytes unpacked were left out")
        raise Malformed("tar ends without its end-of-archive block (truncated)")

    def zip(self, data: bytes) -> None:
        """Reads the central directory one entry at a time (never all of it: a 16 MiB directory holds 300,000
        entries) and inflates each stored or deflated member within the cap, checking its CRC."""
        for entry in zip_entries(data):
            if entry.name.endswith("/"):
                continue
            self.room()
            if stat.S_IFMT(entry.mode) and not stat.S_ISREG(entry.mode):
                self.add_special(entry.name)
                continue
            if entry.flags & 0x1 or entry.method not in (STORED, DEFLATED):
                raise _Stop(f"member {entry.name} is encrypted or compressed with method {entry.method}; it and "
                            "later members were left out")
            if not data.startswith(b"PK\x03\x04", entry.offset) or entry.offset + 30 > len(data):
                raise Malformed("zip member without its local header")
            name_len, extra_len = struct.unpack_from("<HH", data, entry.offset + 26)
            start = entry.offset + 30 + name_len + extra_len
            if start + entry.packed > len(data):
                raise Malformed("zip member runs past the end")
            packed = data[start : start + entry.packed]
            left = self.limits.max_unpacked - self.unpacked
            if entry.method == STORED:
                content = packed
            else:
                content = _inflate(packed, left, self.limits.deadline)
            self.read += len(content)
            if len(content) > left:
                raise _Stop(f"members past {self.limits.max_unpacked:,} bytes unpacked were left out (from "
                            f"{entry.name})")
            if len(content) != entry.size or zlib.crc32(content) != entry.crc:
                raise Malformed("zip member size or CRC does not match")
            self.add_file(entry.name, content)


def _inflate(packed: bytes, cap: int, deadline: float) -> bytes:
    """A raw deflate stream's output up to ``cap + 1`` bytes (one past the cap says it was cut)."""
    d = zlib.decompressobj(-zlib.MAX_WBITS)
    out = bytearray()
    feed = packed
    while not d.eof and len(out) <= cap:
        try:
            piece = d.decompress(feed, min(_STEP, cap + 1 - len(out)))  # >= 1: 0 would mean "no bound"
        except zlib.error as e:
            raise Malformed(str(e)) from e
        if not piece and d.unconsumed_tail == feed and not d.eof:
            raise Malformed("deflate stream ends early")
        out += piece
        feed = d.unconsumed_tail
        if time.monotonic() > deadline:
            raise _Stop(_LATE)
    return bytes(out)


def _new_decompressor(kind: ArchiveKind) -> _Decompressor:
    if kind == "gzip":
        return _Gzip()
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=XZ_MEMORY_LIMIT)


class _Gzip:
    """zlib's gzip decoder with the bz2/lzma decompressor interface (input kept between calls)."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""
        self.eof = False
        self.unused_data = b""

    def decompress(self, data: bytes, max_length: int = -1) -> bytes:
        out = self._z.decompress(self._pending + data, max_length)
        self._pending = self._z.unconsumed_tail
        self.eof, self.unused_data = self._z.eof, self._z.unused_data
        return out


_MAGIC: dict[ArchiveKind, bytes] = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": _XZ_MAGIC}


def _decompress(data: bytes, kind: ArchiveKind, cap: int, deadline: float) -> tuple[bytes, bool]:
    """Returns the stream's content up to ``cap`` bytes and whether it was cut there (concatenated streams join).

    Raises:
        Malformed: The stream is corrupt or ends early.
        _Stop: The deadline passed.
    """
    out = bytearray()
    rest = data
    while True:
        d = _new_decompressor(kind)
        feed = rest
        while not d.eof:
            want = min(_STEP, cap + 1 - len(out))  # always >= 1: a max_length of 0 would mean "no bound" to zlib
            try:
                piece = d.decompress(feed, want)
            except lzma.LZMAError as e:
                if "memory" in str(e).lower():
                    raise _Stop(f"its xz stream needs more than {XZ_MEMORY_LIMIT // 2**20} MiB; not listed") from e
                raise Malformed(str(e)) from e
            except (zlib.error, OSError, EOFError) as e:
                raise Malformed(str(e)) from e
            out += piece
            if len(out) > cap:
                return bytes(out[:cap]), True
            if not piece and not feed and not d.eof:
                raise Malformed("compressed stream ends early")
            feed = b""
            if time.monotonic() > deadline:
                raise _Stop(_LATE)
        rest = d.unused_data
        if not rest.startswith(_MAGIC[kind]):
            return bytes(out), False  # trailing bytes that start no stream are ignored, as gzip -d does


def _stream_name(data: bytes, kind: ArchiveKind, path: str) -> str:
    """The name a single gzip stream stores (``FNAME``), else the archive's name without its suffix."""
    if kind == "gzip" and len(data) > 10 and data[3] & 0x08:
        pos = 10
        if data[3] & 0x04:
            pos += 2 + int.from_bytes(data[10:12], "little")
        end = data.find(b"\0", pos, pos + MAX_NAME)
        if end > pos:
            return data[pos:end].decode("latin-1")
    base = posixpath.basename(path)
    for suffix in (".gz", ".gzip", ".bz2", ".xz"):
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return base


