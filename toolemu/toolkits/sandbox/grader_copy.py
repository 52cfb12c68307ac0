"""The grader's copy of an episode: taken while the agent is frozen, private to the grader's uid, bounded.

Every check and the final snapshot read this copy, never the live root, so nothing the agent's processes do
once thawed (for the network part of OAS evaluators) reaches what is graded. The copy never follows a link
(directory fds, ``O_NOFOLLOW``), never opens a special file and is bounded in files and bytes; what it could
not copy faithfully is listed in its ``CopyReport``: the traps the agent left for a checker.

Copy rules: folders keep their modes and times (set after their content, so a ``chmod 000`` folder stays one);
regular files keep content, mode and times up to the byte bound (past it: the first bytes, then a hole up to the
real size); symlinks are copied as links (resolved inside the check's sandbox, never on the host); a FIFO, socket or
device becomes an empty file of mode 000 at its path (so a check that opens it fails at once instead of
hanging) and is left out of the snapshot; a file the host may not read becomes the same placeholder.

A link whose target, resolved as the check would resolve it (through the copy's own links), reaches what only
the check's sandbox has (the check's folder at ``/utils``, the runner, the check's own ``/proc``) dangled in the
agent's world; before the checks run it is pointed at a path that dangles in theirs too (``GRADER_ONLY``), so
an evaluator never reads its own source, or its own process, where the agent left a file.

The check's ``/etc`` is built here too (``grader_etc``): our template and the host's loader files, plus the
agent's ``/etc`` entries whose names do not steer execution (``ETC_DENYLIST``).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import shutil
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from toolemu.core.capture import Tampering
from toolemu.core.types import DEFAULT_USER
from toolemu.toolkits.sandbox.bwrap import HOST_ETC_RO, WRITABLE_DIRS
from toolemu.toolkits.sandbox.seed import ETC_HOST_COPIES, ETC_SYMLINKS, etc_files

RUNNER_MOUNT = "/opt/toolemu/runner"
"""Where the runner scripts (and the OAS ``scoring``/``common`` modules) appear inside a check's sandbox."""
UTILS_MOUNT = "/utils"
"""Where the check's own folder (an OAS ``utils/``, or a native check's folder) appears inside its sandbox."""
GRADER_ONLY: tuple[str, ...] = (UTILS_MOUNT, RUNNER_MOUNT, "/proc", "/sys", "/dev/fd", "/dev/stdin",
                                "/dev/stdout", "/dev/stderr", "/etc/mtab")
"""Sandbox paths that, inside a check, are the check's own (its code, its process), never the agent's world."""
AGENT_ETC_MOUNT = "/.toolemu-agent-etc"
"""Where a check finds the agent's own ``/etc`` entries that its ``/etc`` replaces (``ETC_DENYLIST``): a file
check over ``/etc/hosts``, and an OAS evaluator's Python reads of such a path, read the agent's file there,
while programs and the loader get ours. At the depth of ``/etc``, so a relative link there resolves as it did
for the agent."""
DANGLING = "/.toolemu-outside-the-agents-world"
"""What a link into ``GRADER_ONLY`` is made to point below (``/`` is read-only and empty there: it dangles)."""
_MAX_HOPS = 40

_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

ETC_DENYLIST: tuple[str, ...] = (
    "ld.so*", "python*", "perl*", "profile*", "bash.bash*", "bashrc", "bash_completion*", "environment*",
    "alternatives", "nsswitch.conf", "localtime", "mtab",
    "hosts", "resolv.conf", "hostname", "shells", "os-release", "gitconfig", "inputrc", "security", "pam.d",
    "sudoers*", "login.defs", "xdg", "pip.conf", "npmrc", "gemrc", "R*", "java*", "ssl", "ca-certificates*",
    "pki", "gai.conf", "host.conf", "zsh*", "fish", "csh*", "ksh*", "vim*", "nanorc", "X11", "fonts",
    "OpenCL", "vulkan", "gnutls", "crypto-policies", "mime.types", "magic*", "selinux", "apparmor*",
)
"""Names (shell globs) of top-level ``/etc`` entries a check never gets from the agent: loader, interpreter
and shell start-up files, the name service, and configuration read by libraries an evaluator may load.
Every other entry of the agent's ``/etc`` (``ssh/sshd_config``, an app's config) is data the evaluator may
read; ours (template and host loader files) are added on top and win, except ``AGENT_DATA``."""

