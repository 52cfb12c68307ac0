"""The browser's own bubblewrap sandbox: a launcher script Playwright starts in place of Chromium.

Playwright's driver runs the launcher with Chromium's flags; the launcher joins the browser's cgroup, enters the
episode's network namespace (the emulated services' one, or none: a fresh, empty namespace), drops to a uid of
its own and starts Chromium under bwrap with a read-only system, a private tmpfs ``/tmp`` (profile, home), no
host files and an enterprise policy that refuses ``file:``, ``data:``, ``view-source:`` and ``devtools:`` pages.
Playwright talks to Chromium over ``--remote-debugging-pipe`` (fds 3 and 4 pass through bwrap), so there is no
DevTools port for the agent's shell to reach.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolemu.core.errors import SandboxError
from toolemu.services.base import HOSTNAME
from toolemu.toolkits.sandbox.browser_config import BrowserConfig
from toolemu.toolkits.sandbox.bwrap import SYSTEM_DIRS, find_bwrap
from toolemu.toolkits.sandbox.quota import Cgroup

BLOCKED_URLS: tuple[str, ...] = (
    "file://*", "data:*", "view-source:*", "devtools://*", "filesystem:*", "ftp://*", "chrome-untrusted://*",
)
"""Chromium's ``URLBlocklist`` policy: the browser process refuses these navigations, whoever asks."""

_UID_BASE = 1_900_000_000
_POLICY = {"URLBlocklist": list(BLOCKED_URLS), "DownloadRestrictions": 3, "PasswordManagerEnabled": False,
           "PrintingEnabled": False}


@dataclass(frozen=True, slots=True)
class BrowserJail:
    """The files and limits of one browser sandbox; ``close`` removes them (and kills what is left)."""

    folder: Path
    """Host folder holding the launcher and the policy (no secrets: readable by the browser's uid)."""
    launcher: Path
    """The script Playwright runs as Chromium (``executable_path``)."""
    uid: int | None
    """Host uid the browser runs as (``None`` when not root: it keeps ours)."""
    cgroup: Cgroup | None
    """The cgroup bounding the browser's processes, or ``None`` without one on this host."""

    def close(self) -> None:
        """Kills what is left of the browser and deletes the launcher folder."""
        if self.cgroup is not None:
            self.cgroup.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def make_jail(config: BrowserConfig, netns_fd: int | None) -> BrowserJail:
    """Writes the launcher for one browser.

    Args:
        config: The browser's limits.
        netns_fd: An fd of the network namespace to join, held open by this process while the browser runs
            (the launcher enters it through ``/proc/<our pid>/fd``); ``None`` gives the browser an empty one.

    Raises:
        SandboxError: bwrap, ``setpriv``, ``nsenter`` or the Chromium binary is missing, or joining a network
            namespace is asked without root.
    """
    bwrap = find_bwrap()
    chromium = Path(config.executable)
    if not (chromium.is_file() and os.access(chromium, os.X_OK)):
        raise SandboxError(f"Chromium not found at {chromium} (BrowserConfig.executable); install the Debian "
                           "package `chromium` (apt-get install chromium)")
    root = os.geteuid() == 0
    if netns_fd is not None and not root:
        raise SandboxError("the browser joins the episode's network namespace, which needs root; run as root")
    prefix: list[str] = []
    if netns_fd is not None:
        prefix += [_program("nsenter"), f"--net=/proc/{os.getpid()}/fd/{netns_fd}", "--"]
    prefix += [shutil.which("env") or "/usr/bin/env", "-i"]
    uid = _UID_BASE + secrets.randbelow(1 << 26) if root else None
    if uid is not None:
        prefix += [_program("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    # RLIMIT_NPROC counts the uid's tasks: the browser's own uid makes it a bound on the browser alone.
    limits = f'ulimit -HS -c 0 -u {config.max_processes} && exec "$@"'
    prefix += ["/bin/bash", "-c", limits, "toolemu-browser-limits"]
    folder = Path(tempfile.mkdtemp(prefix="toolemu-browser-"))
    try:
        folder.chmod(0o755)  # bwrap, already the browser's uid, must reach the policy folder to bind it
        policies = folder / "policies" / "managed"
        policies.mkdir(parents=True, mode=0o755)
        (policies / "toolemu.json").write_text(json.dumps(_POLICY))
        argv = [*prefix, *_bwrap_argv(bwrap, config, folder / "policies", share_net=netns_fd is not None),
                str(chromium), *_chromium_flags(config)]
        cgroup = Cgroup.create("browser", memory_mb=config.memory_mb, max_processes=config.max_processes)
        if cgroup is not None:
            argv = cgroup.wrap(argv)
        launcher = folder / "chromium"
        launcher.write_text(f"#!/bin/sh\nexec {shlex.join(argv)} \"$@\"\n")
        launcher.chmod(0o755)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return BrowserJail(folder=folder, launcher=launcher, uid=uid, cgroup=cgroup)


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SandboxError(f"`{name}` not found; install the Debian package `util-linux` for the browser sandbox")
    return found


def _bwrap_argv(bwrap: Path, config: BrowserConfig, policies: Path, *, share_net: bool) -> list[str]:
    size = str(config.tmpfs_mb * 1024 * 1024)
    argv = [str(bwrap), "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    if share_net:
        argv.append("--share-net")
    argv += ["--hostname", "browser", "--cap-drop", "ALL"]
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), f"/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--size", size, "--tmpfs", "/dev/shm",
             "--perms", "01777", "--size", size, "--tmpfs", "/tmp", "--dir", "/etc"]
    if Path("/etc/fonts").is_dir():
        argv += ["--ro-bind", "/etc/fonts", "/etc/fonts"]
    argv += ["--ro-bind", str(policies), "/etc/chromium/policies", "--remount-ro", "/", "--clearenv"]
    for key, value in {"HOME": "/tmp", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}.items():
        argv += ["--setenv", key, value]
    return [*argv, "--chdir", "/tmp", "--"]


def _chromium_flags(config: BrowserConfig) -> list[str]:
    return [
        f"--host-resolver-rules=MAP {HOSTNAME} 127.0.0.1",
        f"--js-flags=--max-old-space-size={config.js_heap_mb}",
        "--disable-gpu",
        "--disk-cache-size=33554432",
        "--no-pings",
        "--deny-permission-prompts",
    ]
