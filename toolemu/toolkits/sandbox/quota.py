"""Resource quotas of a sandbox as a whole: cgroups (v2 or v1) for memory and processes, and a size-capped root.

What applies depends on the host, found once per process by ``detect_cgroups``:

- **cgroup v2**: a writable cgroup whose ``cgroup.subtree_control`` already enables ``memory`` and ``pids``:
  the folder named by ``$TOOLEMU_CGROUP_PARENT`` (e.g. one delegated by ``systemd-run -p Delegate=yes``),
  our own cgroup, or its parent (as root under systemd, a service's slice). Each sandbox and
  each check gets a child with ``memory.max``, ``memory.swap.max`` 0 and ``pids.max``.
- **cgroup v1**: writable ``memory`` and ``pids`` hierarchies (and ``freezer`` when mounted); children of our
  own cgroup in each get ``memory.limit_in_bytes`` (``memory.memsw.limit_in_bytes`` too when swap accounting
  is on) and ``pids.max``.
- **none**: only the per-process rlimits of ``SandboxConfig`` and the tmpfs sizes apply; ``Cgroup.create``
  returns ``None`` and the doctor says so.

A process joins its cgroup before bubblewrap starts: ``Cgroup.wrap`` prefixes a command with a tiny ``/bin/sh``
that writes its own pid into ``cgroup.procs`` and ``exec``s the rest, so every process the sandbox ever starts
is counted. ``Cgroup.close`` kills what is left and removes the cgroup.

The episode root is size-capped by a tmpfs (``mount_private_tmpfs``) when we are root; otherwise
``tree_usage`` measures it after each command (see ``Sandbox``).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import logging
import os
import secrets
import shlex
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox._walk import walk

logger = logging.getLogger(__name__)

CgroupKind = Literal["v2", "v1", "none"]
"""Which cgroup interface bounds a sandbox on this host."""

PARENT_ENV = "TOOLEMU_CGROUP_PARENT"
"""Environment variable naming a cgroup v2 folder to create sandbox cgroups in (its subtree_control must
enable ``memory`` and ``pids``)."""

CHECK_CGROUP_MEMORY_MB = 2048
"""Memory of one check process and all its children together (cgroup), in MiB."""
CHECK_MAX_PROCESSES = 64
"""Processes and threads of one check together (cgroup ``pids.max``; ``RLIMIT_NPROC`` without cgroups)."""

_V1_REQUIRED = ("memory", "pids")
_V1_OPTIONAL = ("freezer",)
_KILL_WAIT_S = 5.0
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """What this host offers for bounding a whole sandbox."""

    kind: CgroupKind
    """``v2``, ``v1`` or ``none``."""
    parents: tuple[tuple[str, Path], ...]
    """(controller, folder new cgroups are made in): one ``("unified", path)`` for v2; one per controller
    for v1 (``memory``, ``pids`` and maybe ``freezer``); empty for ``none``."""
    reason: str
    """Why this kind applies (or why none does), in words."""


def _own_cgroups() -> dict[str, str]:
    """``{controller: path}`` from ``/proc/self/cgroup``; the v2 entry's key is ``""``."""
    found: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _mounts() -> list[tuple[str, str, set[str], str]]:
    """``(mount point, fstype, super options, root inside the fs)`` from ``/proc/self/mountinfo``."""
    rows = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        rows.append((point, tail[0], set(tail[2].split(",")), fields[3]))
    return rows


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _probe(folder: Path) -> str | None:
    """Makes and removes a child cgroup in ``folder``; returns why that failed, or ``None``."""
    probe = folder / f"toolemu-probe-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as e:
        return f"cannot create a cgroup in {folder}: {e.strerror}"
    return None


