"""An episode's wall clock at another time: libfaketime in every sandboxed process, file times moved onto it.

Linux has no per-namespace wall clock (a time namespace offsets only the monotonic and boot clocks), so the
sandbox cannot run at another date by itself. Every sandboxed process preloads Debian's libfaketime
(``LD_PRELOAD``), which reads the clock's offset from a file we write outside the episode root and bind
read-only at ``CLOCK_MOUNT``; it is read again at each clock call, so moving the clock forward (a replay
following its log's timestamps) reaches the processes already running. The monotonic clocks move with it
(libfaketime 0.9.10 cannot leave them alone without breaking ``sleep``).

The kernel still stamps what a process writes with the real time. So the host moves file times onto the
episode clock: at reset every entry of the fresh root gets the clock's start (the case's files were put there
when the episode began), and after every command, cell and file operation the entries whose modification time
fell between the previous sweep and now are shifted by the clock's offset, once. Programs therefore read the
episode's time with ``stat`` (``ls -l``, ``zipfile``, ``tar``), and so do the checks, which run under the same
clock. Limits: a file written and read again within one command (``echo x > f && zip z.zip f``) is read with
its real time; change times (``ctime``) stay real; static binaries and direct system calls see the real clock.
"""

from __future__ import annotations

import glob
import logging
import os
import stat
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox._walk import walk
from toolemu.toolkits.sandbox.bwrap import WRITABLE_DIRS

logger = logging.getLogger(__name__)

