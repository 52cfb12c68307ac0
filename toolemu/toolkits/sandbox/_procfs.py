"""Host-side process helpers for sandbox sessions: the pid counter, the process tree, signals."""

from __future__ import annotations

import os
import signal


def kill_group(pgid: int) -> None:
    """Sends SIGKILL to a process group that may already be gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def send_signal(pid: int, sig: int) -> None:
    """Sends a signal to a process that may already be gone."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def last_pid() -> int | None:
    """Returns the last pid the kernel allocated in our pid namespace, or ``None`` when unavailable."""
    try:
        with open("/proc/sys/kernel/ns_last_pid") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _stat_fields(pid: int | str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def children(pid: int) -> list[int]:
    """Returns the direct children of ``pid`` (one scan of ``/proc``)."""
    table = _parent_table()
    return sorted(child for child, parent in table.items() if parent == pid)


def _parent_table() -> dict[int, int]:
    table: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields:
                table[int(entry)] = int(fields[1])
    return table


def descendants(pid: int) -> list[int]:
    """Returns every descendant of ``pid`` (one scan of ``/proc``)."""
    table = _parent_table()
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, p in table.items() if p == parent]
        found += kids
        frontier += kids
    return found


def inner_pid(pid: int) -> int | None:
    """Returns the pid that host process ``pid`` has in its own (innermost) pid namespace, or ``None``."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None


_PF_EXITING = 0x4


def is_dying(pid: int) -> bool:
    """Whether process ``pid`` is gone, a zombie, or has a SIGKILL pending (a ``kill -9`` that just returned)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            fields = dict(line.split(b":", 1) for line in f.read().splitlines() if b":" in line)
    except OSError:
        return True
    if fields.get(b"State", b"").strip()[:1] in (b"Z", b"X"):
        return True
    kill_bit = 1 << (signal.SIGKILL - 1)
    if any(int(fields.get(name, b"0").strip() or b"0", 16) & kill_bit for name in (b"SigPnd", b"ShdPnd")):
        return True
    stat = _stat_fields(pid)  # between taking the signal and becoming a zombie: PF_EXITING in its flags
    return stat is None or bool(int(stat[6]) & _PF_EXITING)
