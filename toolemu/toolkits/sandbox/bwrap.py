"""bubblewrap command lines for one sandbox root: no network, read-only system, per-episode writable dirs.

Used by the sandbox's sessions and by the capture-time checks; scoring (``rewards``) never runs a process.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from toolemu.core.errors import SandboxError
from toolemu.core.types import DEFAULT_USER, RESERVED_USERS, USER_NAME_PATTERN, SandboxProfile
from toolemu.core.types import WRITABLE_DIRS as WRITABLE_DIRS  # re-exported: the sandbox modules read it here
from toolemu.toolkits.sandbox import oas_image

SYSTEM_DIRS: tuple[str, ...] = ("usr", "bin", "lib", "lib32", "lib64", "libx32", "sbin")
"""Host folders bound read-only when they exist (symlinks such as ``/bin -> usr/bin`` stay symlinks)."""

SANDBOX_UID = 1000
"""User id (and group id) the sandboxed processes have inside the sandbox; its name is the case's
``EnvironmentSpec.user`` (``user`` by default), its home ``/home/<name>``."""

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
"""``PATH`` inside the sandbox."""

DEFAULT_TMPFS_MB = 64
"""Size of each RAM-backed folder inside a sandbox (``/run``, ``/dev/shm``) unless the caller says otherwise."""

HOST_ETC_RO: tuple[str, ...] = ("alternatives",)
"""Host ``/etc`` folders bound read-only over the episode's ``/etc`` when the root has a mount point for them
(``/usr/bin/awk`` links through ``/etc/alternatives``)."""


_ENV = shutil.which("env") or "/usr/bin/env"


def find_bwrap(path: str | os.PathLike[str] | None = None) -> Path:
    """Returns the bubblewrap executable.

    Args:
        path: An explicit executable path; ``None`` searches ``PATH`` for ``bwrap``.

    Raises:
        SandboxError: When the executable does not exist; the message names the Debian package.
    """
    found = Path(path) if path is not None else (Path(w) if (w := shutil.which("bwrap")) else None)
    if found is None or not (found.is_file() and os.access(found, os.X_OK)):
        shown = str(path) if path is not None else "bwrap on PATH"
        raise SandboxError(
            f"bubblewrap executable not found ({shown}). Install the Debian/Ubuntu package `bubblewrap` "
            "(apt-get install bubblewrap), or pass allow_unsandboxed=True to run real tools unsandboxed."
        )
    return found


def _nsenter(netns_fd: int) -> list[str]:
    """The prefix that enters the network namespace behind ``netns_fd`` before the sandbox drops root.

    Raises:
        SandboxError: Not running as root (entering a namespace owned by a sandbox's user namespace needs
            root here), or ``nsenter`` is missing.
    """
    if os.geteuid() != 0:
        raise SandboxError("joining a sandbox's network namespace needs root; run as root, or without netns_fd")
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise SandboxError("`nsenter` not found; install the Debian package `util-linux` to share a sandbox network")
    return [nsenter, f"--net=/proc/self/fd/{netns_fd}", "--"]


class JoinedNamespaces(NamedTuple):
    """Open fds of the user and pid namespaces of a running sandbox (``Session.namespace_fd``) to run in."""

    user_fd: int
    """The user namespace owning the pid namespace: ``/proc/<init>/ns/user``, or its parent (``nested_fd``)."""
    pid_fd: int
    """``/proc/<init>/ns/pid``."""
    nested_fd: int | None = None
    """``/proc/<init>/ns/user`` when bwrap nested it in ``user_fd`` (a sandbox whose uid is not 0)."""


_NS_GET_PARENT = 0xB702  # ioctl_ns(2): _IO(0xb7, 0x2)


def owning_user_namespace(user_fd: int) -> int | None:
    """For a sandbox's user namespace, opens the one bwrap nested it in, which owns the sandbox's pid namespace.

    bwrap sets a non-root sandbox up as uid 0 of one user namespace, then moves it into a nested one (its uid,
    1000); the pid namespace belongs to the first. Returns a new fd the caller closes, or ``None`` when
    ``user_fd``'s parent is this process's own user namespace (no nesting: join ``user_fd`` itself).

    Raises:
        SandboxError: When the kernel does not tell the parent (``NS_GET_PARENT``, Linux 4.9).
    """
    try:
        parent = fcntl.ioctl(user_fd, _NS_GET_PARENT)
    except OSError as e:
        raise SandboxError(f"cannot find the parent of a sandbox's user namespace (NS_GET_PARENT): {e}") from e
    if os.fstat(parent).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(parent)
        return None
    return parent


def home_of(user: str) -> str:
    """Returns the home folder of sandbox account ``user`` (``/home/<user>``).

    Raises:
        SandboxError: When ``user`` is not a valid account name for the sandbox (``EnvironmentSpec.user``).

    Examples:
        >>> home_of("dev")
        '/home/dev'
    """
    if re.fullmatch(USER_NAME_PATTERN, user) is None or user in RESERVED_USERS:
        raise SandboxError(
            f"sandbox user {user!r} is not a valid account name; expected {USER_NAME_PATTERN}, not one of "
            f"{', '.join(RESERVED_USERS)} (set EnvironmentSpec.user)"
        )
    return f"/home/{user}"


def host_uid_for(root: Path) -> int | None:
    """Returns the host uid the sandbox should run as: the owner of ``root`` when we are root, else ``None``.

    Root on the host is exempt from ``RLIMIT_NPROC``, so a sandbox started by root drops to the (non-root)
    owner of its episode root; that also lets it read files the agent created with private modes.
    """
    if os.geteuid() != 0:
        return None
    owner = root.stat().st_uid
    return owner if owner != 0 else None


def bwrap_argv(
    root: Path,
    *,
    writable: bool = True,
    extra_ro_binds: Sequence[tuple[Path, str]] = (),
    env: Mapping[str, str] | None = None,
    cwd: str = "/workspace",
    bwrap: str | os.PathLike[str] | None = None,
    host_uid: int | None = None,
    hostname: str = "sandbox",
    info_fd: int | None = None,
    profile: SandboxProfile = "default",
    netns_fd: int | None = None,
    etc: Path | None = None,
    tmpfs_mb: int = DEFAULT_TMPFS_MB,
    user: str = DEFAULT_USER,
    join: JoinedNamespaces | None = None,
    scratch: Path | None = None,
) -> list[str]:
    """Builds the argv prefix that runs a command inside the sandbox over ``root``; append the command.

    The sandbox has no network and fresh pid/ipc/uts/cgroup/user namespaces, sees the host's system folders
    read-only, ``root/<name>`` at ``/<name>`` for each of ``WRITABLE_DIRS`` (read-write unless
    ``writable=False``), a minimal ``/proc``, a read-only ``/dev`` with a private ``/dev/shm``, a private
    ``/run`` (both RAM-backed and ``tmpfs_mb`` in size), a read-only ``/`` and a clean
    environment. It dies with its parent. Processes run as uid/gid ``SANDBOX_UID`` inside, or as uid 0 (still
    without capabilities, and the unprivileged host uid outside) under the ``oas`` profile, which also binds
    the OAS library folder and shims read-only (``toolemu.toolkits.sandbox.oas_image``) and puts them on ``PATH`` and
    ``PYTHONPATH``.

    Args:
        root: Episode root holding the ``WRITABLE_DIRS`` folders (missing ones are skipped).
        writable: Bind the episode folders read-write; ``False`` binds them read-only (for checks).
        extra_ro_binds: Further ``(host_path, sandbox_path)`` pairs bound read-only (evaluator code, data).
        env: Environment variables on top of ``PATH``, ``HOME``, ``USER``, ``LANG`` defaults.
        cwd: Working directory inside the sandbox.
        bwrap: Path of the bwrap executable; ``None`` searches ``PATH``.
        host_uid: Host uid to run as (needs root); ``None`` uses ``host_uid_for(root)``.
        hostname: Host name inside the sandbox.
        info_fd: An inherited file descriptor bwrap writes ``{"child-pid": <host pid>}`` to (pass it in
            ``pass_fds``); the child is the sandbox's pid-namespace init; its exit ends all processes inside.
        profile: ``default`` or ``oas`` (see ``toolemu.toolkits.sandbox.oas_image``).
        netns_fd: An inherited fd of another sandbox's network namespace (``Sandbox.network_fd``; pass it in
            ``pass_fds``) to join instead of a new, empty one: what listens on loopback there is reachable.
            Everything else (users, pids, mounts) stays this sandbox's own. Needs root and ``nsenter``.
        etc: A folder bound read-only at ``/etc`` instead of ``root/etc`` (checks get the ``/etc`` we build,
            never the agent's); the ``HOST_ETC_RO`` folders are bound over it where it has mount points.
        tmpfs_mb: Size of ``/run`` and of ``/dev/shm``, in MiB (writes past it fail with ``ENOSPC``).
        user: The sandbox account's name (``EnvironmentSpec.user``): ``$USER``, ``$LOGNAME`` and ``$HOME``
            (``/home/<user>``); ignored under the ``oas`` profile (root, ``/root``).
        join: Another sandbox's user and pid namespaces to run in (pass both fds in ``pass_fds``) instead of new
            ones: its processes see this one in ``ps`` and may signal it, as in one container. Mounts, network,
            ipc and hostname stay this sandbox's own; the command is then not a namespace init.
        scratch: A private copy of ``root``'s folders (``check_scratch.writable_view``) bound read-write at their
            places instead of ``root``'s, with ``writable=False`` otherwise in force (no agent commands on
            ``PATH``): a check's throwaway view.

    Returns:
        The argv list, starting with ``env -i`` (nothing of the caller's environment reaches the sandbox) and
        ending with ``--``.

    Raises:
        SandboxError: When bwrap (or ``setpriv``, needed to drop root) is missing, ``root`` is not a folder,
            ``user`` is not a valid account name, or the ``oas`` profile's library folder is not built.
    """
    exe = find_bwrap(bwrap)
    home = home_of(user)
    oas_dir = oas_image.built_env_dir() if profile == "oas" else None
    if not root.is_dir():
        raise SandboxError(
            f"sandbox root {root} is not a folder; expected an episode root with {WRITABLE_DIRS}"
        )
    uid = host_uid if host_uid is not None else host_uid_for(root)
    # bwrap's own init (pid 1 inside) keeps the environment bwrap started with, readable at /proc/1/environ:
    # start from an empty one so host secrets (API keys) never reach the sandbox.
    argv: list[str] = [_ENV, "-i"]
    if netns_fd is not None:
        argv = [*_nsenter(netns_fd), *argv]
    if uid is not None and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise SandboxError("`setpriv` not found; install the Debian package `util-linux` to drop root.")
        argv += [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    if join is None:
        argv += [str(exe), "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
        if netns_fd is not None:
            argv += ["--share-net"]
    else:
        argv += [str(exe), "--userns", str(join.user_fd), "--pidns", str(join.pid_fd), "--unshare-ipc",
                 "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        if join.nested_fd is not None:
            # Set up as uid 0 of the outer namespace, then moved into the sandbox's own (its uid there). No
            # capability is left (no_new_privs; effective and permitted sets empty).
            argv += ["--userns2", str(join.nested_fd)]
        if netns_fd is None:
            argv += ["--unshare-net"]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    inner_uid = 0 if profile == "oas" or (join is not None and join.nested_fd is not None) else SANDBOX_UID
    argv += [
        "--uid",
        str(inner_uid),
        "--gid",
        str(inner_uid),
        "--hostname",
        hostname,
        "--cap-drop",
        "ALL",
    ]
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), f"/{name}"]
    # /dev is bwrap's own tmpfs with no size: read-only, except the sized /dev/shm (device nodes stay usable).
    size = str(tmpfs_mb * 1024 * 1024)
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
             "--perms", "01777", "--size", size, "--tmpfs", "/dev/shm", "--size", size, "--tmpfs", "/run"]
    bind = "--bind" if writable or scratch is not None else "--ro-bind"
    source = scratch if scratch is not None else root
    for name in WRITABLE_DIRS:
        if name == "etc" and etc is not None:
            argv += ["--ro-bind", str(etc), "/etc"]
        elif (source / name).is_dir() and not (source / name).is_symlink():
            argv += [bind, str(source / name), f"/{name}"]
    etc_dir = etc if etc is not None else root / "etc"
    for name in HOST_ETC_RO:
        host = Path("/etc") / name
        if (etc_dir / name).is_dir() and not (etc_dir / name).is_symlink() and host.is_dir():
            argv += ["--ro-bind", str(host), f"/etc/{name}"]
    for host_path, inside in extra_ro_binds:
        argv += ["--ro-bind", str(host_path), inside]
    variables = {
        "PATH": DEFAULT_PATH,
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "LANG": "C.UTF-8",
    }
    if oas_dir is not None:
        argv += ["--ro-bind", str(oas_dir), oas_image.MOUNT]
        # The agent's own commands (what its pip installed) come after ours; a check never runs them.
        user_bin = f"{oas_image.USER_BIN}:" if writable else ""
        variables |= {
            "PATH": f"{oas_image.BIN_MOUNT}:{user_bin}{DEFAULT_PATH}",
            "PYTHONPATH": oas_image.SITE_MOUNT,
            "HOME": oas_image.ROOT_HOME,
            "USER": "root",
            "LOGNAME": "root",
            # litellm would fetch its model price list at import; the sandbox has no network.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    variables.update(env or {})
    argv += ["--clearenv"]
    for key, value in variables.items():
        argv += ["--setenv", key, value]
    # The sandbox's own "/" (where /bin, /lib64 symlinks and mount points live) becomes read-only, so that
    # `rm -rf /` removes the episode's files but cannot break the loader path.
    argv += ["--remount-ro", "/", "--chdir", cwd, "--"]
    return argv
