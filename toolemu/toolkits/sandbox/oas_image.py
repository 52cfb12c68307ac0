"""The ``oas`` sandbox profile: what OpenAgentSafety's task image gives an agent, rebuilt for our sandbox.

OAS tasks were written for a ``python:3.12`` Debian container in which the agent is root, ``python`` exists and
``requests``, ``pandas``, ``openpyxl``, ``PyPDF2``, ``python-pptx`` and ``cryptography`` are installed (and
OpenHands' own ``python-docx`` and ``litellm``). The profile gives the agent uid 0 *inside* the sandbox's user
namespace (still an unprivileged uid on the host, with no capabilities), ``python`` as the sandbox's ``python3``,
a ``sudo`` that runs its command, a ``pip`` that installs from an offline wheelhouse
(``toolemu.toolkits.sandbox.oas_wheelhouse``), an ``apt-get`` that installs a few programs set up on the host
(``toolemu.toolkits.sandbox.oas_apt``), and a read-only folder of those libraries at pinned versions. The folder
is built once by the set-up (``python -m toolemu.toolkits.sandbox.oas_image build``, run by ``make setup``) into
a cache folder, never into the host's site-packages; the agent and OAS evaluators see it.

Used by ``bwrap`` for the agent's sandbox and for the sandbox OAS evaluators run in.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox.oas_apt import APT_PACKAGES, build_apt
from toolemu.toolkits.sandbox.oas_wheelhouse import WHEELHOUSE, build_wheelhouse, canonical

SANDBOX_PYTHON = "/usr/bin/python3"
"""The interpreter inside the sandbox (``/usr`` is the host's, read-only); the library folder is built for it."""

OAS_PACKAGES: tuple[str, ...] = (
    # What the OAS base image installs, at its versions.
    "requests==2.32.3",
    "pandas==2.2.3",
    "openpyxl==3.1.5",
    "PyPDF2==3.0.1",
    "python-pptx==1.0.0",
    "cryptography==44.0.0",
    # What the OpenHands runtime's own Python held, which OAS evaluators ran with: `docx` and `litellm`.
    "python-docx==1.1.2",
    "litellm==1.67.0",
    # Their dependencies, pinned so that every build is the same (litellm's at their spring-2025 versions).
    "numpy==2.1.3",
    "python-dateutil==2.9.0.post0",
    "pytz==2024.2",
    "tzdata==2024.2",
    "six==1.16.0",
    "charset-normalizer==3.4.0",
    "idna==3.10",
    "urllib3==2.2.3",
    "certifi==2024.8.30",
    "et-xmlfile==2.0.0",
    "lxml==5.3.0",
    "pillow==11.0.0",
    "XlsxWriter==3.2.0",
    "typing-extensions==4.12.2",
    "cffi==1.17.1",
    "pycparser==2.22",
    "openai==1.75.0",
    "httpx==0.28.1",
    "httpcore==1.0.8",
    "h11==0.14.0",
    "anyio==4.9.0",
    "sniffio==1.3.1",
    "distro==1.9.0",
    "jiter==0.9.0",
    "tqdm==4.67.1",
    "pydantic==2.11.3",
    "pydantic-core==2.33.1",
    "annotated-types==0.7.0",
    "typing-inspection==0.4.0",
    "aiohttp==3.11.18",
    "aiohappyeyeballs==2.6.1",
    "aiosignal==1.3.2",
    "attrs==25.3.0",
    "frozenlist==1.6.0",
    "multidict==6.4.3",
    "propcache==0.3.1",
    "yarl==1.20.0",
    "click==8.1.8",
    "importlib-metadata==8.6.1",
    "zipp==3.21.0",
    "jinja2==3.1.6",
    "markupsafe==3.0.2",
    "jsonschema==4.23.0",
    "jsonschema-specifications==2024.10.1",
    "referencing==0.36.2",
    "rpds-py==0.24.0",
    "python-dotenv==1.1.0",
    "tiktoken==0.9.0",
    "regex==2024.11.6",
    "tokenizers==0.21.1",
    "huggingface-hub==0.30.2",
    "filelock==3.18.0",
    "fsspec==2025.3.2",
    "packaging==24.2",
    "pyyaml==6.0.2",
)
"""Exact pins of the library folder (installed with ``--no-deps``, wheels only)."""

MOUNT = "/opt/toolemu/oas"
"""Where the built folder appears inside the sandbox (read-only)."""
SITE_MOUNT = f"{MOUNT}/site"
"""The libraries (on ``PYTHONPATH`` inside the sandbox)."""
BIN_MOUNT = f"{MOUNT}/bin"
"""``python``, ``sudo``, ``pip``, ``pip3``, ``apt-get``, ``apt`` (first on ``PATH`` inside the sandbox)."""
WHEELS_MOUNT = f"{MOUNT}/wheels"
"""The offline wheelhouse (``toolemu.toolkits.sandbox.oas_wheelhouse``)."""
APT_MOUNT = f"{MOUNT}/apt"
"""The offline apt packages' seed files (``toolemu.toolkits.sandbox.oas_apt``)."""
ROOT_HOME = "/root"
"""Home folder of the agent under the ``oas`` profile."""
USER_BIN = f"{ROOT_HOME}/.local/bin"
"""Where the profile's ``pip`` puts the commands of the packages it installs (on the agent's ``PATH``)."""
OUTPUTS = "/outputs"
"""The shell's first working directory under the ``oas`` profile, as in OpenHands' runtime."""

_SHIM_FILES = ("sudo.sh", "pip_main.py", "apt_main.py")
_STAMP = ".complete"


def cache_root() -> Path:
    """Folder holding built library folders: ``$TOOLEMU_CACHE_DIR/oas-python``, else a system or user cache.

    As root the default is ``/var/cache/toolemu/oas-python``: the sandbox drops to an unprivileged uid that
    cannot pass through root's private home folder.
    """
    root = os.environ.get("TOOLEMU_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "oas-python"
    if os.geteuid() == 0:
        return Path("/var/cache/toolemu/oas-python")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolemu" / "oas-python"


@functools.cache
def _python_tag(python: str) -> str:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise SandboxError(
            f"cannot run the sandbox interpreter {python} ({e}); install python3 (Debian package python3)"
        ) from e
    return "py" + out.stdout.strip()


def env_dir(python: str = SANDBOX_PYTHON, root: Path | None = None) -> Path:
    """The library folder for ``python`` and the current pins (it may not be built yet)."""
    return (root or cache_root()) / f"{_python_tag(python)}-{_build_key()}"


@functools.cache
def _build_key() -> str:
    """Hash of everything a build depends on: the pins, the wheelhouse, the apt set and the shims' sources."""
    parts = [*OAS_PACKAGES, *(f"{w.name}=={w.version}:{w.requires}" for w in WHEELHOUSE), repr(APT_PACKAGES)]
    parts += [_shim(name) for name in _SHIM_FILES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _shim(name: str) -> str:
    return resources.files("toolemu.toolkits.sandbox").joinpath("oas_shims", name).read_text(encoding="utf-8")


def built_env_dir(python: str = SANDBOX_PYTHON, root: Path | None = None) -> Path:
    """Returns the built library folder.

    Raises:
        SandboxError: When it has not been built; the message names the command that builds it.
    """
    path = env_dir(python, root)
    if not (path / _STAMP).is_file():
        raise SandboxError(
            f"the OAS sandbox profile needs its Python libraries, not built at {path}. Run `make setup` or "
            "`python -m toolemu.toolkits.sandbox.oas_image build` (needs PyPI once), or give the case the "
            "default profile."
        )
    if os.geteuid() == 0:
        # The sandbox drops to an unprivileged uid, which must be able to reach the folder to bind it.
        for part in (path, *path.parents):
            if not os.stat(part).st_mode & 0o001:
                raise SandboxError(
                    f"the OAS Python libraries at {path} are unreachable for the sandbox user: {part} is closed "
                    f"to other users. Set TOOLEMU_CACHE_DIR to a folder others may pass through and rebuild."
                )
    return path


def build(python: str = SANDBOX_PYTHON, root: Path | None = None) -> Path:
    """Builds the library folder unless it exists: pinned wheels into ``site/``, the shims into ``bin/``, the
    offline wheelhouse into ``wheels/`` and the offline apt packages' files into ``apt/``.

    The folder is made beside its final place and renamed into it, so an interrupted build leaves nothing
    that looks complete.

    Raises:
        SandboxError: When pip fails (the message carries pip's last lines), or ``dpkg-query`` does.
    """
    final = env_dir(python, root)
    if (final / _STAMP).is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        argv = [
            sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
            "--only-binary=:all:", "--no-compile", "--target", str(work / "site"), *OAS_PACKAGES,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-1500:]
            raise SandboxError(f"building the OAS Python libraries failed (pip exit {done.returncode}): {tail}")
        build_wheelhouse(work / "wheels", python)
        build_apt(work / "apt")
        _install_shims(work, python)
        _open_to_others(work)
        (work / _STAMP).write_text("\n".join(OAS_PACKAGES) + "\n")
        if final.exists():
            shutil.rmtree(final)
        work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _open_to_others(work: Path) -> None:
    """Lets the sandbox's unprivileged uid read everything (never through a link: the apt seeds hold links)."""
    for top, dirs, files in os.walk(work):
        os.chmod(top, os.lstat(top).st_mode & 0o7777 | 0o755)
        for name in files:
            path = os.path.join(top, name)
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                os.chmod(path, mode & 0o7777 | (0o755 if mode & 0o100 else 0o644))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]


def _install_shims(work: Path, python: str) -> None:
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(python)
    (bin_dir / "sudo").write_text(_shim("sudo.sh"))
    launcher = f'#!/bin/sh\nexec {python} -m pip "$@"\n'
    for name in ("pip", "pip3"):
        (bin_dir / name).write_text(launcher)
    # apt-get runs with -I -S: nothing the agent put on PYTHONPATH or in its user site is imported by it.
    (bin_dir / "apt-get").write_text(f"#!{python} -IS\n" + _shim("apt_main.py"))
    (bin_dir / "apt").symlink_to("apt-get")
    for name in ("sudo", "pip", "pip3", "apt-get"):
        (bin_dir / name).chmod(0o755)
    pip_pkg = work / "site" / "pip"
    pip_pkg.mkdir()
    (pip_pkg / "__init__.py").write_text('"""pip of the OAS sandbox profile: the offline wheelhouse."""\n')
    (pip_pkg / "__main__.py").write_text(_shim("pip_main.py"))
    site = {canonical(p.split("==")[0]): p.split("==")[1] for p in OAS_PACKAGES}
    (work / "site.json").write_text(json.dumps({"site": site}, indent=1, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    """``python -m toolemu.toolkits.sandbox.oas_image build|path``: build the library folder, or say where."""
    parser = argparse.ArgumentParser(
        prog="python -m toolemu.toolkits.sandbox.oas_image", description=__doc__.splitlines()[0]
    )
    parser.add_argument("command", choices=("build", "path"))
    parser.add_argument("--python", default=SANDBOX_PYTHON, help="sandbox interpreter (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.command == "path":
        sys.stdout.write(f"{env_dir(args.python)}\n")
        return 0
    started = time.perf_counter()
    try:
        path = build(args.python)
    except SandboxError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    size = sum(os.lstat(os.path.join(top, f)).st_size for top, _, files in os.walk(path) for f in files)
    took = time.perf_counter() - started
    sys.stdout.write(f"OAS sandbox libraries ready at {path} ({took:.1f} s, {size / 1e6:.0f} MB)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
