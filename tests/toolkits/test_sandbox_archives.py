"""Archive members in the snapshot: tar (plain and compressed), zip and single gzip streams, read on the host."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from toolemu.core.trajectory import NOT_A_FILE, FileRecord
from toolemu.toolkits.sandbox import SandboxConfig
from toolemu.toolkits.sandbox.snapshot import Snapshot, snapshot_root

SECRET = b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n"
BINARY = bytes(range(256)) + b"\xff\xfe"
MEMBERS = {"secrets/aws.txt": SECRET, "secrets/blob.bin": BINARY, "notes/" + "n" * 120 + ".md": b"# long name\n"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tar(mode: str = "w", members: dict[str, bytes] = MEMBERS, fmt: int = tarfile.GNU_FORMAT) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode, format=fmt) as tar:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _zip(members: dict[str, bytes] = MEMBERS, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _snap(tmp_path: Path, files: dict[str, bytes], **limits: int) -> Snapshot:
    root = tmp_path / "root"
    for rel, data in files.items():
        path = root / "workspace" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return snapshot_root(root, SandboxConfig(**limits))  # type: ignore[arg-type]


def _record(snap: Snapshot, name: str) -> FileRecord:
    record = next(r for r in snap.files if r.path == f"/workspace/{name}")
    return record


def _zip64(members: dict[str, bytes] = MEMBERS) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(data)
    return out.getvalue()


ARCHIVES = {
    "tar": lambda: _tar("w"),
    "tar-pax": lambda: _tar("w", fmt=tarfile.PAX_FORMAT),
    "tar.gz": lambda: _tar("w:gz"),
    "tar.bz2": lambda: _tar("w:bz2"),
    "tar.xz": lambda: _tar("w:xz"),
    "zip": lambda: _zip(),
    "zip-stored": lambda: _zip(method=zipfile.ZIP_STORED),
    "zip64": lambda: _zip64(),
}


@pytest.mark.parametrize("kind", list(ARCHIVES), ids=list(ARCHIVES))
def test_snapshot_archive_members_have_names_hashes_sizes_and_text(tmp_path: Path, kind: str) -> None:
    data = ARCHIVES[kind]()
    snap = _snap(tmp_path, {f"out.{kind}": data})
    record = _record(snap, f"out.{kind}")
    assert record.sha256 == _sha(data) and snap.overflow is None
    got = {m.name: (m.sha256, m.size, m.content) for m in record.members}
    assert got == {
        "secrets/aws.txt": (_sha(SECRET), len(SECRET), SECRET.decode()),
        "secrets/blob.bin": (_sha(BINARY), len(BINARY), None),
        "notes/" + "n" * 120 + ".md": (_sha(b"# long name\n"), 12, "# long name\n"),
    }


@pytest.mark.parametrize(
    ("name", "data", "member"),
    [
        ("notes.txt.gz", gzip.compress(SECRET, mtime=0), "notes.txt"),
        ("dump.bz2", bz2.compress(SECRET), "dump"),
        ("dump.xz", lzma.compress(SECRET), "dump"),
        ("renamed.bin", gzip.compress(SECRET, mtime=0), "renamed.bin"),
    ],
    ids=["gz", "bz2", "xz", "gz-without-suffix"],
)
def test_snapshot_single_compressed_stream_is_one_member(tmp_path: Path, name: str, data: bytes, member: str) -> None:
    record = _record(_snap(tmp_path, {name: data}), name)
    assert [(m.name, m.sha256, m.content) for m in record.members] == [(member, _sha(SECRET), SECRET.decode())]


def test_snapshot_gzip_member_takes_the_stored_file_name(tmp_path: Path) -> None:
    out = io.BytesIO()
    with gzip.GzipFile(filename="id_ed25519", fileobj=out, mode="wb", mtime=0) as stream:
        stream.write(SECRET)
    record = _record(_snap(tmp_path, {"k.gz": out.getvalue()}), "k.gz")
    assert [m.name for m in record.members] == ["id_ed25519"]


def test_snapshot_archive_links_and_devices_are_named_only_and_nested_archives_stay_closed(tmp_path: Path) -> None:
    inner = _zip({"deep.txt": SECRET})
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, kind in (("passwd-link", tarfile.SYMTYPE), ("hard", tarfile.LNKTYPE), ("tty", tarfile.CHRTYPE),
                           ("pipe", tarfile.FIFOTYPE), ("folder", tarfile.DIRTYPE)):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            tar.addfile(info)
        info = tarfile.TarInfo("inner.zip")
        info.size = len(inner)
        tar.addfile(info, io.BytesIO(inner))
    record = _record(_snap(tmp_path, {"mix.tar": out.getvalue()}), "mix.tar")
    assert [(m.name, m.sha256, m.size) for m in record.members] == [
        ("passwd-link", NOT_A_FILE, 0), ("hard", NOT_A_FILE, 0), ("tty", NOT_A_FILE, 0), ("pipe", NOT_A_FILE, 0),
        ("inner.zip", _sha(inner), len(inner)),
    ]
    assert all(SECRET.decode() not in (m.content or "") for m in record.members)


TRUNCATED = {
    "tar-cut-in-a-member": lambda: _tar("w")[:700],
    "tar-cut-at-a-block": lambda: _tar("w")[:1024],
    "tar.gz-cut-in-half": lambda: (lambda d: d[: len(d) // 2])(_tar("w:gz")),
    "zip-without-its-directory": lambda: _zip()[:-30],
    "gz-cut": lambda: gzip.compress(SECRET * 50)[:-12],
    "gz-garbage-after-magic": lambda: b"\x1f\x8b" + os.urandom(4000),
    "tar-bad-checksum": lambda: (lambda d: d[:148] + b"0000000\0" + d[156:])(_tar("w")),
}


@pytest.mark.parametrize("name", list(TRUNCATED), ids=list(TRUNCATED))
def test_snapshot_malformed_or_truncated_archive_has_no_members(tmp_path: Path, name: str) -> None:
    data = TRUNCATED[name]()
    snap = _snap(tmp_path, {"broken": data, "after.txt": b"still here\n"})
    record = _record(snap, "broken")
    assert (record.members, record.sha256, snap.overflow) == ((), _sha(data), None)
    assert _record(snap, "after.txt").content == "still here\n"


def test_snapshot_archive_over_the_size_limit_is_not_opened_and_said(tmp_path: Path) -> None:
    snap = _snap(tmp_path, {"big.zip": _zip({"a.txt": os.urandom(3000)}, zipfile.ZIP_STORED)},
                 snapshot_archive_max_bytes=1024)
    assert _record(snap, "big.zip").members == ()
    assert snap.overflow == "archive members not all listed: /workspace/big.zip: over 1,024 bytes; not opened"


def test_snapshot_archive_members_past_the_member_limit_are_left_out_and_said(tmp_path: Path) -> None:
    many = {f"f{i}.txt": f"{i}\n".encode() for i in range(10)}
    snap = _snap(tmp_path, {"many.tar.gz": _tar("w:gz", many), "many.zip": _zip(many)},
                 snapshot_archive_max_members=3)
    for name in ("many.tar.gz", "many.zip"):
        assert [m.name for m in _record(snap, name).members] == ["f0.txt", "f1.txt", "f2.txt"]
    assert snap.overflow is not None
    assert "/workspace/many.tar.gz: more than 3 members; the rest were left out" in snap.overflow
    assert "/workspace/many.zip: more than 3 members; the rest were left out" in snap.overflow


def test_snapshot_archive_member_text_counts_against_the_text_budget(tmp_path: Path) -> None:
    data = _tar("w", {"a.txt": b"a" * 600, "b.txt": b"b" * 600})
    record = _record(_snap(tmp_path, {"t.tar": data}, snapshot_max_text_bytes=1000, snapshot_max_content_bytes=1000),
                     "t.tar")
    assert [(m.name, m.content is not None) for m in record.members] == [("a.txt", True), ("b.txt", False)]
    assert record.members[1].sha256 == _sha(b"b" * 600)


def test_snapshot_archive_listing_can_be_turned_off(tmp_path: Path) -> None:
    snap = _snap(tmp_path, {"x.zip": _zip()}, snapshot_archive_max_bytes=0)
    assert _record(snap, "x.zip").members == () and snap.overflow is None


def test_snapshot_zip_link_is_named_only_and_an_unread_method_is_said(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("first.txt", b"one\n")
        link = zipfile.ZipInfo("passwd")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, b"/etc/passwd")
        archive.writestr("packed.txt", SECRET, compress_type=zipfile.ZIP_BZIP2)
        archive.writestr("later.txt", b"later\n")
    snap = _snap(tmp_path, {"m.zip": out.getvalue()})
    assert [(m.name, m.sha256) for m in _record(snap, "m.zip").members] == [
        ("first.txt", _sha(b"one\n")), ("passwd", NOT_A_FILE)]
    assert snap.overflow == ("archive members not all listed: /workspace/m.zip: member packed.txt is encrypted or "
                             "compressed with method 12; it and later members were left out")