LIBFAKETIME_GLOBS: tuple[str, ...] = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1")
"""Where Debian's ``libfaketime`` package puts the library."""
CLOCK_MOUNT = "/.toolemu-clock"
"""Where the offset file's folder appears inside a sandbox (read-only)."""
OFFSET_FILE = "offset"
SWEEP_MAX_ENTRIES = 200_000
"""Entries a sweep visits at most (the rest keep their times; logged)."""
_SWEEP_MAX_DEPTH = 128
_SLACK_NS = 2_000_000_000
"""Margin on both ends of the sweep window: the kernel stamps files from a coarse clock, a tick behind the
real time (an entry already moved is known by its inode and new time, and never moved twice)."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_Times = Callable[[os.stat_result], "tuple[int, int] | None"]


def find_libfaketime() -> Path:
    """Returns the libfaketime library.

    Raises:
        SandboxError: It is not installed; the message names the Debian package.
    """
    for pattern in LIBFAKETIME_GLOBS:
        for found in sorted(glob.glob(pattern)):
            if os.path.isfile(found):
                return Path(found)
    raise SandboxError(
        "libfaketime not found (an episode clock was asked for: SandboxConfig.clock_start, or a replay at the "
        "log's time). Install the Debian package `faketime` (apt-get install faketime), or replay with "
        "--no-clock / leave clock_start unset"
    )


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive time is read as UTC.

    Examples:
        >>> as_utc(datetime(2025, 5, 5, 11, 55)).isoformat()
        '2025-05-05T11:55:00+00:00'
    """
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SandboxClock:
    """The host side of one sandbox's episode clock (see the module docstring).

    Args:
        parent: Folder to create the offset file's folder in; it must be traversable by the sandbox's and the
            grader's uids (the folder is root's or ours, mode 0755, its file 0644: nothing inside can change it).

    Raises:
        SandboxError: libfaketime is missing, or the folder cannot be made.
    """

    def __init__(self, parent: Path) -> None:
        self.library = find_libfaketime()
        try:
            self.folder = Path(tempfile.mkdtemp(prefix="toolemu-clock-", dir=parent))
            self.folder.chmod(0o755)
        except OSError as e:
            raise SandboxError(f"could not make the episode clock's folder in {parent}: {e}") from e
        self._offset_ns = 0
        self._since_ns = time.time_ns()
        self._stamped: dict[tuple[int, int], int] = {}
        self._write()

    @property
    def offset_s(self) -> float:
        """Episode time minus real time, in seconds."""
        return self._offset_ns / 1e9

    def now(self) -> datetime:
        """The episode's current time (UTC)."""
        return datetime.fromtimestamp((time.time_ns() + self._offset_ns) / 1e9, tz=UTC)

    def start(self, at: datetime) -> None:
        """Sets the clock to ``at`` now (it advances in real time from there); forgets earlier sweeps."""
        self._offset_ns = _ns(at) - time.time_ns()
        self._stamped.clear()
        self._write()

    def advance_to(self, at: datetime) -> None:
        """Moves the clock forward to ``at``; never back (a log's earlier time leaves it where it is)."""
        target = _ns(at) - time.time_ns()
        if target > self._offset_ns:
            self._offset_ns = target
            self._write()

    def env(self, *, inside: bool = True) -> dict[str, str]:
        """The variables that put a process on the clock (``inside``: as the sandbox sees the offset file)."""
        folder = CLOCK_MOUNT if inside else str(self.folder)
        return {
            "LD_PRELOAD": str(self.library),
            "FAKETIME_TIMESTAMP_FILE": f"{folder}/{OFFSET_FILE}",
            "FAKETIME_NO_CACHE": "1",  # the offset moves between steps: read it at every call
            "NO_FAKE_STAT": "1",  # stat reports the times on disk, which the sweeps keep on the episode clock
        }

    def binds(self) -> list[tuple[Path, str]]:
        """The read-only bind that shows the offset file inside a sandbox."""
        return [(self.folder, CLOCK_MOUNT)]

    def stamp_all(self, root: Path) -> int:
        """Gives every entry under ``root``'s writable folders the episode's current time; returns how many."""
        now = time.time_ns()
        changed = self._visit(root, lambda st: (now + self._offset_ns, now + self._offset_ns))
        self._since_ns = now
        return changed

    def sweep(self, root: Path) -> int:
        """Shifts by the offset the times of entries written since the last sweep; returns how many."""
        began = time.time_ns()
        low, high, offset = self._since_ns - _SLACK_NS, began + _SLACK_NS, self._offset_ns

        def shifted(st: os.stat_result) -> tuple[int, int] | None:
            if not low <= st.st_mtime_ns <= high or self._stamped.get((st.st_dev, st.st_ino)) == st.st_mtime_ns:
                return None
            atime = st.st_atime_ns + offset if low <= st.st_atime_ns <= high else st.st_atime_ns
            return atime, st.st_mtime_ns + offset

        changed = self._visit(root, shifted)
        self._since_ns = began
        return changed

    def close(self) -> None:
        """Removes the offset file and its folder."""
        for path in (self.folder / OFFSET_FILE, self.folder / f"{OFFSET_FILE}.new"):
            path.unlink(missing_ok=True)
        self.folder.rmdir()

    def _write(self) -> None:
        # Renamed into place: a process reading the file at any moment sees a whole offset.
        seconds = self._offset_ns / 1e9
        new = self.folder / f"{OFFSET_FILE}.new"
        new.write_text(f"{seconds:+.6f}\n", encoding="ascii")
        new.chmod(0o644)
        new.replace(self.folder / OFFSET_FILE)

    def _visit(self, root: Path, times: _Times) -> int:
        """Sets ``times(lstat)`` (atime, mtime in ns) on each entry of ``root``'s writable folders (the folders
        too) where it is not ``None``; never follows a link (folder fds, ``AT_SYMLINK_NOFOLLOW``)."""
        changed = seen = 0
        skipped: list[str] = []
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)  # ours, not the agent's
        try:
            for name in WRITABLE_DIRS:
                try:
                    top = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if not stat.S_ISDIR(top.st_mode):
                    continue
                changed += self._set(name, root_fd, top, times(top))
                try:
                    for _rel, fd, entries in walk(root / name, max_depth=_SWEEP_MAX_DEPTH, skipped=skipped):
                        for entry, st in entries:
                            seen += 1
                            if seen > SWEEP_MAX_ENTRIES:
                                logger.info("episode clock: more than %d entries under %s; the rest keep their "
                                            "times", SWEEP_MAX_ENTRIES, root)
                                return changed
                            changed += self._set(entry, fd, st, times(st))
                except OSError as e:
                    logger.info("episode clock: cannot walk %s/%s: %s", root, name, e)
        finally:
            os.close(root_fd)
        return changed

    def _set(self, name: str, dir_fd: int, st: os.stat_result, new: tuple[int, int] | None) -> int:
        """Sets ``new`` (atime, mtime in ns) on entry ``name`` of ``dir_fd``, never through a link; 1 if set."""
        if new is None:
            return 0
        try:
            os.utime(name, ns=new, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return 0  # gone, or swapped since it was listed: its times are the agent's
        if not stat.S_ISLNK(st.st_mode):
            self._stamped[(st.st_dev, st.st_ino)] = new[1]
        return 1


def _ns(at: datetime) -> int:
    return (as_utc(at) - _EPOCH) // timedelta(microseconds=1) * 1000