def _detect_v2(mounts: list[tuple[str, str, set[str], str]], own: dict[str, str]) -> CgroupSupport | str:
    points = [(Path(p), root) for p, fstype, _, root in mounts if fstype == "cgroup2"]
    if not points:
        return "no cgroup2 file system is mounted"
    mount, mount_root = points[0]
    inside = own.get("", "/")
    rel = os.path.relpath(inside, mount_root) if inside.startswith(mount_root) else inside.lstrip("/")
    mine = (mount / rel).resolve() if rel != "." else mount
    candidates = []
    if os.environ.get(PARENT_ENV):
        candidates.append(Path(os.environ[PARENT_ENV]))
    candidates += [mine, mine.parent] if mine != mount else [mine]
    why = []
    for folder in candidates:
        # Only a cgroup that already hands memory and pids to its children will do: enabling controllers is
        # the host's (or systemd's) choice, never made here.
        enabled = set(_read(folder / "cgroup.subtree_control").split())
        if not {"memory", "pids"} <= enabled:
            why.append(f"{folder} does not delegate memory+pids (subtree_control: {' '.join(enabled) or 'none'})")
            continue
        failed = _probe(folder)
        if failed is not None:
            why.append(failed)
            continue
        return CgroupSupport("v2", (("unified", folder),), f"cgroup v2 under {folder}")
    return "cgroup v2: " + "; ".join(why)


def _detect_v1(mounts: list[tuple[str, str, set[str], str]], own: dict[str, str]) -> CgroupSupport | str:
    parents: list[tuple[str, Path]] = []
    for controller in (*_V1_REQUIRED, *_V1_OPTIONAL):
        points = [(Path(p), root) for p, fstype, opts, root in mounts if fstype == "cgroup" and controller in opts]
        if not points:
            if controller in _V1_REQUIRED:
                return f"cgroup v1: no {controller} hierarchy is mounted"
            continue
        mount, mount_root = points[0]
        inside = own.get(controller, "/")
        rel = os.path.relpath(inside, mount_root) if inside.startswith(mount_root) else inside.lstrip("/")
        folder = mount / rel if rel != "." else mount
        failed = _probe(folder)
        if failed is not None:
            if controller in _V1_REQUIRED:
                return f"cgroup v1: {failed}"
            continue
        parents.append((controller, folder))
    names = "+".join(c for c, _ in parents)
    return CgroupSupport("v1", tuple(parents), f"cgroup v1 ({names}), children of this process's cgroups")


@functools.cache
def detect_cgroups() -> CgroupSupport:
    """Finds which cgroup interface can bound a sandbox here (cached for the process)."""
    try:
        mounts, own = _mounts(), _own_cgroups()
    except OSError as e:
        return CgroupSupport("none", (), f"cannot read /proc/self cgroup information: {e}")
    reasons = []
    for detect in (_detect_v2, _detect_v1):
        found = detect(mounts, own)
        if isinstance(found, CgroupSupport):
            logger.info("sandbox quotas: %s", found.reason)
            return found
        reasons.append(found)
    logger.warning("sandbox quotas: no usable cgroup (%s); only per-process rlimits and tmpfs sizes apply",
                   "; ".join(reasons))
    return CgroupSupport("none", (), "; ".join(reasons))


