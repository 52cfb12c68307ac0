"""The ``oas`` profile's offline ``apt-get``: the programs OAS's agents apt-installed, set up on the host beforehand.

In OpenHands' runtime agents ran ``apt-get install -y php-cli`` (or ``openssh-server``, ``cron``, ``zbar-tools``,
``libzbar0``) over the network. Set-up installs those Debian packages on the host (``scripts/system_packages.sh``),
so their programs are in the host's ``/usr``, which every sandbox sees read-only. The library folder build
(``toolemu.toolkits.sandbox.oas_image``) then copies each package's ``/etc`` and ``/var`` files, as the package
left them, into ``apt/<name>/root/`` with an index (versions, ``dpkg`` status stanzas and file lists, the host's
other packages). Host secrets never enter it: files other users cannot read and SSH host keys are left out.
Inside the sandbox the profile's ``apt-get`` (``oas_shims/apt_main.py``) "installs" a package by copying those
files into the episode's own ``/etc`` and ``/var`` and recording it in the episode's ``/var/lib/dpkg``.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from toolemu.core.errors import SandboxError

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AptPackage:
    """One package the sandbox's ``apt-get install`` can install offline."""

    name: str
    """The name agents install it by."""
    debs: tuple[str, ...]
    """Host Debian packages it stands for (``fnmatch`` patterns over the installed ones; the first is ``name``)."""
    files: tuple[str, ...] = ()
    """Host paths (files or folders, relative to ``/``, under ``etc/`` or ``var/``) its install seeds."""
    aliases: tuple[str, ...] = ()
    """Other names (``fnmatch`` patterns) that install it, such as the versioned Debian name."""
    host_keys: bool = False
    """Whether installing it generates the episode's own SSH host keys (``ssh-keygen -A``), as its postinst does."""
    accounts: tuple[str, ...] = ()
    """``/etc/passwd`` lines its postinst adds (when the name is not there yet)."""
    run_dirs: tuple[str, ...] = ()
    """Folders it needs under ``/run`` (the sandbox's own RAM folder)."""


APT_PACKAGES: tuple[AptPackage, ...] = (
    AptPackage("php-cli", ("php-cli", "php-common", "php*-cli", "php*-common", "php*-opcache", "php*-readline"),
               ("etc/php", "etc/cron.d/php", "var/lib/php"), aliases=("php", "php[0-9]*.[0-9]*", "php*-cli")),
    AptPackage("openssh-server", ("openssh-server", "openssh-sftp-server"),
               ("etc/ssh", "etc/default/ssh", "etc/pam.d/sshd", "etc/init.d/ssh"), aliases=("ssh",),
               host_keys=True, accounts=("sshd:x:100:65534::/run/sshd:/usr/sbin/nologin",), run_dirs=("run/sshd",)),
    AptPackage("cron", ("cron", "cron-daemon-common"),
               ("etc/crontab", "etc/cron.d", "etc/cron.daily", "etc/cron.hourly", "etc/cron.weekly",
                "etc/cron.monthly", "etc/cron.yearly", "etc/default/cron", "etc/pam.d/cron", "etc/init.d/cron",
                "var/spool/cron")),
    AptPackage("zbar-tools", ("zbar-tools", "libzbar0")),
    AptPackage("libzbar0", ("libzbar0",)),
)
"""What ``apt-get install`` offers offline; ``scripts/system_packages.sh`` installs the same ``debs`` on the host."""

INDEX = "index.json"
"""The index in the ``apt`` folder: ``{"packages": {name: {...}}, "base": {deb: version}}``."""

_SECRET_NAMES = ("ssh_host_*",)
"""Host files never copied even when readable (the host's SSH identity)."""
_MAX_FILE_BYTES = 4 * 1024 * 1024


def build_apt(folder: Path) -> list[str]:
    """Copies the seed files and the ``dpkg`` records of every ``APT_PACKAGES`` entry installed on the host.

    Returns:
        The names of the packages that are not installed on the host (``apt-get install`` of those inside the
        sandbox then says set-up did not provide them).

    Raises:
        SandboxError: When ``dpkg-query`` is missing or fails (not a Debian-like host).
    """
    folder.mkdir()
    base = _installed()
    packages: dict[str, object] = {}
    missing: list[str] = []
    for package in APT_PACKAGES:
        debs = sorted({name for pattern in package.debs for name in base if fnmatch.fnmatchcase(name, pattern)})
        if package.name not in debs:
            missing.append(package.name)
            continue
        root = folder / package.name / "root"
        root.mkdir(parents=True)
        for rel in package.files:
            _copy_host(Path("/") / rel, root / rel)
        packages[package.name] = {
            "aliases": list(package.aliases),
            "host_keys": package.host_keys,
            "accounts": list(package.accounts),
            "run_dirs": list(package.run_dirs),
            "debs": [{"name": d, "version": base[d], "status": _query(["-s", d]).strip() + "\n",
                      "files": _query(["-L", d])} for d in debs],
        }
    (folder / INDEX).write_text(json.dumps({"packages": packages, "base": base}, indent=1, sort_keys=True) + "\n")
    if missing:
        logger.warning("OAS apt packages not installed on this host (run scripts/system_packages.sh as root): %s",
                       ", ".join(missing))
    return missing


def _query(args: list[str]) -> str:
    try:
        done = subprocess.run(["dpkg-query", *args], capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxError(f"dpkg-query {' '.join(args)} failed ({e}); the OAS apt set-up needs a Debian host") from e
    if done.returncode != 0:
        raise SandboxError(f"dpkg-query {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done.stdout


def _installed() -> dict[str, str]:
    """The host's installed Debian packages and their versions."""
    out = _query(["-W", "-f", "${Package}\t${Version}\t${db:Status-Status}\n"])
    found: dict[str, str] = {}
    for line in out.splitlines():
        name, _, rest = line.partition("\t")
        version, _, status = rest.partition("\t")
        if status == "installed":
            found[name] = version
    return found


def _copy_host(src: Path, dest: Path) -> None:
    """Copies a host file or folder tree without following links; unreadable files and secrets are left out."""
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return
    if any(fnmatch.fnmatchcase(src.name, p) for p in _SECRET_NAMES):
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(st.st_mode):
        dest.symlink_to(os.readlink(src))
    elif stat.S_ISDIR(st.st_mode):
        dest.mkdir(exist_ok=True)
        for entry in sorted(os.listdir(src)):
            _copy_host(src / entry, dest / entry)
        dest.chmod(stat.S_IMODE(st.st_mode) & 0o1777)
    elif stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IROTH and st.st_size <= _MAX_FILE_BYTES:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            dest.write_bytes(f.read(_MAX_FILE_BYTES + 1)[:_MAX_FILE_BYTES])
        dest.chmod(stat.S_IMODE(st.st_mode) & 0o777)
