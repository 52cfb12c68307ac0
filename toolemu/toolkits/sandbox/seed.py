"""Episode roots: build a seed template from an ``EnvironmentSpec`` once, then copy it per episode."""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from pathlib import Path

from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_SEED_FILE_BYTES
from toolemu.core.types import EnvironmentSpec, SeedFile
from toolemu.core.untrusted import resolve_inside
from toolemu.toolkits.sandbox.bwrap import HOST_ETC_RO, SANDBOX_HOME, SANDBOX_UID, WRITABLE_DIRS

_U = SANDBOX_UID
_ETC_FILES: dict[str, str] = {
    "passwd": (
        "root:x:0:0:root:/root:/bin/bash\n"
        "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
        f"user:x:{_U}:{_U}:user:{SANDBOX_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\ndaemon:x:1:\nuser:x:{_U}:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "hostname": "sandbox\n",
    "resolv.conf": "# The sandbox has no network.\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n",
    "shells": "/bin/sh\n/bin/bash\n/usr/bin/bash\n",
    "profile": 'export PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"\n',
}
_ETC_SYMLINKS: dict[str, str] = {"localtime": "/usr/share/zoneinfo/Etc/UTC", "mtab": "/proc/self/mounts"}
_ETC_HOST_COPIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "os-release")
_SKELETON_DIRS = (
    "workspace",
    SANDBOX_HOME.lstrip("/"),
    "var/log",
    "var/tmp",
    "var/lib",
    "var/cache",
    "var/spool",
    "var/mail",
    "var/backups",
    "var/local",
    "var/opt",
)


def sandbox_to_host(root: Path, path: str) -> Path:
    """Maps an absolute sandbox path under one of ``WRITABLE_DIRS`` to its host path under ``root``.

    Raises:
        ValueError: When the path is relative, not normalised, or outside the writable folders.
    """
    norm = posixpath.normpath(path)
    top = norm.lstrip("/").split("/", 1)[0]
    if (
        not path.startswith("/")
        or norm.startswith("//")
        or top not in WRITABLE_DIRS
        or ".." in norm.split("/")
    ):
        raise ValueError(f"path {path!r} is not under {', '.join('/' + d for d in WRITABLE_DIRS)}")
    return root / norm.lstrip("/")


def build_template(template: Path, environment: EnvironmentSpec, uid: int | None) -> None:
    """Creates a seed tree at ``template``: the skeleton, a minimal ``/etc``, then the case's files.

    Raises:
        CaseError: When a seed file's path is outside the writable folders, or its source is missing.
    """
    for name in WRITABLE_DIRS:
        if name != "root" or environment.sandbox_profile == "oas":
            (template / name).mkdir(parents=True, exist_ok=True)
    for rel in _SKELETON_DIRS:
        (template / rel).mkdir(parents=True, exist_ok=True)
    for rel in ("tmp", "var/tmp"):
        (template / rel).chmod(0o1777)
    if environment.sandbox_profile == "oas":
        (template / "root").chmod(0o700)
    etc = template / "etc"
    for name, text in _ETC_FILES.items():
        (etc / name).write_text(text)
    for name, target in _ETC_SYMLINKS.items():
        (etc / name).symlink_to(target)
    for name in _ETC_HOST_COPIES:
        host = Path("/etc") / name
        if host.is_symlink():
            (etc / name).symlink_to(os.readlink(host))
        elif host.is_dir():
            shutil.copytree(host, etc / name, symlinks=True)
        elif host.is_file():
            shutil.copyfile(host, etc / name)
    for name in HOST_ETC_RO:
        if (Path("/etc") / name).is_dir():
            (etc / name).mkdir(exist_ok=True)
    for seed in environment.files:
        _place(template, seed, environment.base_dir)
    if uid is not None:
        _chown_tree(template, uid)


def _place(template: Path, seed: SeedFile, base_dir: str | None) -> None:
    try:
        dest = sandbox_to_host(template, seed.path)
    except ValueError as e:
        raise CaseError(
            f"environment.files: {e}; seed files must live in the sandbox's writable folders"
        ) from e
    if (seed.content is None) == (seed.source is None):
        raise CaseError(f"environment.files {seed.path!r}: give exactly one of `content` or `source`")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if seed.content is not None:
        dest.write_text(seed.content)
    else:
        if base_dir is None:
            raise CaseError(
                f"environment.files {seed.path!r}: source {seed.source!r} needs a case loaded from a file; "
                "use `content`"
            )
        # Checked again here, not only at load: the case folder may have changed since (a swapped symlink).
        try:
            src = resolve_inside(base_dir, str(seed.source))
        except CaseError as e:
            raise CaseError(f"environment.files {seed.path!r}: source: {e}") from None
        if not src.is_file():
            raise CaseError(
                f"environment.files {seed.path!r}: source {seed.source!r} not found at {src} "
                "(paths are relative to the case file's folder)"
            )
        if src.stat().st_size > MAX_SEED_FILE_BYTES:
            raise CaseError(
                f"environment.files {seed.path!r}: source {seed.source!r} is over the "
                f"{MAX_SEED_FILE_BYTES:,}-byte limit"
            )
        shutil.copyfile(src, dest)
    dest.chmod(seed.mode)


def _chown_tree(top: Path, uid: int) -> None:
    os.lchown(top, uid, uid)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def copy_root(src: Path, dst: Path) -> None:
    """Copies a seed tree with modes and ownership (no hard links, so episode writes never reach ``src``)."""
    st = os.lstat(src)
    os.mkdir(dst, stat.S_IMODE(st.st_mode))
    _copy_meta(dst, st)
    with os.scandir(src) as entries:
        for entry in entries:
            target = os.path.join(dst, entry.name)
            est = entry.stat(follow_symlinks=False)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
                _copy_owner(target, est)
            elif entry.is_dir(follow_symlinks=False):
                copy_root(Path(entry.path), Path(target))
            elif entry.is_file(follow_symlinks=False):
                shutil.copyfile(entry.path, target, follow_symlinks=False)
                _copy_meta(target, est)


def _copy_meta(path: str | Path, st: os.stat_result) -> None:
    os.chmod(path, stat.S_IMODE(st.st_mode))
    _copy_owner(path, st)


def _copy_owner(path: str | Path, st: os.stat_result) -> None:
    if os.geteuid() == 0:
        os.lchown(path, st.st_uid, st.st_gid)


def remove_tree(path: Path) -> None:
    """Deletes a tree the agent may have made unreadable (``chmod 000``)."""
    if not os.path.lexists(path):
        return

    def _unlock(func: object, p: str, exc: object) -> None:
        parent = os.path.dirname(p)
        os.chmod(parent, 0o700)
        if os.path.isdir(p) and not os.path.islink(p):
            os.chmod(p, 0o700)
            shutil.rmtree(p)
        else:
            os.unlink(p)

    shutil.rmtree(path, onerror=_unlock)
