"""Archives the agent leaves to exhaust the snapshot: decompression bombs, member floods, hostile headers.

Each is listed within ``SandboxConfig``'s archive limits (decompression stops at the cap, so a bomb costs at
most the cap), the rest is left out and said in the overflow, and nothing raises out of the snapshot.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import io
import re
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from toolemu.toolkits.sandbox import SandboxConfig
from toolemu.toolkits.sandbox.snapshot import snapshot_root

BOUNDED = "bounded"
"""Listed within the archive limits; what they left out is said in the snapshot overflow."""
NO_MEMBERS = "no-members"
"""Malformed on purpose: the archive has no members, no error, no overflow."""

GIB = 1 << 30
MIB = 1 << 20
CAP = SandboxConfig().snapshot_archive_max_unpacked_bytes


@functools.cache
def _zero_deflate(prefix: bytes = b"") -> tuple[bytes, int]:
    """A raw deflate stream of ``prefix`` then 1 GiB of zeros, and its CRC-32, built without compressing 1 GiB:
    after a full flush each MiB of zeros compresses to the same bytes, so one block is repeated."""
    zeros = bytes(MIB)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH) if prefix else b""
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(prefix)
    for _ in range(GIB // MIB):
        crc = zlib.crc32(zeros, crc)
    return head + first + block * (GIB // MIB - 1) + c.flush(), crc


def _gzip_bomb() -> bytes:
    body, crc = _zero_deflate()
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<II", crc, GIB & 0xFFFFFFFF)


def _tar_gz_bomb() -> bytes:
    info = tarfile.TarInfo("zeros.bin")
    info.size = GIB
    header = info.tobuf(tarfile.GNU_FORMAT)
    body, crc = _zero_deflate(header)
    size = len(header) + GIB
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _zip_bomb() -> bytes:
    """One member, 1 GiB of zeros deflated, written by hand (zipfile would compress the whole GiB)."""
    body, crc = _zero_deflate()
    name = b"zeros.bin"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(body), GIB, len(name), 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(body), GIB,
                          len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(body), 0)
    return local + body + central + end


def _gzip_members() -> bytes:
    return gzip.compress(bytes(MIB), mtime=0) * (GIB // MIB)  # 1,024 concatenated members: one 1 GiB file


def _bz2_streams() -> bytes:
    return bz2.compress(bytes(8 * MIB)) * 128  # 1 GiB in 128 streams of a few dozen bytes each


def _zip_flood() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for i in range(10_000):
            archive.writestr(f"f{i:05}", b"x")
    return out.getvalue()


def _tar_flood() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for i in range(10_000):
            tar.addfile(tarfile.TarInfo(f"f{i:05}"), io.BytesIO(b""))
    return out.getvalue()


def _zip_directory_flood() -> bytes:
    """16 MiB of central directory: 350,000 entries, all naming one local header (an overlapping zip)."""
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"a"
    entry = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0) + b"a"
    count = (SandboxConfig().snapshot_archive_max_bytes - 22 - len(local)) // len(entry)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count & 0xFFFF, count & 0xFFFF, len(entry) * count,
                      len(local), 0)
    return local + entry * count + end


# (id, the archive, the limit's note, members listed)
BOMBS: list[tuple[str, Callable[[], bytes], str, int]] = [
    (f"{BOUNDED}:gzip-stream-1gib", _gzip_bomb, f"its content passes {CAP:,} bytes unpacked; not listed", 0),
    (f"{BOUNDED}:gzip-1024-members-1gib", _gzip_members, f"its content passes {CAP:,} bytes unpacked; not listed",
     0),
    (f"{BOUNDED}:bz2-128-streams-1gib", _bz2_streams, f"its content passes {CAP:,} bytes unpacked; not listed", 0),
    (f"{BOUNDED}:tar-gz-member-1gib", _tar_gz_bomb, f"members past {CAP:,} bytes unpacked were left out", 0),
    (f"{BOUNDED}:zip-member-1gib", _zip_bomb, f"members past {CAP:,} bytes unpacked were left out (from zeros.bin)",
     0),
    (f"{BOUNDED}:zip-10000-members", _zip_flood, "more than 256 members; the rest were left out", 256),
    (f"{BOUNDED}:tar-gz-10000-members", _tar_flood, "more than 256 members; the rest were left out", 256),
    (f"{BOUNDED}:zip-directory-350000-entries", _zip_directory_flood, "more than 256 members; the rest were left out",
     256),
]


@pytest.mark.parametrize(("make", "note", "listed"), [b[1:] for b in BOMBS], ids=[b[0] for b in BOMBS])
def test_archive_bomb_is_listed_within_the_limits(tmp_path: Path, make: Callable[[], bytes], note: str,
                                                  listed: int) -> None:
    data = make()
    assert len(data) < SandboxConfig().snapshot_archive_max_bytes  # small enough to be opened: the cap is what holds
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "bomb").write_bytes(data)
    (tmp_path / "workspace" / "z-after.txt").write_text("after\n")
    snap = snapshot_root(tmp_path, SandboxConfig())
    bomb, after = snap.files
    assert bomb.sha256 == hashlib.sha256(data).hexdigest() and after.content == "after\n"
    assert len(bomb.members) == listed and sum(m.size for m in bomb.members) <= CAP
    assert snap.overflow == f"archive members not all listed: /workspace/bomb: {note}"


def test_archive_bombs_charge_the_snapshot_hashing_budget(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    flood = _tar_gz_bomb()
    for i in range(3):
        (tmp_path / "workspace" / f"b{i}.tgz").write_bytes(flood)
    cfg = SandboxConfig(snapshot_max_total_hash_bytes=8 * MIB, snapshot_archive_max_unpacked_bytes=4 * MIB)
    snap = snapshot_root(tmp_path, cfg)
    assert [len(r.members) for r in snap.files] == [0, 0, 0]
    assert snap.overflow is not None
    caps = [int(n.replace(",", "")) for n in re.findall(r"members past ([\d,]+) bytes", snap.overflow)]
    # the first archive spent its own cap; the later ones found less than that left of the snapshot's budget
    assert caps[0] == 4 * MIB and caps[1:] and all(cap < 4 * MIB for cap in caps[1:]), snap.overflow
    assert len(caps) == 3 or "NOT_HASHED" in snap.overflow


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(tarfile.GNU_FORMAT)


def _one_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.txt", b"secret\n")
    return out.getvalue()


def _pax(records: bytes) -> bytes:
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, len(records)
    block = info.tobuf(tarfile.USTAR_FORMAT)
    member = tarfile.TarInfo("x")
    return block + records + b"\0" * (-len(records) % 512) + member.tobuf(tarfile.USTAR_FORMAT) + b"\0" * 1024


HEADERS: list[tuple[str, Callable[[], bytes]]] = [
    (f"{NO_MEMBERS}:pax-header-over-64k", lambda: _pax(b"%d path=%s\n" % (70_011, b"p" * 70_000))),
    (f"{NO_MEMBERS}:pax-record-length-zero", lambda: _pax(b"0 path=x\n")),
    (f"{NO_MEMBERS}:pax-record-longer-than-header", lambda: _pax(b"999 path=x\n")),
    (f"{NO_MEMBERS}:tar-size-past-the-end", lambda: _header("huge", 10 * GIB) + b"data"),
    (f"{NO_MEMBERS}:zip-directory-offset-past-the-end",
     lambda: (lambda z: z[:-6] + struct.pack("<I", 1 << 31) + z[-2:])(_one_zip())),
    (f"{NO_MEMBERS}:zip-member-crc-wrong",
     lambda: (lambda z, at: z[: at + 16] + b"\0\0\0\0" + z[at + 20 :])(_one_zip(), _one_zip().rfind(b"PK\x01\x02"))),
]


@pytest.mark.parametrize("make", [h[1] for h in HEADERS], ids=[h[0] for h in HEADERS])
def test_hostile_archive_header_gives_no_members_and_no_error(tmp_path: Path, make: Callable[[], bytes]) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "evil").write_bytes(make())
    snap = snapshot_root(tmp_path, SandboxConfig())
    assert [(r.path, r.members) for r in snap.files] == [("/workspace/evil", ())] and snap.overflow is None
