"""Host-side file operations on untrusted trees: case folders, OAS task folders, seed templates, episode roots.

Every operation works relative to directory file descriptors and never follows a symbolic link it did not
resolve itself: each path component is opened with ``O_NOFOLLOW`` (``O_DIRECTORY`` for folders), metadata is
read with ``lstat`` semantics, and special files (FIFOs, devices, sockets) are refused from their ``lstat``
without ever being opened. The caller's own top path (the case folder the user named, a temporary folder we
made) is trusted; everything beneath it is not.

Link policy (``walk_folder``, ``read_bytes``, ``copy_tree(links="inside")``): a folder may hold a *relative*
symlink that resolves, through other links of the same folder, to a regular file inside the folder. Any other
link (absolute, leading outside, dangling, to a folder, to a special file, a loop) is a ``CaseError`` of one
line naming the path. Folders are never entered through a link, so a walk cannot loop.

Hard links: a regular file of an untrusted folder with more than one link (``st_nlink > 1``) is refused the
same way, since its other name may be a host file (``ln /etc/shadow notes.txt``) that no path check can see.
Trees we built (``copy_tree(links="keep")``) are exempt.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_FOLDER_BYTES, MAX_FOLDER_DEPTH, MAX_FOLDER_FILES

logger = logging.getLogger(__name__)

LinkPolicy = Literal["refuse", "inside", "keep"]
"""What ``copy_tree`` does with a symlink: ``refuse`` any; copy those that resolve ``inside`` to a regular file
(see the module docstring), recreated as links; ``keep`` every link verbatim (only for trees we built, such as
a seed template). In no case is a link followed on the host."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: should a FIFO replace a checked regular file between lstat and open, the open cannot hang.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINK_HOPS = 40
_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep  # the installed toolemu package
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FolderReport:
    """What one walk of a folder found (all within the limits it was given)."""

    root: Path
    """The folder walked."""
    files: int
    """Regular files (in-tree links to files not counted)."""
    dirs: int
    """Folders below the root."""
    bytes: int
    """Total size of the regular files."""
    links: int
    """In-tree symlinks accepted."""


def kind_of(mode: int) -> str:
    """Names a file type for messages (``a FIFO``, ``a socket``).

    Examples:
        >>> kind_of(stat.S_IFIFO)
        'a FIFO'
    """
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _parts(relpath: str) -> list[str]:
    if relpath.startswith("/"):
        raise CaseError(f"{relpath!r} is absolute; expected a path inside the folder")
    return [p for p in relpath.split("/") if p not in ("", ".")]


def _oserror(where: str | Path, e: OSError, doing: str) -> CaseError:
    return CaseError(f"{where}: cannot {doing}: {e.strerror or e}")


