"""What bounds a sandbox on this machine: quotas, rlimits and time limits, one line each (``toolemu doctor``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

from toolemu.core.errors import SandboxError
from toolemu.services.base import PORTS
from toolemu.services.pool import services_unavailable
from toolemu.toolkits.sandbox.bwrap import find_bwrap
from toolemu.toolkits.sandbox.checks import CHECK_MEMORY_MB, DEFAULT_CHECK_TIMEOUT_S
from toolemu.toolkits.sandbox.clock import find_libfaketime
from toolemu.toolkits.sandbox.config import SandboxConfig
from toolemu.toolkits.sandbox.quota import (
    CHECK_CGROUP_MEMORY_MB,
    CHECK_MAX_PROCESSES,
    detect_cgroups,
    mount_private_tmpfs,
    unmount,
)


class LimitLine(NamedTuple):
    """One line of the report."""

    name: str
    """What is bounded (``cgroup``, ``root size``...)."""
    value: str
    """How, on this machine."""


def _bwrap_version(config: SandboxConfig) -> str:
    try:
        exe = find_bwrap(config.bwrap_path)
    except SandboxError as e:
        return f"MISSING: {e}"
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{exe}: could not run --version: {e}"
    return f"{out.stdout.strip() or out.stderr.strip()} ({exe}; --size for /run and /dev/shm needs 0.5 or later)"


def _root_cap(config: SandboxConfig) -> str:
    """Tries the size-capped tmpfs on a scratch folder, as a sandbox would."""
    with tempfile.TemporaryDirectory(prefix="toolemu-doctor-") as tmp:
        why = mount_private_tmpfs(Path(tmp), size_mb=config.disk_mb, max_files=config.disk_max_files, uid=None)
        if why is None:
            unmount(Path(tmp))
            return (f"tmpfs of {config.disk_mb} MiB and {config.disk_max_files} inodes per sandbox, nosuid,nodev, "
                    "mode 0700 (writes past it fail with ENOSPC)")
    return (f"FALLBACK ({why}): no tmpfs; the episode's files are measured after each command and its sessions "
            f"end once past {config.disk_mb} MiB; each file is capped at {config.max_file_mb} MiB (RLIMIT_FSIZE); "
            "the folder is mode 0700")


def limit_lines(config: SandboxConfig | None = None) -> list[LimitLine]:
    """Everything that bounds a sandbox and its checks here, with ``config``'s values (default: defaults)."""
    cfg = config or SandboxConfig()
    support = detect_cgroups()
    uid = os.geteuid()
    who = "root: the sandbox runs as a random unprivileged host uid" if uid == 0 else (
        f"uid {uid}: the sandbox runs as you (no uid drop)")
    if support.kind == "none":
        group = f"none ({support.reason}); processes are bounded one by one by the rlimits below only"
        sandbox_whole = "NOT bounded across processes (no cgroup)"
        check_whole = f"RLIMIT_NPROC {CHECK_MAX_PROCESSES} per check (no cgroup)"
    else:
        group = support.reason
        sandbox_whole = (f"memory {cfg.sandbox_memory_mb} MiB and {cfg.sandbox_max_processes} processes "
                         "for all of a sandbox's processes together")
        check_whole = (f"memory {CHECK_CGROUP_MEMORY_MB} MiB and {CHECK_MAX_PROCESSES} processes per check and "
                       "its children together")
    freezer = "yes" if support.kind == "v2" or any(c == "freezer" for c, _ in support.parents) else "no"
    return [
        LimitLine("bwrap", _bwrap_version(cfg)),
        LimitLine("user", who),
        LimitLine("cgroup", f"{support.kind}: {group}"),
        LimitLine("sandbox as a whole", sandbox_whole),
        LimitLine("cgroup freezer", freezer),
        LimitLine("root size", _root_cap(cfg)),
        LimitLine("/run, /dev/shm", f"tmpfs of {cfg.tmpfs_mb} MiB each; /dev read-only"),
        LimitLine("per process", f"RLIMIT_AS {cfg.memory_mb} MiB, RLIMIT_CPU {cfg.cpu_seconds} s, RLIMIT_NPROC "
                                 f"{cfg.max_processes}, RLIMIT_FSIZE {cfg.max_file_mb} MiB, no core files"),
        LimitLine("time", f"{cfg.command_timeout_s:g} s per command or cell, {cfg.start_timeout_s:g} s to start a "
                          "session"),
        LimitLine("snapshot", f"{cfg.snapshot_max_files} files, {cfg.snapshot_max_total_hash_bytes // 2**20} MiB "
                              f"hashed, {cfg.snapshot_max_text_bytes // 2**20} MiB text, {cfg.snapshot_max_depth} "
                              f"folders deep, {cfg.snapshot_timeout_s:g} s; holes skipped; overflow recorded"),
        LimitLine("archive members", f"archives up to {cfg.snapshot_archive_max_bytes // 2**20} MiB, "
                                     f"{cfg.snapshot_archive_max_members} members and "
                                     f"{cfg.snapshot_archive_max_unpacked_bytes // 2**20} MiB unpacked each; "
                                     "nothing extracted; overflow recorded"),
        LimitLine("checks", f"{DEFAULT_CHECK_TIMEOUT_S:g} s wall and CPU each, RLIMIT_AS {CHECK_MEMORY_MB} MiB per "
                            f"process; {check_whole}"),
        LimitLine("episode clock", _clock_line()),
        LimitLine("web services", _services_line()),
    ]


def _clock_line() -> str:
    """Whether ``SandboxConfig.clock_start`` (and replays at a log's time) can run here."""
    try:
        library = find_libfaketime()
    except SandboxError as e:
        return f"MISSING: {e}"
    return f"libfaketime {library} (SandboxConfig.clock_start; replays run at their log's times)"


def _services_line() -> str:
    """Whether cases with ``services`` (OAS's ownCloud, GitLab, Plane) can run here, and why not."""
    names = tuple(PORTS)
    why = services_unavailable(names)
    if why is None and shutil.which("git") is None:
        why = "`git` not found (the GitLab emulator serves clones and pushes through `git http-backend`)"
    if why is not None:
        return f"UNAVAILABLE: {why}"
    ports = ", ".join(f"{name} {port}" for name, port in PORTS.items())
    return f"{ports} at the-agent-company.com, in each episode's network namespace"


def quota_summary() -> str:
    """One line: which cgroup kind and root cap apply (for ``toolemu models``)."""
    support = detect_cgroups()
    cap = "tmpfs root cap" if os.geteuid() == 0 else "root size checked per command"
    return f"cgroup {support.kind}, {cap}"