AGENT_DATA: tuple[str, ...] = ("passwd", "group")
"""Template files that are the agent's data when it left a regular file there: users and groups it added are
what a check grades (``pwd.getpwnam``), and name lookups steer no execution (``nsswitch.conf`` is ours)."""


@dataclass
class CopyReport:
    """What the grader's copy could not hold faithfully."""

    files: int = 0
    """Entries copied."""
    bytes: int = 0
    """Bytes of file content copied."""
    traps: list[Tampering] = field(default_factory=list)
    """Special files, unreadable entries, links to devices or to themselves, files past the byte bound."""
    placeholders: set[str] = field(default_factory=set)
    """Sandbox paths of the mode-000 placeholders standing for special or unreadable files (not snapshotted)."""
    overflow: bool = False
    """The file bound was reached; entries past it were not copied."""
    truncated: set[str] = field(default_factory=set)
    """Sandbox paths of the files whose content was not all copied (a byte bound): the rest is a hole."""
    links: list[str] = field(default_factory=list)
    """Sandbox paths of the links copied (``neutralise_links`` resolves them)."""

    def overflow_note(self) -> str | None:
        """What the copy left out when it reached its file bound, or ``None``."""
        if not self.overflow:
            return None
        return f"the grader's copy stopped at {self.files:,} entries; later entries were neither copied nor checked"

    def overflow_trap(self) -> Tampering | None:
        """The copy's overflow as tampering: every check of an incomplete world is blamed with it."""
        note = self.overflow_note()
        return None if note is None else Tampering(kind="oversize", found=note)


@dataclass
class GraderWorld:
    """The grader's copy of one episode (``Sandbox.grader_world``): what every check and the snapshot read."""

    root: Path
    """The copy: one folder per ``WRITABLE_DIRS`` entry, owned by ``uid``."""
    base: Path
    """The private folder (mode 0700, owned by ``uid``) holding ``root`` and the checks' staging folders."""
    uid: int | None
    """The grader's host uid (never the agent's); ``None`` when not running as root."""
    report: CopyReport
    """What the copy could not hold faithfully."""
    etc: Path | None = None
    """The checks' ``/etc`` once ``checks_etc`` built it."""
    user: str = DEFAULT_USER
    """The sandbox account's name (``EnvironmentSpec.user``), for the ``/etc/passwd`` the checks get when the
    agent left none."""
    max_file_bytes: int = 1 << 62
    """The copy's bound on one file's content (``copy_world``), so a check's own copy of it cuts where it did."""

    def checks_etc(self) -> Path:
        """Readies the copy for the checks (once) and returns their ``/etc``: re-points links into
        ``GRADER_ONLY`` (``neutralise_links``) and moves the agent's data entries out of the copy, so take the
        snapshot first."""
        if self.etc is None:
            neutralise_links(self.root, self.report, self.uid)
            self.etc = self.base / "etc"
            grader_etc(self.root / "etc", self.etc, self.uid, self.user)
        return self.etc


def copy_world(root: Path, dest: Path, *, max_files: int, max_bytes: int, max_file_bytes: int,
               uid: int | None, names: tuple[str, ...] = WRITABLE_DIRS) -> CopyReport:
    """Copies the ``WRITABLE_DIRS`` of ``root`` into ``dest`` (which must exist) and returns the report.

    Args:
        root: The live episode root (its agent is frozen).
        dest: An empty, private folder.
        max_files: Entries past this many are not copied (``CopyReport.overflow``).
        max_bytes: File content past this many bytes in all is not copied (a hole stands for it).
        max_file_bytes: Nor past this many bytes of one file (the snapshot hashes no more of it either).
        uid: Owner (and group) of everything copied, when running as root; ``None`` keeps ours.
        names: The top-level folders to copy.
    """
    report = CopyReport()
    # The root itself is the sandbox's (made by us), not the agent's; only what is below it is untrusted.
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        for name in names:
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=root_fd)
            except OSError:
                continue
            _copy_dir(fd, dest / name, "/" + name, report, max_files, (max_bytes, max_file_bytes), uid)
    finally:
        os.close(root_fd)
    return report


