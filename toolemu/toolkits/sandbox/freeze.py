"""Freezing a sandbox's processes: SIGSTOP of every process in each session's pid namespace.

The grader must see the world the agent left, not one its leftover processes keep changing. Every process an
episode started lives in a pid namespace whose init bwrap reported (``Session``), or in a namespace nested
below it; an orphan is re-parented to that init, never out of it. So the members are the init's descendants
plus anything sharing its namespace, and a rescan until nothing new appears catches a fork that raced a stop.
The freeze sits behind ``freeze_namespaces``/``thaw_namespaces`` so a cgroup freezer can replace it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterable

from toolemu.toolkits.sandbox._procfs import send_signal

logger = logging.getLogger(__name__)

FREEZE_TIMEOUT_S = 2.0
"""How long every member may take to reach the stopped state before the freeze is reported as failed."""


def _ns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def namespace_members(init_pids: Iterable[int]) -> set[int]:
    """Every live process in the pid namespaces of ``init_pids`` (inits included) and those nested below.

    One pass over ``/proc``: each process's parent and pid namespace; members are the inits, what shares an
    init's namespace, and the descendants of either (a nested namespace's processes descend from its init).
    """
    # An init in our own namespace is no sandbox's (a pid reused after the sandbox ended): never freeze the host.
    ours = os.stat("/proc/self/ns/pid").st_ino
    inits = [p for p in init_pids if _ns_inode(p) not in (None, ours)]
    inodes = {_ns_inode(p) for p in inits}
    members: set[int] = set(inits)
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        fields = _stat_fields(pid)
        if fields is None:
            continue
        parents[pid] = int(fields[1])
        if _ns_inode(pid) in inodes:
            members.add(pid)
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    frontier = list(members)
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in members:
                members.add(child)
                frontier.append(child)
    return members


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _state(pid: int) -> str | None:
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def freeze_namespaces(init_pids: Iterable[int], timeout_s: float = FREEZE_TIMEOUT_S) -> set[int]:
    """Stops every process of the namespaces of ``init_pids`` and waits until each one is stopped.

    Returns:
        The stopped processes (give them to ``thaw_namespaces``).

    Raises:
        TimeoutError: Some process did not stop within ``timeout_s`` (the caller kills the sandbox instead).
    """
    inits = list(init_pids)
    stopped: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while True:
        members = namespace_members(inits)
        fresh = members - stopped
        for pid in fresh:
            send_signal(pid, signal.SIGSTOP)
        stopped |= fresh
        running = [p for p in members if _state(p) not in ("T", "t", "Z", "X", None)]
        if not fresh and not running:
            return stopped
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(running)} sandbox process(es) did not stop within {timeout_s:g} s")
        # A member that runs again was woken by a sibling's SIGCONT (which cancels a pending stop): stop it again.
        for pid in running:
            send_signal(pid, signal.SIGSTOP)
        time.sleep(0.002 if fresh else 0.01)


def thaw_namespaces(pids: Iterable[int]) -> None:
    """Lets stopped processes run again (those that are gone are skipped)."""
    for pid in pids:
        send_signal(pid, signal.SIGCONT)
