"""File snapshots of an episode root, taken on the host without ever following a link the agent made."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from toolemu.core.errors import SandboxError
from toolemu.core.trajectory import FileRecord
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS

_CHUNK = 1 << 20
UNREADABLE = "unreadable"
"""``sha256`` of a file the host could not open (a non-root host and a file the agent made private)."""


def _raise(error: OSError) -> None:
    raise error


def snapshot_root(
    root: Path, *, max_files: int, max_content_bytes: int, max_hash_bytes: int
) -> tuple[FileRecord, ...]:
    """Returns one record per regular file and symlink under the root's writable folders, sorted by path.

    Walks with directory file descriptors and ``O_NOFOLLOW`` so a symlink (or a folder swapped for one while
    the walk runs) can never lead the host outside ``root``. A symlink's record hashes ``symlink:<target>``
    and has no content. A file larger than ``max_hash_bytes`` has ``sha256`` ``partial-<n>:<hash of the first
    n bytes>``; a file the host may not open has ``sha256`` ``UNREADABLE``.

    Raises:
        SandboxError: When there are more than ``max_files`` entries, or the root cannot be read.
    """
    records: list[FileRecord] = []
    for name in WRITABLE_DIRS:
        top = root / name
        if not top.is_dir() or top.is_symlink():
            continue
        try:
            for dirpath, dirnames, filenames, dirfd in os.fwalk(top, follow_symlinks=False, onerror=_raise):
                rel = os.path.relpath(dirpath, root)
                for entry in (*dirnames, *filenames):
                    record = _record(
                        dirfd, entry, "/" + os.path.join(rel, entry), max_content_bytes, max_hash_bytes
                    )
                    if record is not None:
                        records.append(record)
                        if len(records) > max_files:
                            raise SandboxError(
                                f"snapshot of {root} has more than {max_files} files; raise "
                                "SandboxConfig.snapshot_max_files to snapshot this episode"
                            )
        except OSError as e:
            raise SandboxError(f"could not snapshot sandbox root {root}: {e}") from e
    records.sort(key=lambda r: r.path)
    return tuple(records)


def _record(dirfd: int, name: str, path: str, max_content: int, max_hash: int) -> FileRecord | None:
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(name, dir_fd=dirfd).encode("utf-8", "surrogateescape")
        link_hash = hashlib.sha256(b"symlink:" + target).hexdigest()
        return FileRecord(path=path, sha256=link_hash, size=len(target))
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except FileNotFoundError:
        return None
    except PermissionError:
        return FileRecord(path=path, sha256=UNREADABLE, size=st.st_size)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        digest = hashlib.sha256()
        head = b""
        read = 0
        while read < max_hash:
            chunk = f.read(min(_CHUNK, max_hash - read))
            if not chunk:
                break
            if read < max_content + 1:
                head += chunk[: max_content + 1 - read]
            digest.update(chunk)
            read += len(chunk)
        size = os.fstat(f.fileno()).st_size
    content: str | None = None
    if size <= max_content and len(head) == size:
        try:
            content = head.decode("utf-8")
        except UnicodeDecodeError:
            content = None
    sha = digest.hexdigest() if size <= max_hash else f"partial-{max_hash}:{digest.hexdigest()}"
    return FileRecord(path=path, sha256=sha, size=size, content=content)