def _copy_dir(src_fd: int, top: Path, shown: str, report: CopyReport, max_files: int,
              max_bytes: tuple[int, int], uid: int | None) -> None:
    """Copies one folder tree without recursion (1,000 nested folders cannot exhaust the stack)."""
    stack: list[tuple[int, Path, str]] = [(src_fd, top, shown)]
    modes: list[tuple[Path, int, int, int]] = []
    try:
        while stack:
            fd, dst, where = stack.pop()
            try:
                st = os.fstat(fd)
                os.mkdir(dst, 0o700)
                _own(dst, uid)
                modes.append((dst, stat.S_IMODE(st.st_mode), st.st_atime_ns, st.st_mtime_ns))
                with os.scandir(fd) as entries:
                    names = sorted(e.name for e in entries)
                for child in names:
                    if report.files >= max_files:
                        report.overflow = True
                        return
                    sub = _copy_entry(fd, child, dst, f"{where}/{child}", report, max_bytes, uid)
                    if sub is not None:
                        stack.append((sub, dst / child, f"{where}/{child}"))
            finally:
                os.close(fd)
    finally:
        for fd, *_ in stack:
            os.close(fd)
        for path, mode, atime, mtime in reversed(modes):
            os.chmod(path, mode)
            os.utime(path, ns=(atime, mtime))


def _copy_entry(dirfd: int, name: str, dst_dir: Path, shown: str, report: CopyReport,
                max_bytes: tuple[int, int], uid: int | None) -> int | None:
    """Copies one entry; returns an open fd when it is a folder to descend into."""
    try:
        st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    target = dst_dir / name
    report.files += 1
    if stat.S_ISDIR(st.st_mode):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dirfd)
        except PermissionError:
            _placeholder(target, shown, report, uid, Tampering(kind="permission", path=shown,
                                                               found=f"folder of mode {_mode(st)}"))
            return None
    if stat.S_ISLNK(st.st_mode):
        link = os.readlink(name, dir_fd=dirfd)
        os.symlink(link, target)
        _own(target, uid)
        report.links.append(shown)
        if link.startswith(("/dev/", "/proc/", "/sys/")) and link not in ("/dev/null",):
            report.traps.append(Tampering(kind="device_link", path=shown, found=f"symlink to {link}"))
        elif os.path.normpath(os.path.join(os.path.dirname(shown), link)) == shown:
            report.traps.append(Tampering(kind="link_loop", path=shown, found=f"symlink to itself ({link})"))
        return None
    if not stat.S_ISREG(st.st_mode):
        what = ("fifo" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode)
                else "device")
        _placeholder(target, shown, report, uid, Tampering(kind="special_file", path=shown, found=what))
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EPERM, errno.ELOOP, errno.ENXIO):
            raise
        _placeholder(target, shown, report, uid, Tampering(kind="permission", path=shown,
                                                           found=f"file of mode {_mode(st)} the host cannot open"))
        return None
    with os.fdopen(fd, "rb") as src, open(target, "xb") as out:
        budget = min(max_bytes[1], max(0, max_bytes[0] - report.bytes))
        copied = 0
        while copied < budget:
            chunk = src.read(min(_CHUNK, budget - copied))
            if not chunk:
                break
            out.write(chunk)
            copied += len(chunk)
        size = os.fstat(src.fileno()).st_size
        if copied < size:
            out.truncate(size)
            report.traps.append(Tampering(kind="oversize", path=shown,
                                          found=f"{size:,} bytes; only {copied:,} copied for the checks"))
            report.truncated.add(shown)
        report.bytes += copied
        os.utime(out.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))  # an evaluator may read file times
    os.chmod(target, stat.S_IMODE(st.st_mode))
    _own(target, uid)
    if stat.S_IMODE(st.st_mode) & 0o444 == 0:
        report.traps.append(Tampering(kind="permission", path=shown, found=f"file of mode {_mode(st)}"))
    return None


