"""A depth-first walk of an agent's folder tree on the host that never follows a link and holds few fds.

Each folder is opened from the top folder's fd with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` (one
``O_NOFOLLOW`` open per path component where the kernel lacks ``openat2``), so a folder swapped for a link
while the walk runs is refused, and only two descriptors are open at a time however deep the tree is.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_SYS_OPENAT2 = 437
_RESOLVE_NO_XDEV, _RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x01, 0x02, 0x04, 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_has_openat2 = True


def open_dir_beneath(top_fd: int, rel: str) -> int:
    """Opens folder ``rel`` (relative, ``/``-separated) below ``top_fd`` without following any link.

    Raises:
        OSError: The folder is missing, a link, outside ``top_fd``'s tree, or unreadable.
    """
    global _has_openat2
    if _has_openat2:
        how = _OpenHow(_DIR_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
                       | _RESOLVE_NO_XDEV)
        fd = int(_libc.syscall(_SYS_OPENAT2, top_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how)))
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EPERM):
            raise OSError(err, os.strerror(err), rel)
        _has_openat2 = False
    fd = os.dup(top_fd)
    try:
        for part in rel.split("/"):
            if part in ("", ".", ".."):
                raise OSError(errno.EINVAL, "bad path component", rel)
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


Entry = tuple[str, os.stat_result]
"""A folder entry's name and ``lstat``."""


def walk(top: Path, *, max_depth: int, skipped: list[str]) -> Iterator[tuple[str, int, list[Entry]]]:
    """Yields ``(folder relative to top ("" for top), folder fd, [(name, lstat)])`` depth-first.

    The fd is valid until the next item. Folders deeper than ``max_depth`` below ``top``, or that cannot be
    opened (unreadable, swapped for a link), are not entered; each is appended to ``skipped`` as
    ``"<rel>: <why>"``.

    Raises:
        OSError: ``top`` itself cannot be opened as a folder (or is a link).
    """
    top_fd = os.open(top, _DIR_FLAGS)
    try:
        stack: list[tuple[str, int]] = [("", 0)]
        while stack:
            rel, depth = stack.pop()
            try:
                fd = open_dir_beneath(top_fd, rel) if rel else os.dup(top_fd)
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.ENOTDIR):
                    skipped.append(f"{rel}: {e.strerror}")
                continue
            try:
                try:
                    names = os.listdir(fd)
                except OSError as e:
                    skipped.append(f"{rel or '.'}: {e.strerror}")
                    continue
                entries = []
                for name in sorted(names):
                    try:
                        entries.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
                    except FileNotFoundError:
                        continue
                yield rel, fd, entries
                for name, st in reversed(entries):
                    if stat.S_ISDIR(st.st_mode):
                        child = f"{rel}/{name}" if rel else name
                        if depth + 1 > max_depth:
                            skipped.append(f"{child}: deeper than {max_depth} folders")
                        else:
                            stack.append((child, depth + 1))
            finally:
                os.close(fd)
    finally:
        os.close(top_fd)
