"""File snapshots of an episode root, taken on the host without ever following a link the agent made.

A snapshot is bounded: at most ``snapshot_max_files`` records, ``snapshot_max_total_hash_bytes`` read for
hashing, ``snapshot_max_text_bytes`` of text kept, ``snapshot_max_depth`` folders deep and
``snapshot_timeout_s`` of wall time (see ``SandboxConfig``). What does not fit is left out and said in
``Snapshot.overflow`` (``FinalState.snapshot_overflow``); it never raises for the agent's doing.

Archives (tar, tar.gz/.bz2/.xz, zip, one gzip/bzip2/xz stream, by their magic bytes) up to
``snapshot_archive_max_bytes`` have their members listed in ``FileRecord.members`` from the bytes read for
hashing, within ``snapshot_archive_max_members`` and ``snapshot_archive_max_unpacked_bytes``
(``toolemu.toolkits.sandbox.archives``); what those limits leave out is said in the overflow too.

Hashes: a file without holes hashes as the hex SHA-256 of its bytes. A file with holes (sparse) is read by
its data ranges only (``SEEK_DATA``/``SEEK_HOLE``), so a 32 GB hole costs nothing; its hash is
``sparse:<hex>``, the SHA-256 of, for each data range in order, ``b"<offset>:<length>\\n"`` then the range's
bytes, and finally ``b"size:<st_size>\\n"``. Two files with the same bytes at the same places hash the same.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from pathlib import Path
from typing import NamedTuple

from toolemu.core.errors import SandboxError
from toolemu.core.trajectory import NOT_HASHED, ArchiveMember, FileRecord
from toolemu.toolkits.sandbox._walk import walk
from toolemu.toolkits.sandbox.archives import ArchiveKind, ArchiveLimits, archive_kind, list_members
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS
from toolemu.toolkits.sandbox.config import SandboxConfig

_CHUNK = 1 << 20
_SHOWN_SKIPS = 3
UNREADABLE = "unreadable"
"""``sha256`` of a file the host could not open (a non-root host and a file the agent made private)."""


class Snapshot(NamedTuple):
    """The records of one snapshot and what was left out."""

    files: tuple[FileRecord, ...]
    """One record per regular file and symlink, sorted by path."""
    overflow: str | None
    """Why some files are missing or unhashed, or ``None`` when the snapshot is complete."""


class _Budget:
    """What one snapshot may still spend."""

    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        self.hash_left = cfg.snapshot_max_total_hash_bytes
        self.text_left = cfg.snapshot_max_text_bytes
        self.deadline = time.monotonic() + cfg.snapshot_timeout_s
        self.notes: list[str] = []
        self.archive_notes: list[str] = []

    def expired(self) -> bool:
        return time.monotonic() > self.deadline


def snapshot_root(root: Path, limits: SandboxConfig) -> Snapshot:
    """Returns one record per regular file and symlink under the root's writable folders, within ``limits``.

    Walks with directory file descriptors and no-follow opens (``toolemu.toolkits.sandbox._walk``) so a
    symlink (or a folder swapped for one while the walk runs) can never lead the host outside ``root``. A
    symlink's record hashes ``symlink:<target>`` and has no content; a file the host may not open has
    ``sha256`` ``UNREADABLE``; FIFOs, sockets and devices are left out (they hold no content).

    Raises:
        SandboxError: When the root itself cannot be read.
    """
    budget = _Budget(limits)
    records: list[FileRecord] = []
    skipped: list[str] = []
    full = False
    for name in WRITABLE_DIRS:
        top = root / name
        if full or not top.is_dir() or top.is_symlink():
            continue
        try:
            for rel, dirfd, entries in walk(top, max_depth=limits.snapshot_max_depth, skipped=skipped):
                folder = f"/{name}/{rel}" if rel else f"/{name}"
                if budget.expired():
                    budget.notes.append(
                        f"the snapshot time limit of {limits.snapshot_timeout_s:g} s passed after {len(records)} "
                        "files; the rest were left out"
                    )
                    full = True
                    break
                for entry, st in entries:
                    if len(records) >= limits.snapshot_max_files:
                        budget.notes.append(
                            f"more than {limits.snapshot_max_files} files; the rest were left out (raise "
                            "SandboxConfig.snapshot_max_files to keep them)"
                        )
                        full = True
                        break
                    record = _record(dirfd, entry, f"{folder}/{entry}", st, budget)
                    if record is not None:
                        records.append(record)
                if full:
                    break
        except OSError as e:
            raise SandboxError(f"could not snapshot sandbox root {root}: {e}") from e
    if skipped:
        more = f" and {len(skipped) - _SHOWN_SKIPS} more" if len(skipped) > _SHOWN_SKIPS else ""
        budget.notes.append(f"folders not entered: {'; '.join(skipped[:_SHOWN_SKIPS])}{more}")
    if budget.archive_notes:
        shown = budget.archive_notes
        more = f" and {len(shown) - _SHOWN_SKIPS} more" if len(shown) > _SHOWN_SKIPS else ""
        budget.notes.append(f"archive members not all listed: {'; '.join(shown[:_SHOWN_SKIPS])}{more}")
    records.sort(key=lambda r: r.path)
    return Snapshot(tuple(records), "; ".join(dict.fromkeys(budget.notes)) or None)


def _record(dirfd: int, name: str, path: str, st: os.stat_result, budget: _Budget) -> FileRecord | None:
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=dirfd).encode("utf-8", "surrogateescape")
        except OSError:
            return None
        link_hash = hashlib.sha256(b"symlink:" + target).hexdigest()
        return FileRecord(path=path, sha256=link_hash, size=len(target))
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    except OSError:
        return FileRecord(path=path, sha256=UNREADABLE, size=st.st_size, mode=stat.S_IMODE(st.st_mode))
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            return None
        record = _hash_file(fd, path, fst.st_size, budget)
        return record.model_copy(update={"mode": stat.S_IMODE(fst.st_mode)})
    finally:
        os.close(fd)


def _data_ranges(fd: int, size: int) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each data range, or ``None`` when the file system cannot tell (read it whole)."""
    ranges: list[tuple[int, int]] = []
    pos = 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    break
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            if end <= start:
                break
            ranges.append((start, end))
            pos = end
    except OSError:
        return None
    return ranges


