"""Header formats of the archives the snapshot lists (tar headers, the zip central directory), parsed from bytes
with every length checked; used by ``toolemu.toolkits.sandbox.archives`` only."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

BLOCK = 512
"""A tar block."""
MAX_NAME = 4096
"""Longest member name accepted; a longer one makes the archive malformed."""
STORED, DEFLATED = 0, 8
"""The zip compression methods read."""
_FULL32, _FULL16 = 0xFFFFFFFF, 0xFFFF


class Malformed(Exception):
    """The archive is not what its magic bytes say (corrupt, truncated): it has no members."""


class ZipEntry(NamedTuple):
    """One central directory entry (zip64 values already applied)."""

    name: str
    flags: int
    method: int
    crc: int
    packed: int
    size: int
    mode: int
    offset: int


def zip_entries(data: bytes) -> Iterator[ZipEntry]:
    """The central directory's entries, in order, parsed lazily (zip64 sizes and offsets included)."""
    eocd = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - _FULL16))
    if eocd < 0 or eocd + 22 > len(data):
        raise Malformed("no zip end-of-directory record")
    count, cd_size, cd_offset = struct.unpack_from("<HII", data, eocd + 10)
    if _FULL32 in (cd_size, cd_offset) or count == _FULL16:
        locator = eocd - 20
        if locator < 0 or not data.startswith(b"PK\x06\x07", locator):
            raise Malformed("zip64 sizes without a zip64 locator")
        (record,) = struct.unpack_from("<Q", data, locator + 8)
        if not data.startswith(b"PK\x06\x06", record) or record + 56 > len(data):
            raise Malformed("bad zip64 end-of-directory record")
        cd_size, cd_offset = struct.unpack_from("<QQ", data, record + 40)
    pos, end = cd_offset, cd_offset + cd_size
    if end > len(data):
        raise Malformed("zip directory runs past the end")
    while pos < end:
        if pos + 46 > end or not data.startswith(b"PK\x01\x02", pos):
            raise Malformed("bad zip directory entry")
        (flags, method, crc, packed, size, name_len, extra_len, comment_len, attrs,
         offset) = struct.unpack_from("<8xHH4xIIIHHH4xII", data, pos)
        raw = data[pos + 46 : pos + 46 + name_len]
        extra = data[pos + 46 + name_len : pos + 46 + name_len + extra_len]
        pos += 46 + name_len + extra_len + comment_len
        if _FULL32 in (packed, size, offset):
            size, packed, offset = _zip64_extra(extra, size, packed, offset)
        name = raw.decode("utf-8", "replace") if flags & 0x800 else raw.decode("cp437")
        yield ZipEntry(name, flags, method, crc, packed, size, attrs >> 16, offset)
    if pos != end:
        raise Malformed("zip directory size does not match its entries")


def _zip64_extra(extra: bytes, size: int, packed: int, offset: int) -> tuple[int, int, int]:
    """Replaces the 0xFFFFFFFF fields with the zip64 extra field's values (in its fixed order)."""
    pos = 0
    while pos + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, pos)
        if kind == 0x0001:
            values = list(struct.unpack_from(f"<{length // 8}Q", extra, pos + 4))
            fields = [size, packed, offset]
            for i, value in enumerate(fields):
                if value == _FULL32:
                    if not values:
                        raise Malformed("zip64 extra field too short")
                    fields[i] = values.pop(0)
            return fields[0], fields[1], fields[2]
        pos += 4 + length
    raise Malformed("zip64 sizes without a zip64 extra field")


def tar_number(field: bytes) -> int:
    if field[:1] == b"\x80":  # GNU base-256 (positive only)
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError as e:
        raise Malformed("bad tar number") from e


def checksum_ok(header: bytes) -> bool:
    try:
        stored = tar_number(header[148:156])
    except Malformed:
        return False
    blanked = header[:148] + b" " * 8 + header[156:]
    signed = sum(struct.unpack("512b", blanked))
    return stored in (sum(blanked), signed)


def cstring(raw: bytes) -> str:
    text = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    if len(text) > MAX_NAME:
        raise Malformed("name too long")
    return text


def header_name(header: bytes) -> str:
    name = cstring(header[:100])
    if header[257:263] == b"ustar\x00":  # POSIX ustar: a prefix folder (GNU uses those bytes for times)
        prefix = cstring(header[345:500])
        if prefix:
            return f"{prefix}/{name}"
    return name


def pax_path(meta: bytes) -> str | None:
    """The ``path`` record of a pax header (``"<len> path=<value>\\n"`` records), read left to right."""
    pos, path = 0, None
    while pos < len(meta):
        space = meta.find(b" ", pos, pos + 20)
        if space < 0 or not meta[pos:space].isdigit():
            raise Malformed("bad pax record")
        end = pos + int(meta[pos:space])
        if end <= space + 1 or end > len(meta) or meta[end - 1 : end] != b"\n":
            raise Malformed("bad pax record length")
        key, _, value = meta[space + 1 : end - 1].partition(b"=")
        if key == b"path":
            path = cstring(value)
        pos = end
    return path