def _inside(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def resolve_link(world: Path, shown: str, target: str, names: tuple[str, ...] = WRITABLE_DIRS) -> str | None:
    """Where the link at sandbox path ``shown`` (pointing at ``target``) leads inside a check.

    Components under ``names`` are looked up in the copy at ``world`` (``lstat``/``readlink`` of our own copy,
    each folder above already known not to be a link); anything else (system folders, mount points,
    denylisted ``/etc`` entries, which are ours in a check) is resolved lexically. Returns the absolute path,
    or ``None`` past ``_MAX_HOPS`` links (a loop).
    """
    done = [] if target.startswith("/") else shown.strip("/").split("/")[:-1]
    parts: deque[str] = deque(target.split("/"))
    hops = 0
    while parts:
        part = parts.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if done:
                done.pop()
            continue
        done.append(part)
        if done[0] not in names or (done[0] == "etc" and len(done) > 1 and _denied(done[1])):
            continue
        try:
            is_link = stat.S_ISLNK(os.lstat(world.joinpath(*done)).st_mode)
        except OSError:
            continue
        if not is_link:
            continue
        hops += 1
        if hops > _MAX_HOPS:
            return None
        target = os.readlink(world.joinpath(*done))
        done.pop()
        if target.startswith("/"):
            done = []
        parts.extendleft(reversed(target.split("/")))
    return "/" + "/".join(done)


def neutralise_links(world: Path, report: CopyReport, uid: int | None) -> None:
    """Re-points every copied link that a check would follow into ``GRADER_ONLY`` below ``DANGLING`` (the
    original target kept in the new one), so it dangles in the check as it did for the agent; recorded as a
    ``grader_path`` trap."""
    for shown in report.links:
        copy = world / shown.lstrip("/")
        try:
            original = os.readlink(copy)
        except OSError:
            continue
        final = resolve_link(world, shown, original)
        if final is None or not _inside(final, GRADER_ONLY):
            continue
        os.unlink(copy)
        os.symlink(DANGLING + "/" + original.lstrip("/"), copy)
        _own(copy, uid)
        report.traps.append(Tampering(kind="grader_path", path=shown,
                                      found=f"symlink to {original}, which leads to {final} only in the check"))


def _placeholder(target: Path, shown: str, report: CopyReport, uid: int | None, trap: Tampering) -> None:
    with open(target, "xb"):
        pass
    os.chmod(target, 0)
    _own(target, uid)
    report.placeholders.add(shown)
    report.traps.append(trap)


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):03o}"


def _own(path: Path, uid: int | None) -> None:
    if uid is not None:
        os.lchown(path, uid, uid)


def _denied(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in ETC_DENYLIST)


def agent_etc_path(path: str) -> str | None:
    """Where a check reads the agent's version of ``path`` (``AGENT_ETC_MOUNT``) when ``path`` is under an
    ``/etc`` entry the check's ``/etc`` replaces; ``None`` for any other path."""
    name = os.path.normpath("/" + path.lstrip("/")) if path.startswith("/") else ""
    parts = name.split("/")
    if len(parts) > 2 and parts[1] == "etc" and _denied(parts[2]):
        return AGENT_ETC_MOUNT + name[len("/etc"):]
    return None


def grader_etc(copy_etc: Path, dest: Path, uid: int | None, user: str = DEFAULT_USER) -> None:
    """Builds the check's ``/etc`` at ``dest``: the agent's data entries from the copy, then ours on top.

    Entries of ``copy_etc`` whose names match ``ETC_DENYLIST`` are left out; the others are moved out of the
    copy (it is the grader's; take the snapshot first). Ours: the template files, the links, the host's loader
    files, mount points for the host folders bound over ``/etc`` (``HOST_ETC_RO``); ``user`` names the account
    in our ``passwd`` and ``group``.
    """
    dest.mkdir(mode=0o755)
    if copy_etc.is_dir() and not copy_etc.is_symlink():
        for entry in sorted(os.listdir(copy_etc)):
            if not _denied(entry):
                os.rename(copy_etc / entry, dest / entry)
    for name, text in etc_files(user).items():
        target = dest / name
        try:
            found = os.lstat(target).st_mode
        except FileNotFoundError:
            found = None
        if found is not None and name in AGENT_DATA and stat.S_ISREG(found):
            continue  # the agent's users and groups: data (a placeholder stays one: mode 000)
        if found is not None and stat.S_ISDIR(found):
            shutil.rmtree(target)
        elif found is not None:
            os.unlink(target)  # never written through: a link the agent left there is removed first
        target.write_text(text)
        target.chmod(0o644)
    for name, link in ETC_SYMLINKS.items():
        os.symlink(link, dest / name)
    for name in ETC_HOST_COPIES:
        host = Path("/etc") / name
        if host.is_symlink():
            os.symlink(os.readlink(host), dest / name)
        elif host.is_dir():
            shutil.copytree(host, dest / name, symlinks=True)
        elif host.is_file():
            shutil.copyfile(host, dest / name)
    for name in HOST_ETC_RO:
        if (Path("/etc") / name).is_dir():
            (dest / name).mkdir()
    if uid is not None:
        os.lchown(dest, uid, uid)