def _hash_file(fd: int, path: str, size: int, budget: _Budget) -> FileRecord:
    cfg = budget.cfg
    ranges = _data_ranges(fd, size)
    sparse = ranges is not None and ranges != ([(0, size)] if size else [])
    if ranges is None:
        ranges = [(0, size)] if size else []
    if budget.hash_left <= 0 or budget.expired():
        budget.notes.append("the snapshot's hashing budget or time ran out; later files are NOT_HASHED")
        return FileRecord(path=path, sha256=NOT_HASHED, size=size)
    digest = hashlib.sha256()
    head = bytearray()
    read = 0
    want_text = not sparse and size <= cfg.snapshot_max_content_bytes and size <= budget.text_left
    # An archive small enough to list keeps every byte read (never reopened: the fd is the no-follow one).
    may_list = not sparse and 0 < size and cfg.snapshot_archive_max_bytes > 0
    kind = None
    whole = bytearray()
    cut = False
    for start, end in ranges:
        if sparse:
            digest.update(f"{start}:{end - start}\n".encode())
        offset = start
        while offset < end:
            if read >= cfg.snapshot_max_hash_bytes:
                cut = True
                break
            if budget.hash_left <= 0 or budget.expired():
                budget.notes.append("the snapshot's hashing budget or time ran out; later files are NOT_HASHED")
                return FileRecord(path=path, sha256=NOT_HASHED, size=size)
            n = min(_CHUNK, end - offset, cfg.snapshot_max_hash_bytes - read, budget.hash_left)
            chunk = os.pread(fd, n, offset)
            if not chunk:
                break
            if offset == 0 and may_list:
                kind = archive_kind(chunk)
                if kind is not None and size > cfg.snapshot_archive_max_bytes:
                    budget.archive_notes.append(f"{path}: over {cfg.snapshot_archive_max_bytes:,} bytes; not opened")
                    kind = None
            digest.update(chunk)
            if want_text:
                head += chunk
            if kind is not None:
                whole += chunk
            offset += len(chunk)
            read += len(chunk)
            budget.hash_left -= len(chunk)
        if cut:
            break
    if sparse:
        digest.update(f"size:{size}\n".encode())
    content: str | None = None
    if want_text and not cut and len(head) == size:
        try:
            content = head.decode("utf-8")
            budget.text_left -= size
        except UnicodeDecodeError:
            content = None
    hexdigest = digest.hexdigest()
    if cut:
        sha = f"partial-{cfg.snapshot_max_hash_bytes}:{hexdigest}"
    else:
        sha = f"sparse:{hexdigest}" if sparse else hexdigest
    members = _members(bytes(whole), kind, path, budget) if kind is not None and not cut and len(whole) == size else ()
    return FileRecord(path=path, sha256=sha, size=size, content=content, members=members)


def _members(data: bytes, kind: ArchiveKind, path: str, budget: _Budget) -> tuple[ArchiveMember, ...]:
    """Lists an archive's members, charging what it unpacks to the hashing budget and its text to the text one."""
    cfg = budget.cfg
    limits = ArchiveLimits(
        max_members=cfg.snapshot_archive_max_members,
        max_unpacked=max(0, min(cfg.snapshot_archive_max_unpacked_bytes, budget.hash_left)),
        max_content=cfg.snapshot_max_content_bytes,
        text_left=max(0, budget.text_left),
        deadline=budget.deadline,
    )
    listing = list_members(data, kind, path, limits)
    budget.hash_left -= listing.unpacked
    budget.text_left -= listing.text
    if listing.note is not None:
        budget.archive_notes.append(listing.note)
    return listing.members
