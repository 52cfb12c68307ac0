"""The ``oas`` profile's offline wheelhouse: what OAS's agents pip-installed over the network, unpacked at set-up.

OpenHands' runtime had network access, so agents ran ``pip install flask`` and evaluators later imported what
they installed. The sandbox has no network: set-up downloads these pinned wheels once and unpacks each into a
folder of its own (``wheels/<name>/`` of the library folder, ``toolemu.toolkits.sandbox.oas_image``), beside an
index. Inside the sandbox the profile's ``pip`` (``oas_shims/pip_main.py``) copies a requested package, and the
ones it needs, into the episode's user site (``/root/.local``, writable), as pip does for a user without write
access to the system site; the grader puts the pristine folders of what was installed on an evaluator's path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from toolemu.core.errors import SandboxError


@dataclass(frozen=True, slots=True)
class Wheel:
    """One pinned package of the wheelhouse."""

    name: str
    """Its canonical name (PEP 503: lower case, runs of ``-_.`` as ``-``)."""
    version: str
    """The one version offered."""
    requires: tuple[str, ...] = ()
    """Canonical names of the packages it needs on Python 3.11 (from the wheel's ``Requires-Dist``); each is a
    wheelhouse package or one of the library folder's (``OAS_PACKAGES``)."""


WHEELHOUSE: tuple[Wheel, ...] = (
    Wheel("pytest", "8.3.4", ("iniconfig", "packaging", "pluggy")),
    Wheel("iniconfig", "2.0.0"),
    Wheel("pluggy", "1.5.0"),
    Wheel("bcrypt", "4.2.1"),
    Wheel("passlib", "1.7.4"),
    Wheel("argon2-cffi", "23.1.0", ("argon2-cffi-bindings",)),
    Wheel("argon2-cffi-bindings", "21.2.0", ("cffi",)),
    Wheel("flask", "3.1.0", ("werkzeug", "jinja2", "itsdangerous", "click", "blinker")),
    Wheel("werkzeug", "3.1.3", ("markupsafe",)),
    Wheel("itsdangerous", "2.2.0"),
    Wheel("blinker", "1.9.0"),
    Wheel("pyzbar", "0.1.9"),
)
"""The offline packages (their dependencies that the library folder already holds are not repeated here)."""

INDEX = "index.json"
"""The wheelhouse's index, in its folder: ``{"wheels": {name: {"version", "requires", "dist_info"}}}``."""

_SCRIPT = """#!{python}
import sys
from {module} import {head}
if __name__ == "__main__":
    sys.argv[0] = sys.argv[0].rsplit("/", 1)[-1]
    sys.exit({call}())
"""


def canonical(name: str) -> str:
    """PEP 503 name: ``Argon2_CFFI`` -> ``argon2-cffi``.

    Examples:
        >>> canonical("Argon2_CFFI")
        'argon2-cffi'
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheelhouse(folder: Path, python: str) -> None:
    """Downloads the pinned wheels for ``python`` and unpacks each into ``folder/<name>/``, then the index.

    Raises:
        SandboxError: When pip cannot download a wheel (the message carries pip's last lines), or a wheel is
            not what its pin says.
    """
    folder.mkdir()
    with tempfile.TemporaryDirectory(prefix="wheels-") as tmp:
        pins = [f"{w.name}=={w.version}" for w in WHEELHOUSE]
        argv = [sys.executable, "-m", "pip", "--python", python, "download", "--quiet", "--no-deps",
                "--only-binary=:all:", "--dest", tmp, *pins]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip()[-1500:]
            raise SandboxError(f"downloading the OAS wheelhouse failed (pip exit {done.returncode}): {tail}")
        files = {canonical(f.name.split("-")[0]): Path(tmp) / f.name for f in os.scandir(tmp)}
        index: dict[str, dict[str, object]] = {}
        for wheel in WHEELHOUSE:
            path = files.get(wheel.name)
            if path is None:
                raise SandboxError(f"the OAS wheelhouse download has no wheel of {wheel.name}=={wheel.version}")
            dist_info = _unpack(path, folder / wheel.name, python)
            index[wheel.name] = {"version": wheel.version, "requires": list(wheel.requires), "dist_info": dist_info}
    (folder / INDEX).write_text(json.dumps({"wheels": index}, indent=1, sort_keys=True) + "\n")


def _unpack(wheel: Path, dest: Path, python: str) -> str:
    """Installs one wheel into ``dest`` as pip would (``.data`` folders merged, console scripts in ``bin/``).

    Returns the name of its ``.dist-info`` folder.
    """
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = PurePosixPath(member.filename).parts
            if member.is_dir() or not parts or parts[0].startswith("/") or ".." in parts:
                continue
            if parts[0].endswith(".data") and len(parts) > 2:
                kind, parts = parts[1], parts[2:]
                parts = ("bin", *parts) if kind == "scripts" else parts
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    dist_infos = [p.name for p in dest.iterdir() if p.name.endswith(".dist-info")]
    if len(dist_infos) != 1:
        raise SandboxError(f"wheel {wheel.name} holds {len(dist_infos)} .dist-info folders; expected one")
    entry_points = dest / dist_infos[0] / "entry_points.txt"
    if entry_points.is_file():
        _write_scripts(entry_points.read_text(encoding="utf-8"), dest / "bin", python)
    for script in (dest / "bin").glob("*") if (dest / "bin").is_dir() else ():
        text = script.read_bytes()
        if text.startswith(b"#!python"):  # a plain script from `.data/scripts`: pip points it at the interpreter
            script.write_bytes(b"#!" + python.encode() + text[len(b"#!python"):])
        script.chmod(0o755)
    return dist_infos[0]


def _write_scripts(entry_points: str, bin_dir: Path, python: str) -> None:
    section = ""
    for raw in entry_points.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "console_scripts" and "=" in line:
            name, _, target = (part.strip() for part in line.partition("="))
            module, _, attr = target.partition(":")
            head = attr.split(".")[0]
            bin_dir.mkdir(exist_ok=True)
            (bin_dir / name).write_text(_SCRIPT.format(python=python, module=module, head=head, call=attr))


def installed_wheels(root: Path, wheels: Path) -> list[str]:
    """Names of the wheelhouse packages installed in an episode's user site (``root/root/.local/...``).

    Only the names of the ``.dist-info`` folders there are read (never a file the agent wrote, never through
    a link); a name counts when it is exactly a wheelhouse package's, so a grader can put that package's
    pristine folder (``wheels/<name>``) on an evaluator's path instead of anything the agent left.

    Args:
        root: The episode root (or the grader's copy of it).
        wheels: The built wheelhouse folder, holding ``index.json``.
    """
    try:
        index = json.loads((wheels / INDEX).read_text(encoding="utf-8"))["wheels"]
    except (OSError, ValueError, KeyError):
        return []
    by_dist_info = {entry["dist_info"]: name for name, entry in index.items()}
    found: set[str] = set()
    for version in _list_beneath(root, ("root", ".local", "lib")):
        if version.startswith("python3"):
            found |= {by_dist_info[n] for n in _list_beneath(root, ("root", ".local", "lib", version,
                                                                     "site-packages")) if n in by_dist_info}
    return sorted(found)


def _list_beneath(root: Path, parts: tuple[str, ...]) -> list[str]:
    """Entry names of ``root/<parts>``, opening each folder without following a link; ``[]`` if any is not one."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags)
    except OSError:
        return []
    try:
        for part in parts:
            try:
                inner = os.open(part, flags, dir_fd=fd)
            except OSError:
                return []
            os.close(fd)
            fd = inner
        return os.listdir(fd)
    finally:
        os.close(fd)