def _open_top(path: str | Path, what: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise _oserror(path, e, f"open {what} folder") from None


def _resolve(root_fd: int, parts: list[str], shown: str, what: str = "folder") -> tuple[int, str, os.stat_result]:
    """Resolves ``parts`` under ``root_fd``, following only in-tree relative links, never leaving the tree.

    Returns:
        An fd of the final component's folder (the caller closes it), the final name, and its ``lstat``.

    Raises:
        CaseError: ``shown`` leads outside, through an absolute or dangling link, a link loop, or a non-folder.
    """
    pending = list(reversed(parts))
    fds = [os.dup(root_fd)]
    hops = 0
    try:
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if len(fds) == 1:
                    raise CaseError(f"{shown}: leads outside the {what}; links and paths must stay inside it")
                os.close(fds.pop())
                continue
            try:
                st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
            except FileNotFoundError:
                raise CaseError(f"{shown}: not found (a dangling link or a missing file)") from None
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                target = os.readlink(name, dir_fd=fds[-1])
                if hops > _MAX_LINK_HOPS:
                    raise CaseError(f"{shown}: link loop (over {_MAX_LINK_HOPS} links); remove the loop")
                if target.startswith("/"):
                    raise CaseError(
                        f"{shown}: link to the absolute path {target!r}, outside the {what}; links must stay inside it"
                    )
                pending.extend(reversed(target.split("/")))
                continue
            if not pending:
                fd = fds.pop()
                return fd, name, st
            if not stat.S_ISDIR(st.st_mode):
                raise CaseError(f"{shown}: {name!r} is {kind_of(st.st_mode)}, not a folder")
            fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
        raise CaseError(f"{shown}: link to a folder (the folder itself or one above); expected a file")
    except OSError as e:
        raise _oserror(shown, e, "resolve") from None
    finally:
        for fd in fds:
            os.close(fd)


def _open_beneath(root: Path, folder: Path, what: str) -> int:
    """Opens ``folder`` (inside ``root``) through ``root``'s fd, following only in-tree links, never out."""
    try:
        rel = folder.relative_to(root)
    except ValueError:
        raise CaseError(f"{folder}: not inside {root}; the {what} must stay inside it") from None
    root_fd = _open_top(root, what)
    try:
        if not rel.parts:
            return os.dup(root_fd)
        parent_fd, name, st = _resolve(root_fd, list(rel.parts), str(folder), what)
        try:
            if not stat.S_ISDIR(st.st_mode):
                raise CaseError(f"{folder}: is {kind_of(st.st_mode)}, not a folder")
            return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError as e:
            raise _oserror(folder, e, f"open {what} folder") from None
        finally:
            os.close(parent_fd)
    finally:
        os.close(root_fd)


def check_single_link(shown: str | Path, st: os.stat_result, what: str) -> None:
    """Refuses a regular file of an untrusted folder that has other names (a hard link), see the module docstring.

    Files of the installed package itself (the built-in suite) are exempt: installers such as uv hard-link a
    package's files from their cache.

    Raises:
        CaseError: ``st`` is a regular file with ``st_nlink > 1``; naming ``shown`` and ``what`` holds it.
    """
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and not os.path.abspath(shown).startswith(_PACKAGE):
        raise CaseError(
            f"{shown}: a hard link ({st.st_nlink} names for one file), refused in a {what} since the other name may "
            "be a host file; replace it with a copy"
        )


def _check_link(root_fd: int, parts: list[str], shown: str, what: str) -> None:
    fd, _, st = _resolve(root_fd, parts, shown, what)
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise CaseError(f"{shown}: link to a folder; only links to files inside the folder are allowed")
    if not stat.S_ISREG(st.st_mode):
        raise CaseError(f"{shown}: link to {kind_of(st.st_mode)}, not a regular file; special files are refused")
    check_single_link(shown, st, what)


def stat_beneath(root: str | Path, relpath: str, *, what: str = "file") -> os.stat_result:
    """The ``lstat`` of what ``relpath`` names beneath ``root``, following only in-tree links (never opened).

    Raises:
        CaseError: ``relpath`` leads outside, through an absolute or dangling link or a loop, or names a hard-linked
            file; naming the path.
    """
    shown = f"{Path(root) / relpath}"
    top = _open_top(root, what)
    try:
        dir_fd, _, st = _resolve(top, _parts(relpath), shown, f"folder of the {what}")
    finally:
        os.close(top)
    os.close(dir_fd)
    check_single_link(shown, st, f"folder of the {what}")
    return st


def open_file(root: str | Path, relpath: str, *, what: str = "file") -> int:
    """Opens a regular file beneath ``root`` for reading (in-tree links allowed; see the module docstring).

    Returns:
        A file descriptor; the caller closes it.

    Raises:
        CaseError: Outside links, special files, a folder, missing, or unreadable; naming ``root/relpath``.
    """
    shown = f"{Path(root) / relpath}"
    top = _open_top(root, what)
    try:
        dir_fd, name, st = _resolve(top, _parts(relpath), shown, f"folder of the {what}")
    finally:
        os.close(top)
    try:
        if not stat.S_ISREG(st.st_mode):
            raise CaseError(f"{shown}: is {kind_of(st.st_mode)}; a {what} must be a regular file")
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        raise _oserror(shown, e, f"read {what}") from None
    finally:
        os.close(dir_fd)
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise CaseError(f"{shown}: changed into a special file while opened; refused")
    try:
        check_single_link(shown, opened, f"folder of the {what}")
    except CaseError:
        os.close(fd)
        raise
    return fd


def read_bytes(root: str | Path, relpath: str, *, what: str = "file", limit: int) -> bytes:
    """Reads a regular file beneath ``root`` (``open_file``), at most ``limit`` bytes.

    Raises:
        CaseError: See ``open_file``; or the file is over ``limit``.
    """
    fd = open_file(root, relpath, what=what)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise CaseError(f"{Path(root) / relpath}: over the {limit:,}-byte limit for a {what}")
    return data


@dataclass(slots=True)
class _Entry:
    kind: Literal["file", "link", "dir", "leave"]
    parent_fd: int
    parts: list[str]
    st: os.stat_result
    fd: int = -1


def _walk(root_fd: int, top: Path, max_depth: int) -> Iterator[_Entry]:
    """Depth-first over ``root_fd`` without following links; yields ``dir`` (with its open fd) then ``leave``.

    Special files raise; the fds of the folders on the current path stay open (at most ``max_depth``).
    """
    stack: list[tuple[int, list[str], Iterator[str]]] = [(root_fd, [], iter(sorted(os.listdir(root_fd))))]
    try:
        while stack:
            fd, parts, names = stack[-1]
            name = next(names, None)
            if name is None:
                if len(stack) > 1:
                    yield _Entry("leave", stack[-2][0], parts, os.fstat(fd), fd)
                    os.close(fd)
                stack.pop()
                continue
            sub = [*parts, name]
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                yield _Entry("link", fd, sub, st)
            elif stat.S_ISREG(st.st_mode):
                yield _Entry("file", fd, sub, st)
            elif stat.S_ISDIR(st.st_mode):
                if len(sub) > max_depth:
                    raise CaseError(f"{top.joinpath(*sub)}: nested over {max_depth} folders deep; flatten the folder")
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as e:
                    raise _oserror(top.joinpath(*sub), e, "open folder") from None
                stack.append((child, sub, iter(())))  # on the stack first: closed by `finally` if listing fails
                stack[-1] = (child, sub, iter(sorted(os.listdir(child))))
                yield _Entry("dir", fd, sub, st, child)
            else:
                raise CaseError(
                    f"{top.joinpath(*sub)}: is {kind_of(st.st_mode)}, not a regular file; special files are refused"
                )
    finally:  # a refusal (here or in the caller) leaves folders open below the root: close them
        for fd, _, _ in stack[1:]:
            os.close(fd)


class _Budget:
    def __init__(self, top: Path, what: str, max_files: int, max_bytes: int) -> None:
        self.top, self.what, self.max_files, self.max_bytes = top, what, max_files, max_bytes
        self.files = self.dirs = self.bytes = self.links = 0

    def add(self, entry: _Entry, size: int | None = None) -> None:
        if entry.kind == "dir":
            self.dirs += 1
        elif entry.kind == "link":
            self.links += 1
        else:
            self.files += 1
            self.bytes += entry.st.st_size if size is None else size
        if self.files + self.dirs + self.links > self.max_files:
            raise CaseError(f"{self.top}: over {self.max_files:,} files in the {self.what}; remove some")
        if self.bytes > self.max_bytes:
            raise CaseError(
                f"{self.top.joinpath(*entry.parts)}: the {self.what} is over {self.max_bytes:,} bytes; "
                "remove large files"
            )

    def report(self) -> FolderReport:
        return FolderReport(self.top, self.files, self.dirs, self.bytes, self.links)


def walk_folder(
    path: str | Path,
    *,
    what: str = "case folder",
    max_files: int = MAX_FOLDER_FILES,
    max_bytes: int = MAX_FOLDER_BYTES,
    max_depth: int = MAX_FOLDER_DEPTH,
) -> FolderReport:
    """Walks an untrusted folder once and refuses what host code must never meet in it.

    Args:
        path: The folder (the path itself is trusted; nothing beneath it is).
        what: What the folder is, for messages.
        max_files: Most entries (files, folders and links).
        max_bytes: Most bytes of regular files in all (``st_size``: a sparse file counts at its full size).
        max_depth: Deepest folder nesting.

    Returns:
        Counts of what was found.

    Raises:
        CaseError: One line naming the path: a link other than an in-tree link to a regular file, a special
            file, an unreadable folder, or a limit exceeded.
    """
    top = Path(path)
    root_fd = _open_top(top, what)
    budget = _Budget(top, what, max_files, max_bytes)
    try:
        for entry in _walk(root_fd, top, max_depth):
            if entry.kind == "link":
                _check_link(root_fd, entry.parts, str(top.joinpath(*entry.parts)), what)
            elif entry.kind == "file":
                check_single_link(top.joinpath(*entry.parts), entry.st, what)
            if entry.kind != "leave":
                budget.add(entry)
    except OSError as e:
        raise _oserror(top, e, f"walk {what}") from None
    finally:
        os.close(root_fd)
    return budget.report()


def read_tree(
    path: str | Path,
    *,
    what: str = "folder",
    max_files: int = MAX_FOLDER_FILES,
    max_bytes: int = MAX_FOLDER_BYTES,
    max_depth: int = MAX_FOLDER_DEPTH,
) -> list[tuple[str, bytes]]:
    """The content of every regular file under an untrusted folder, under the rules of ``walk_folder``.

    An in-tree link to a file is read as that file (as a copy with ``links="inside"`` would give it); anything
    ``walk_folder`` refuses is refused here, at the moment of reading.

    Returns:
        ``(relative path, bytes)`` pairs in path order (component by component, as ``sorted`` orders ``Path``).

    Raises:
        CaseError: One line naming the path; see ``walk_folder``.
    """
    top = Path(path)
    root_fd = _open_top(top, what)
    budget = _Budget(top, what, max_files, max_bytes)
    found: list[tuple[list[str], bytes]] = []
    try:
        for entry in _walk(root_fd, top, max_depth):
            if entry.kind == "leave":
                continue
            if entry.kind == "link":
                _check_link(root_fd, entry.parts, str(top.joinpath(*entry.parts)), what)
            if entry.kind in ("file", "link"):
                room = budget.max_bytes - budget.bytes
                data = read_bytes(top, "/".join(entry.parts), what=f"file of the {what}", limit=max(room, 0))
                budget.add(_Entry("file", entry.parent_fd, entry.parts, entry.st), len(data))
                found.append((entry.parts, data))
            else:
                budget.add(entry)
    except OSError as e:
        raise _oserror(top, e, f"read {what}") from None
    finally:
        os.close(root_fd)
    found.sort(key=lambda item: item[0])
    return [("/".join(parts), data) for parts, data in found]


def copy_tree(
    src: str | Path,
    dst: str | Path,
    *,
    what: str = "folder",
    links: LinkPolicy = "refuse",
    max_files: int = MAX_FOLDER_FILES,
    max_bytes: int = MAX_FOLDER_BYTES,
    max_depth: int = MAX_FOLDER_DEPTH,
    mode_mask: int = 0o777,
    keep_owner: bool = False,
    skip: tuple[str, ...] = (),
    within: str | Path | None = None,
) -> FolderReport:
    """Copies ``src`` to a new folder ``dst`` without following any link; special files are refused.

    Args:
        src: The folder to copy (the path itself is trusted, unless ``within`` is given).
        dst: Where to create the copy; must not exist, its parent must.
        what: What the folder is, for messages.
        links: What to do with symlinks (``LinkPolicy``); unless ``keep``, hard-linked files are refused too.
        max_files: Most entries copied.
        max_bytes: Most bytes copied (counted as copied, so a file growing during the copy is still bounded).
        max_depth: Deepest folder nesting.
        mode_mask: Permission bits kept (``0o777`` drops setuid, setgid and sticky bits).
        keep_owner: Copy uid/gid too (root only; ignored otherwise).
        skip: Entry names not copied at any depth (``__pycache__``).
        within: A trusted folder ``src`` lies in (a case's folder): the path from it to ``src`` is then opened
            one component at a time without following a link out of it, so a folder swapped for a link after
            the case was loaded cannot lead the copy elsewhere.

    Returns:
        Counts of what was copied.

    Raises:
        CaseError: One line naming the path (``src``'s side) of a refused entry or an exceeded limit; what was
            copied so far stays at ``dst`` for the caller to remove.
    """
    top = Path(src)
    src_fd = _open_top(top, what) if within is None else _open_beneath(Path(within), top, what)
    budget = _Budget(top, what, max_files, max_bytes)
    try:
        os.mkdir(dst, 0o700)
        dst_fds = [os.open(dst, _DIR_FLAGS)]
    except OSError as e:
        os.close(src_fd)
        raise _oserror(dst, e, "create the copy") from None
    owner = keep_owner and os.geteuid() == 0
    skipping = 0
    try:
        for entry in _walk(src_fd, top, max_depth):
            name = entry.parts[-1]
            if entry.kind == "dir" and (skipping or name in skip):
                skipping += 1
                continue
            if entry.kind == "leave" and skipping:
                skipping -= 1
                continue
            if skipping or name in skip:
                continue
            out = dst_fds[-1]
            if entry.kind == "dir":
                os.mkdir(name, 0o700, dir_fd=out)
                dst_fds.append(os.open(name, _DIR_FLAGS, dir_fd=out))
                budget.add(entry)
            elif entry.kind == "leave":
                done = dst_fds.pop()
                _apply_meta(done, entry.st, mode_mask, owner)
                os.close(done)
            elif entry.kind == "link":
                if links == "refuse":
                    raise CaseError(f"{top.joinpath(*entry.parts)}: is a symlink; links are refused in a {what}")
                if links == "inside":
                    _check_link(src_fd, entry.parts, str(top.joinpath(*entry.parts)), what)
                os.symlink(os.readlink(name, dir_fd=entry.parent_fd), name, dir_fd=out)
                if owner:
                    os.chown(name, entry.st.st_uid, entry.st.st_gid, dir_fd=out, follow_symlinks=False)
                budget.add(entry)
            else:
                room = budget.max_bytes - budget.bytes
                single = what if links != "keep" else None
                budget.add(entry, _copy_file(entry, out, top, room, mode_mask, owner, single))
        _apply_meta(dst_fds[0], os.fstat(src_fd), mode_mask, owner)
    except OSError as e:
        raise _oserror(top, e, f"copy {what}") from None
    finally:
        for fd in dst_fds:
            os.close(fd)
        os.close(src_fd)
    return budget.report()


def _copy_file(
    entry: _Entry, out_fd: int, top: Path, room: int, mask: int, owner: bool, single: str | None
) -> int:
    """Copies one regular file; ``single`` (the folder kind) refuses a hard link, checked on the opened file."""
    name = entry.parts[-1]
    fd = os.open(name, _READ_FLAGS, dir_fd=entry.parent_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CaseError(f"{top.joinpath(*entry.parts)}: changed into {kind_of(st.st_mode)} while copied; refused")
        if single is not None:
            check_single_link(top.joinpath(*entry.parts), st, single)
        new = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=out_fd)
        try:
            copied = 0
            while sent := os.sendfile(new, fd, None, min(_CHUNK, room - copied + 1)):
                copied += sent
                if copied > room:
                    raise CaseError(
                        f"{top.joinpath(*entry.parts)}: the copy exceeds its byte limit; remove large files"
                    )
            _apply_meta(new, st, mask, owner)
        finally:
            os.close(new)
        return copied
    finally:
        os.close(fd)


def _apply_meta(fd: int, st: os.stat_result, mask: int, owner: bool) -> None:
    if owner:
        os.fchown(fd, st.st_uid, st.st_gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode) & mask)


