"""Episode roots: build a seed template from an ``EnvironmentSpec`` once, then copy it per episode."""

from __future__ import annotations

import hashlib
import os
import posixpath
import shutil
from pathlib import Path

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.core.limits import MAX_FOLDER_DEPTH, MAX_SEED_FILE_BYTES
from toolemu.core.types import DEFAULT_USER, EnvironmentSpec, SeedFile, seed_path_problem
from toolemu.services.base import HOSTNAME
from toolemu.toolkits.sandbox.bwrap import HOST_ETC_RO, SANDBOX_UID, WRITABLE_DIRS, home_of


def etc_files(user: str = DEFAULT_USER) -> dict[str, str]:
    """Returns the files of the minimal ``/etc`` every episode root starts with, for sandbox account ``user``
    (uid and gid ``SANDBOX_UID``, home ``/home/<user>``); the grader's ``/etc`` is built from them too.

    Raises:
        SandboxError: When ``user`` is not a valid account name.
    """
    u = SANDBOX_UID
    return {
        "passwd": (
            "root:x:0:0:root:/root:/bin/bash\n"
            "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
            f"{user}:x:{u}:{u}:{user}:{home_of(user)}:/bin/bash\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
        "group": f"root:x:0:\ndaemon:x:1:\n{user}:x:{u}:\nnogroup:x:65534:\n",
        **_ETC_COMMON,
    }


_ETC_COMMON: dict[str, str] = {
    # OpenAgentSafety's services (toolemu.services) answer on the episode's loopback under their company's name
    # (toolemu.services.base.HOSTNAME) when a case has them; placeholders otherwise where asked
    # (sandbox.placeholder).
    "hosts": (f"127.0.0.1\tlocalhost\n127.0.1.1\tsandbox\n127.0.0.1\t{HOSTNAME}\n"
              "::1\tlocalhost ip6-localhost ip6-loopback\n"),
    "hostname": "sandbox\n",
    "resolv.conf": "# The sandbox has no network.\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\n",
    "shells": "/bin/sh\n/bin/bash\n/usr/bin/bash\n",
    "profile": 'export PATH="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"\n',
}
ETC_FILES: dict[str, str] = etc_files()
"""``etc_files()`` of the default account; its names are the template files of every ``/etc``."""
ETC_SYMLINKS: dict[str, str] = {"localtime": "/usr/share/zoneinfo/Etc/UTC", "mtab": "/proc/self/mounts"}
"""Links of that ``/etc`` to host paths; seeding over one replaces the link, never writes through it."""
# A template holds the case's seed files (bounded by the case limits) and our skeleton; these only stop a copy
# of a corrupted template from running without end.
_TEMPLATE_MAX_FILES = 1_000_000
_TEMPLATE_MAX_BYTES = 1 << 40
ETC_HOST_COPIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "os-release")
"""Host ``/etc`` entries copied into that ``/etc`` (the dynamic loader needs them)."""
_SKELETON_DIRS = (
    "workspace",
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


OAS_ONLY_DIRS = ("outputs", "root")
"""``WRITABLE_DIRS`` that exist only under the ``oas`` profile (OpenHands' ``/outputs`` and root's home)."""


def sandbox_to_host(root: Path, path: str) -> Path:
    """Maps an absolute sandbox path under one of ``WRITABLE_DIRS`` to its host path under ``root``.

    Raises:
        ValueError: When the path is relative, not normalised, or outside the writable folders.
    """
    problem = seed_path_problem(path)
    if problem is not None:
        raise ValueError(problem)
    norm = posixpath.normpath(path)
    return root / norm.lstrip("/")


def build_template(template: Path, environment: EnvironmentSpec, uid: int | None) -> None:
    """Creates a seed tree at ``template``: the skeleton, a minimal ``/etc``, then the case's files.

    Raises:
        CaseError: When a seed file's path is outside the writable folders, or its source is missing.
    """
    for name in WRITABLE_DIRS:
        if name not in OAS_ONLY_DIRS or environment.sandbox_profile == "oas":
            (template / name).mkdir(parents=True, exist_ok=True)
    home = home_of(environment.user).lstrip("/")
    for rel in (*_SKELETON_DIRS, home):
        (template / rel).mkdir(parents=True, exist_ok=True)
    for rel in ("tmp", "var/tmp"):
        (template / rel).chmod(0o1777)
    if environment.sandbox_profile == "oas":
        (template / "root").chmod(0o700)
    etc = template / "etc"
    for name, text in etc_files(environment.user).items():
        (etc / name).write_text(text)
    for name, target in ETC_SYMLINKS.items():
        (etc / name).symlink_to(target)
    for name in ETC_HOST_COPIES:
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
        safefs.chown_tree(template, uid, uid)


def _place(template: Path, seed: SeedFile, base_dir: str | None) -> None:
    """Writes one seed file into the template, never through a link (the template holds links to host paths,
    ``etc/localtime`` and ``etc/mtab``: a seed at such a path replaces the link with a regular file)."""
    try:
        sandbox_to_host(template, seed.path)
    except ValueError as e:
        raise CaseError(
            f"environment.files: {e}; seed files must live in the sandbox's writable folders"
        ) from e
    if (seed.content is None) == (seed.source is None):
        raise CaseError(f"environment.files {seed.path!r}: give exactly one of `content` or `source`")
    rel = posixpath.normpath(seed.path).lstrip("/")
    if seed.content is not None:
        try:
            data = seed.content.encode("utf-8")
        except UnicodeEncodeError as e:
            raise CaseError(
                f"environment.files {seed.path!r}: content holds a lone surrogate at character {e.start}, which "
                "UTF-8 cannot encode; remove it"
            ) from None
    else:
        if base_dir is None:
            raise CaseError(
                f"environment.files {seed.path!r}: source {seed.source!r} needs a case loaded from a file; "
                "use `content`"
            )
        if not os.path.lexists(os.path.join(base_dir, str(seed.source))):
            raise CaseError(
                f"environment.files {seed.path!r}: source {seed.source!r} not found under {base_dir} "
                "(paths are relative to the case file's folder)"
            )
        # Read again here, not only checked at load: the case folder may have changed since (a swapped link).
        try:
            data = safefs.read_bytes(base_dir, str(seed.source), what="seed file", limit=MAX_SEED_FILE_BYTES)
        except CaseError as e:
            raise CaseError(f"environment.files {seed.path!r}: source {seed.source!r}: {e}") from None
    try:
        safefs.write_file_beneath(template, rel, data, mode=seed.mode, replace_links=True)
    except CaseError as e:
        raise CaseError(f"environment.files {seed.path!r}: {e}") from None


def write_instruction(base: Path, text: str, uid: int | None) -> Path:
    """Writes ``text`` as ``task.md`` in a folder of its own under ``base`` (one per text, kept) for a sandbox
    to bind read-only at ``/instruction``, owned by ``uid`` (the sandbox's root) when given; returns the folder."""
    key = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    folder = base / f"instruction-{key}"
    if not (folder / "task.md").is_file():
        folder.mkdir(mode=0o755, exist_ok=True)
        (folder / "task.md").write_bytes(text.encode("utf-8", "surrogateescape") + b"\n")
        (folder / "task.md").chmod(0o444)
        if uid is not None:
            safefs.chown_tree(folder, uid, uid)
    return folder


def copy_root(src: Path, dst: Path) -> None:
    """Copies a seed tree with modes and ownership (no hard links, so episode writes never reach ``src``).

    The template's own links are recreated, never followed.

    Raises:
        OSError: The copy failed (the template is ours, so any failure is an infrastructure error).
    """
    try:
        safefs.copy_tree(
            src, dst, what="seed template", links="keep", mode_mask=0o7777, keep_owner=True,
            max_files=_TEMPLATE_MAX_FILES, max_bytes=_TEMPLATE_MAX_BYTES, max_depth=MAX_FOLDER_DEPTH + 2,
        )
    except CaseError as e:
        raise OSError(str(e)) from e


def remove_tree(path: Path) -> None:
    """Deletes a tree the agent may have made hostile (``chmod 000``, links, FIFOs, deep nesting)."""
    safefs.remove_tree(path)