class Cgroup:
    """One cgroup (v2) or one cgroup per controller (v1) bounding every process of a sandbox or a check.

    Create with ``Cgroup.create``; wrap each command with ``wrap``; ``close`` when done.
    """

    def __init__(self, support: CgroupSupport, folders: tuple[tuple[str, Path], ...]) -> None:
        self.support = support
        self.folders = folders
        self._closed = False

    @classmethod
    def create(cls, label: str, *, memory_mb: int, max_processes: int,
               support: CgroupSupport | None = None) -> Cgroup | None:
        """Makes a cgroup limited to ``memory_mb`` MiB (no swap) and ``max_processes`` tasks.

        Returns:
            The cgroup, or ``None`` when the host has no usable cgroup (``detect_cgroups().kind == "none"``).

        Raises:
            SandboxError: The cgroup could not be made or limited although detection said it could.
        """
        support = support or detect_cgroups()
        if support.kind == "none":
            return None
        name = f"toolemu-{label}-{os.getpid()}-{secrets.token_hex(6)}"
        made: list[tuple[str, Path]] = []
        group = cls(support, ())
        try:
            for controller, parent in support.parents:
                folder = parent / name
                folder.mkdir(mode=0o755)
                made.append((controller, folder))
            group.folders = tuple(made)
            group._limit(memory_mb * 1024 * 1024, max_processes)
        except OSError as e:
            group.close()
            raise SandboxError(f"could not set up the sandbox cgroup {name} ({support.reason}): {e}") from e
        return group

    def _limit(self, memory: int, tasks: int) -> None:
        for controller, folder in self.folders:
            if controller == "unified":
                (folder / "memory.max").write_text(str(memory))
                if (folder / "memory.swap.max").exists():
                    (folder / "memory.swap.max").write_text("0")
                (folder / "pids.max").write_text(str(tasks))
            elif controller == "memory":
                (folder / "memory.limit_in_bytes").write_text(str(memory))
                if (folder / "memory.memsw.limit_in_bytes").exists():
                    (folder / "memory.memsw.limit_in_bytes").write_text(str(memory))
            elif controller == "pids":
                (folder / "pids.max").write_text(str(tasks))

    @property
    def procs_files(self) -> tuple[Path, ...]:
        """The ``cgroup.procs`` files a process writes its pid into to join."""
        return tuple(folder / "cgroup.procs" for _, folder in self.folders)

    def wrap(self, argv: list[str]) -> list[str]:
        """Returns ``argv`` prefixed so that its first process joins this cgroup before anything else runs."""
        joins = " && ".join(f"echo $$ > {shlex.quote(str(p))}" for p in self.procs_files)
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "toolemu-cgroup", *argv]

    def pids(self) -> list[int]:
        """Host pids of the processes now in the cgroup."""
        found: set[int] = set()
        for path in self.procs_files:
            found.update(int(x) for x in _read(path).split())
        return sorted(found)

    def oom_kills(self) -> int | None:
        """How many processes the memory cap's OOM killer ended (``memory.events`` on v2, ``memory.oom_control``
        on v1); ``None`` when the kernel does not say."""
        for controller, folder in self.folders:
            name = {"unified": "memory.events", "memory": "memory.oom_control"}.get(controller)
            if name is not None:
                fields = dict(line.split(None, 1) for line in _read(folder / name).splitlines() if " " in line)
                value = fields.get("oom_kill", "")
                return int(value) if value.strip().isdigit() else None
        return None

    def freeze(self) -> bool:
        """Freezes every process in the cgroup (``cgroup.freeze`` on v2, ``freezer.state`` on v1).

        Returns:
            ``False`` when this host offers no freezer for it (v1 without a ``freezer`` hierarchy).
        """
        return self._set_frozen(True)

    def thaw(self) -> bool:
        """Undoes ``freeze``; returns ``False`` without a freezer."""
        return self._set_frozen(False)

    def _set_frozen(self, frozen: bool) -> bool:
        for controller, folder in self.folders:
            if controller == "unified":
                (folder / "cgroup.freeze").write_text("1" if frozen else "0")
                return _wait_for(folder / "cgroup.events", "frozen 1" if frozen else "frozen 0")
            if controller == "freezer":
                (folder / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
                return _wait_for(folder / "freezer.state", "FROZEN" if frozen else "THAWED")
        return False

    def kill_all(self) -> None:
        """Kills every process in the cgroup and waits (up to 5 s) until none is left."""
        for controller, folder in self.folders:
            if controller == "unified" and (folder / "cgroup.kill").exists():
                (folder / "cgroup.kill").write_text("1")
        if any(c == "freezer" for c, _ in self.folders):
            self.thaw()  # a frozen task on v1 does not die until thawed
        deadline = time.monotonic() + _KILL_WAIT_S
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def close(self) -> None:
        """Kills what is left in the cgroup and removes it. Safe to call twice; a failure is logged."""
        if self._closed:
            return
        self._closed = True
        try:
            self.kill_all()
        except OSError as e:
            logger.warning("could not kill the processes of cgroup %s: %s", self.folders, e)
        for _, folder in self.folders:
            deadline = time.monotonic() + _KILL_WAIT_S
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        logger.warning("could not remove cgroup %s: %s", folder, e)
                        break
                    time.sleep(0.01)


def _wait_for(path: Path, text: str) -> bool:
    """Waits (up to 5 s) until ``path`` holds ``text`` (a line of it, or all of it)."""
    deadline = time.monotonic() + _KILL_WAIT_S
    while time.monotonic() < deadline:
        if text in _read(path).splitlines():
            return True
        time.sleep(0.005)
    return False


@contextmanager
def check_quota(label: str = "check") -> Iterator[Wrapper]:
    """Bounds one check process and its children for the ``with`` block; yields a function that wraps argv.

    With cgroups: a fresh cgroup (``CHECK_CGROUP_MEMORY_MB``, ``CHECK_MAX_PROCESSES``) removed at the end, after what
    is left in it is killed. Without: ``RLIMIT_NPROC`` of ``CHECK_MAX_PROCESSES`` (the runner keeps its own
    per-process memory limit).
    """
    group = Cgroup.create(label, memory_mb=CHECK_CGROUP_MEMORY_MB, max_processes=CHECK_MAX_PROCESSES)
    try:
        yield Wrapper(group, CHECK_MAX_PROCESSES)
    finally:
        if group is not None:
            group.close()


@dataclass(frozen=True, slots=True)
class Wrapper:
    """Wraps a command line in a cgroup, or in ``ulimit -u`` where no cgroup applies."""

    group: Cgroup | None
    """The cgroup, or ``None``."""
    max_processes: int
    """The ``RLIMIT_NPROC`` used without a cgroup."""

    def __call__(self, argv: list[str]) -> list[str]:
        """Returns ``argv`` prefixed with the bound."""
        if self.group is not None:
            return self.group.wrap(argv)
        return ["/bin/sh", "-c", f'ulimit -u {self.max_processes} && exec "$@"', "toolemu-nproc", *argv]


def mount_private_tmpfs(path: Path, *, size_mb: int, max_files: int, uid: int | None) -> str | None:
    """Mounts a ``size_mb`` tmpfs of ``max_files`` inodes at ``path``: mode 0700, owned by ``uid``, ``nosuid``,
    ``nodev`` (a setuid file or a device node the agent leaves there is inert on the host).

    Returns:
        ``None`` on success, else why it could not be mounted (not root, no ``CAP_SYS_ADMIN``).
    """
    if os.geteuid() != 0:
        return "not running as root"
    owner = uid if uid is not None else 0
    options = f"size={size_mb}m,nr_inodes={max_files},mode=0700,uid={owner},gid={owner}".encode()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        return f"mount of a tmpfs failed: {os.strerror(ctypes.get_errno())}"
    return None


def unmount(path: Path) -> None:
    """Detaches the mount at ``path`` (everything in a tmpfs is freed at once).

    Raises:
        SandboxError: The unmount failed.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(path), _MNT_DETACH) != 0:
        raise SandboxError(f"could not unmount the sandbox tmpfs at {path}: {os.strerror(ctypes.get_errno())}")


def tree_usage(root: Path, *, limit_bytes: int) -> int:
    """Bytes allocated (``st_blocks``, plus 4 KiB per entry) under ``root``; stops once past ``limit_bytes``.

    Walks by directory file descriptors without following a link the agent made; a folder it cannot enter
    counts 4 KiB.
    """
    total = 0
    try:
        for _, _, entries in walk(root, max_depth=4096, skipped=[]):
            total += sum(st.st_blocks * 512 + 4096 for _, st in entries)
            if total > limit_bytes:
                break
    except OSError:
        return total
    return total