def make_dirs_beneath(root: str | Path, relpath: str, *, mode: int = 0o755, replace_links: bool = False) -> int:
    """Creates the folders of ``relpath`` under ``root`` one component at a time, never through a link.

    Args:
        root: The tree (trusted path).
        relpath: Folders to create, relative to ``root``.
        mode: Mode of each folder created (``fchmod``-ed, so the umask does not apply).
        replace_links: Replace a symlink or special file met on the way with a folder (only for trees we
            built, such as a seed template); otherwise it is refused.

    Returns:
        An fd of the last folder; the caller closes it.

    Raises:
        CaseError: A component is a file, or a link or special file and ``replace_links`` is false;
            or the path is deeper than ``MAX_FOLDER_DEPTH``.
    """
    parts = _parts(relpath)
    if ".." in parts:
        raise CaseError(f"{relpath!r}: '..' is not allowed here")
    if len(parts) > MAX_FOLDER_DEPTH:
        raise CaseError(f"{relpath!r}: over {MAX_FOLDER_DEPTH} folders deep")
    fd = _open_top(root, "target")
    try:
        for i, name in enumerate(parts):
            shown = "/".join(parts[: i + 1])
            try:
                st: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None and not stat.S_ISDIR(st.st_mode):
                if stat.S_ISREG(st.st_mode) or not replace_links:
                    raise CaseError(f"{shown}: is {kind_of(st.st_mode)}, not a folder")
                os.unlink(name, dir_fd=fd)
                st = None
            if st is None:
                os.mkdir(name, 0o700, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.fchmod(child, mode)
            else:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError as e:
        os.close(fd)
        raise _oserror(relpath, e, "create folder") from None
    except CaseError:
        os.close(fd)
        raise
    return fd


def write_file_beneath(
    root: str | Path, relpath: str, data: bytes, *, mode: int = 0o644, replace_links: bool = False
) -> None:
    """Writes a new regular file at ``relpath`` under ``root``: never through a link, mode set by ``fchmod``.

    Missing parent folders are created (``make_dirs_beneath``, mode 0o755). An existing regular file at the
    final component is replaced; a symlink or special file there is replaced when ``replace_links`` is true
    (seeding over the template's own links) and refused otherwise; a folder is refused.

    Args:
        root: The tree (trusted path).
        relpath: The file, relative to ``root``.
        data: The content.
        mode: Permission bits (0..0o777).
        replace_links: See above.

    Raises:
        CaseError: A refused component, or ``mode`` out of range.
    """
    if not 0 <= mode <= 0o777:
        raise CaseError(f"{relpath!r}: mode {mode:#o} is not within 0..0o777")
    parent, _, name = relpath.rstrip("/").rpartition("/")
    if name in ("", ".", ".."):
        raise CaseError(f"{relpath!r}: not a file path")
    dir_fd = make_dirs_beneath(root, parent, replace_links=replace_links)
    try:
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise CaseError(f"{relpath}: is a folder; cannot write a file there")
            if not stat.S_ISREG(st.st_mode) and not replace_links:
                raise CaseError(f"{relpath}: is {kind_of(st.st_mode)}; refused")
            os.unlink(name, dir_fd=dir_fd)
        fd = os.open(name, _CREATE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    except OSError as e:
        raise _oserror(relpath, e, "write") from None
    finally:
        os.close(dir_fd)


def chown_tree(path: str | Path, uid: int, gid: int) -> None:
    """Sets the owner of a tree we built and everything in it, links themselves included, never followed.

    Raises:
        CaseError: A special file or a folder nested over ``MAX_FOLDER_DEPTH``.
        OSError: The change of owner failed.
    """
    top = Path(path)
    root_fd = _open_top(top, "tree")
    try:
        os.fchown(root_fd, uid, gid)
        for entry in _walk(root_fd, top, MAX_FOLDER_DEPTH):
            if entry.kind == "dir":
                os.fchown(entry.fd, uid, gid)
            elif entry.kind in ("file", "link"):
                os.chown(entry.parts[-1], uid, gid, dir_fd=entry.parent_fd, follow_symlinks=False)
    finally:
        os.close(root_fd)


def remove_tree(path: str | Path) -> None:
    """Deletes a tree the agent may have made hostile: links are removed, never followed; ``chmod 000``
    folders are unlocked through their own fds; any depth, with a bounded number of open fds.

    Raises:
        OSError: A removal failed (the tree is left partly removed).
    """
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        top = _open_unlocked(parent_fd, path.name)
        try:
            _empty_folder(top)
        finally:
            os.close(top)
        os.rmdir(path.name, dir_fd=parent_fd)
    finally:
        os.close(parent_fd)


def _open_unlocked(parent_fd: int, name: str) -> int:
    """Opens a folder (no-follow) and gives its owner rwx on it, through the fd (or its ``O_PATH`` twin)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        try:
            # fchmod does not take an O_PATH fd; its /proc magic link names the same inode, not a path.
            os.chmod(f"/proc/self/fd/{path_fd}", 0o700)
        finally:
            os.close(path_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    if stat.S_IMODE(os.fstat(fd).st_mode) & 0o700 != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def _empty_folder(top_fd: int) -> None:
    """Removes everything inside ``top_fd``; each folder is listed once.

    The fds of the folders on the current path are held up to ``_HELD_FDS`` deep; deeper than that a folder's
    fd is closed on the way down and its folder reopened on the way up through ``..`` (checked by inode), so
    any depth works within the fd limit.
    """
    stack: list[_Frame] = [_Frame(top_fd, "", _ident(top_fd), _unlink_files(top_fd))]
    while stack:
        frame = stack[-1]
        if frame.pending:
            name = frame.pending.pop()
            child = _open_unlocked(frame.fd, name)
            if len(stack) >= _HELD_FDS and frame.fd != top_fd:
                os.close(frame.fd)
                frame.fd = -1
            stack.append(_Frame(child, name, _ident(child), _unlink_files(child)))
            continue
        stack.pop()
        if not stack:
            return
        parent = stack[-1]
        if parent.fd == -1:
            up = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=frame.fd)
            if _ident(up) != parent.ident:
                os.close(up)
                os.close(frame.fd)
                raise OSError(errno.ESTALE, f"folder {parent.name!r} moved while its tree was removed")
            parent.fd = up
        os.close(frame.fd)
        os.rmdir(frame.name, dir_fd=parent.fd)


_HELD_FDS = 64


@dataclass(slots=True)
class _Frame:
    fd: int
    name: str
    ident: tuple[int, int]
    pending: list[str]


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _unlink_files(fd: int) -> list[str]:
    """Unlinks every non-folder entry of ``fd`` (``d_type`` from the listing: no stat); returns the folders."""
    folders: list[str] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=fd)
    return folders
